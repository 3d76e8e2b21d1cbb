package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// The tools are declared out of alphabetical order: tools/list must keep
// declaration order.
const testConfig = `
server {
  name         = "serve-test"
  version      = "1.2.3"
  instructions = "Be nice."
}

tool "zeta_greet" {
  description = "Greets someone."
  param "name" {
    type = "string"
  }
  param "times" {
    type    = "integer"
    minimum = 1
    default = 1
  }
  result {
    content "text" {
      text = "Hello, ${args.name} x${args.times}"
    }
  }
}

tool "alpha_progress" {
  description = "Reports progress."
  progress {
    steps    = [0, 50, 100]
    total    = 100
    interval = "1ms"
    message  = "Working"
  }
  result {
    content "text" {
      text = "Progress complete"
    }
  }
}

tool "mid_check" {
  description = "Fails on negative numbers."
  param "n" {
    type = "integer"
  }
  result {
    error_when    = "args.n < 0"
    error_message = "'negative'"
    structured    = "{n: args.n}"
  }
}

tool "slow" {
  description = "Blocks until cancelled."
  fake {
    mode = "block"
  }
}

tool "fast" {
  description = "Echoes at once."
  param "id" {
    type = "string"
  }
  fake {
    mode = "echo"
  }
}

resource "readme" {
  uri       = "docs://readme"
  mime_type = "text/plain"
  text      = "Read me."
}

resource_template "user" {
  uri_template = "users://{id}/profile"
  mime_type    = "application/json"
  text         = jsonencode({ id = args.id })
  completions = {
    id = ["1", "10", "42"]
  }
}

prompt "trip" {
  description = "Plans a trip."
  argument "city" {
    required    = true
    completions = ["Paris", "Parma", "Rome"]
  }
  message {
    text = "Plan a trip to ${args.city}."
  }
}
`

var declaredTools = []string{"zeta_greet", "alpha_progress", "mid_check", "slow", "fast"}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type env struct {
	srv  *serve.Server
	cur  *snapshot.Current
	fake *fake
}

func newEnv(t testing.TB) *env { return newEnvConfig(t, testConfig) }

func newEnvConfig(t testing.TB, config string) *env {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	l := loader.Load([]string{dir}, f.registry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	return &env{srv: serve.New(cur, serve.Options{Logger: quiet, ListTTL: 5 * time.Second}), cur: cur, fake: f}
}

func (e *env) httpServer(t *testing.T, opts serve.HTTPOptions) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(e.srv.HTTPHandler(opts))
	t.Cleanup(ts.Close)
	return ts
}

// An era is one way of reaching the server: a transport and a protocol
// version.
type era struct {
	name    string
	version string // the protocol version the session must end up with
	connect func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession
}

const (
	legacy = "2025-11-25"
	modern = "2026-07-28"
)

// inMemory connects over an in-memory pipe, as a stdio client would.
func inMemory(version string) func(*testing.T, *env, *mcp.ClientOptions) *mcp.ClientSession {
	return func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		ct, st := mcp.NewInMemoryTransports()
		ss, err := e.srv.SDK().Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return connect(t, ct, version, opts)
	}
}

// overHTTP connects over Streamable HTTP to an httptest server, which
// answers plain requests with SSE streams or, with jsonResponse, with
// application/json.
func overHTTP(version string, jsonResponse bool) func(*testing.T, *env, *mcp.ClientOptions) *mcp.ClientSession {
	return func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		ts := e.httpServer(t, serve.HTTPOptions{JSONResponse: jsonResponse})
		return connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, version, opts)
	}
}

// connect starts a client session asking for version. The SDK client asks
// for its latest version (2026-07-28, through server/discover) unless told
// otherwise in ClientSessionOptions.ProtocolVersion.
func connect(t *testing.T, tr mcp.Transport, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-test-client", Version: "0.0.1"}, opts)
	var so *mcp.ClientSessionOptions
	if version == legacy {
		so = &mcp.ClientSessionOptions{ProtocolVersion: legacy}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, so)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}
	return cs
}

var eras = []era{
	{"stdio/" + legacy, legacy, inMemory(legacy)},
	{"stdio/" + modern, modern, inMemory(modern)},
	{"http/" + legacy, legacy, overHTTP(legacy, false)},
	{"http/" + modern, modern, overHTTP(modern, false)},
	{"http-json/" + legacy, legacy, overHTTP(legacy, true)},
	{"http-json/" + modern, modern, overHTTP(modern, true)},
}

// bounded is the context for one request: a liveness bound so that a bug
// fails the test instead of hanging it, not a speed assertion.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func rpcCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

func TestServe(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cs := era.connect(t, e, nil)

			t.Run("server info", func(t *testing.T) {
				ir := cs.InitializeResult()
				if ir.ServerInfo == nil || ir.ServerInfo.Name != "serve-test" || ir.ServerInfo.Version != "1.2.3" {
					t.Errorf("ServerInfo = %+v", ir.ServerInfo)
				}
				if ir.Instructions != "Be nice." {
					t.Errorf("Instructions = %q", ir.Instructions)
				}
				c := ir.Capabilities
				if c == nil || c.Tools == nil || !c.Tools.ListChanged || c.Prompts == nil || !c.Prompts.ListChanged ||
					c.Resources == nil || !c.Resources.ListChanged || c.Completions == nil {
					t.Errorf("Capabilities = %+v", c)
				}
			})

			t.Run("tools/list in declaration order", func(t *testing.T) {
				res, err := cs.ListTools(bounded(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
				}
				if !reflect.DeepEqual(names, declaredTools) {
					t.Errorf("tools = %v, want %v", names, declaredTools)
				}
				schema, _ := res.Tools[0].InputSchema.(map[string]any)
				if schema["type"] != "object" || schema["additionalProperties"] != false {
					t.Errorf("inputSchema = %v", res.Tools[0].InputSchema)
				}
				if res.Tools[0].Description != "Greets someone." {
					t.Errorf("description = %q", res.Tools[0].Description)
				}
			})

			t.Run("tools/call", func(t *testing.T) {
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "Ada", "times": 2}})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError || text(res) != "Hello, Ada x2" {
					t.Errorf("got isError=%v %q", res.IsError, text(res))
				}
				res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "mid_check", Arguments: map[string]any{"n": 4}})
				if err != nil {
					t.Fatal(err)
				}
				if res.IsError || !reflect.DeepEqual(res.StructuredContent, map[string]any{"n": float64(4)}) {
					t.Errorf("got isError=%v structured=%v", res.IsError, res.StructuredContent)
				}
				res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "mid_check", Arguments: map[string]any{"n": -1}})
				if err != nil {
					t.Fatal(err)
				}
				if !res.IsError || text(res) != "negative" {
					t.Errorf("got isError=%v %q", res.IsError, text(res))
				}
			})

			t.Run("bad arguments are a tool error naming the param", func(t *testing.T) {
				for _, tc := range []struct {
					args map[string]any
					want string
				}{
					{map[string]any{}, `invalid arguments for tool zeta_greet: missing required argument "name"`},
					{map[string]any{"name": "Ada", "times": 0}, `invalid arguments for tool zeta_greet: argument "times" must be at least 1, got 0`},
					{map[string]any{"name": 5}, `invalid arguments for tool zeta_greet: argument "name" must be a string, got integer 5`},
					{map[string]any{"name": "Ada", "tiems": 2}, `invalid arguments for tool zeta_greet: unknown argument "tiems" (did you mean "times"?); this tool takes "name", "times"`},
				} {
					res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: tc.args})
					if err != nil {
						t.Fatalf("%v: a protocol error instead of a tool error: %v", tc.args, err)
					}
					if !res.IsError || text(res) != tc.want {
						t.Errorf("%v: got isError=%v %q, want %q", tc.args, res.IsError, text(res), tc.want)
					}
				}
			})

			t.Run("unknown tool is -32602", func(t *testing.T) {
				_, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
				if code := rpcCode(err); code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), `unknown tool "nope"`) {
					t.Errorf("err = %v (code %d), want -32602 naming the tool", err, code)
				}
				// The hidden marker tool used for list_changed is not callable.
				_, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "mcpd.internal.list-changed", Arguments: map[string]any{}})
				if rpcCode(err) != jsonrpc.CodeInvalidParams {
					t.Errorf("marker tool: err = %v", err)
				}
			})

			t.Run("resources", func(t *testing.T) {
				list, err := cs.ListResources(bounded(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Resources) != 1 || list.Resources[0].URI != "docs://readme" {
					t.Errorf("resources = %+v", list.Resources)
				}
				tmpl, err := cs.ListResourceTemplates(bounded(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "users://{id}/profile" {
					t.Errorf("templates = %+v", tmpl.ResourceTemplates)
				}
				for uri, want := range map[string]string{"docs://readme": "Read me.", "users://42/profile": `{"id":"42"}`} {
					res, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: uri})
					if err != nil {
						t.Fatalf("%s: %v", uri, err)
					}
					if len(res.Contents) != 1 || res.Contents[0].Text != want || res.Contents[0].URI != uri {
						t.Errorf("%s: contents = %+v", uri, res.Contents)
					}
				}
				_, err = cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "docs://nope"})
				if code := rpcCode(err); code != mcp.CodeResourceNotFound {
					t.Errorf("unknown resource: err = %v (code %d), want %d", err, code, mcp.CodeResourceNotFound)
				}
			})

			t.Run("prompts", func(t *testing.T) {
				list, err := cs.ListPrompts(bounded(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Prompts) != 1 || list.Prompts[0].Name != "trip" {
					t.Errorf("prompts = %+v", list.Prompts)
				}
				res, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "trip", Arguments: map[string]string{"city": "Rome"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "Plan a trip to Rome." {
					t.Errorf("messages = %+v", res.Messages)
				}
				_, err = cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "trip"})
				if code := rpcCode(err); code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "missing required argument(s) city") {
					t.Errorf("missing argument: err = %v", err)
				}
				_, err = cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "nope"})
				if code := rpcCode(err); code != jsonrpc.CodeInvalidParams {
					t.Errorf("unknown prompt: err = %v", err)
				}
			})

			t.Run("completion", func(t *testing.T) {
				for _, tc := range []struct {
					ref  *mcp.CompleteReference
					arg  mcp.CompleteParamsArgument
					want []string
				}{
					{&mcp.CompleteReference{Type: "ref/prompt", Name: "trip"}, mcp.CompleteParamsArgument{Name: "city", Value: "pa"}, []string{"Paris", "Parma"}},
					{&mcp.CompleteReference{Type: "ref/resource", URI: "users://{id}/profile"}, mcp.CompleteParamsArgument{Name: "id", Value: "1"}, []string{"1", "10"}},
					{&mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, mcp.CompleteParamsArgument{Name: "city", Value: ""}, []string{}},
				} {
					res, err := cs.Complete(bounded(t), &mcp.CompleteParams{Ref: tc.ref, Argument: tc.arg})
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(res.Completion.Values, tc.want) {
						t.Errorf("%+v %+v: values = %v, want %v", tc.ref, tc.arg, res.Completion.Values, tc.want)
					}
				}
			})
		})
	}
}

func TestServeProgress(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			if era.name == "http-json/"+modern {
				// A stateless JSON response has nowhere to carry a
				// notification, and 2026 has no GET stream: with
				// --json-response, modern clients get no progress.
				t.Skip("known limitation: no progress for 2026-07-28 clients with JSONResponse")
			}
			t.Parallel()
			e := newEnv(t)
			var mu sync.Mutex
			type note struct {
				token    any
				p, total float64
				msg      string
			}
			var got []note
			cs := era.connect(t, e, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, note{req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message})
				},
			})
			params := &mcp.CallToolParams{Name: "alpha_progress", Arguments: map[string]any{}}
			params.SetProgressToken("tok-1")
			res, err := cs.CallTool(bounded(t), params)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || text(res) != "Progress complete" {
				t.Errorf("result: %q", text(res))
			}
			wait.Until(t, "three progress notifications", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) >= 3
			})
			mu.Lock()
			defer mu.Unlock()
			want := []note{{"tok-1", 0, 100, "Working"}, {"tok-1", 50, 100, "Working"}, {"tok-1", 100, 100, "Working"}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("progress = %+v, want %+v", got, want)
			}

			// Without a token, no progress is sent.
			got = nil
			mu.Unlock()
			if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "alpha_progress", Arguments: map[string]any{}}); err != nil {
				t.Fatal(err)
			}
			// A call after it flushes anything in flight on ordered
			// transports.
			if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{"id": "x"}}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			if len(got) != 0 {
				t.Errorf("progress sent without a token: %+v", got)
			}
		})
	}
}

// A client that gives up on a call cancels it on the server: the adapter's
// context ends. Meanwhile the server keeps serving other calls, and a slow
// call does not hold up a fast one.
func TestServeCancellationAndConcurrency(t *testing.T) {
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cs := era.connect(t, e, nil)
			defer e.fake.releaseAll()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			slowDone := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
				slowDone <- err
			}()
			waitFor(t, e.fake.started, "the slow call to start")

			// The fast call completes while the slow one is still running:
			// the slow one only ends when cancelled, below.
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{"id": "1"}})
			if err != nil {
				t.Fatalf("fast call behind a slow one: %v", err)
			}
			if res.IsError {
				t.Fatalf("fast call: %s", text(res))
			}
			select {
			case err := <-slowDone:
				t.Fatalf("the slow call ended before it was cancelled: %v", err)
			default:
			}

			cancel()
			select {
			case err := <-slowDone:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled call returned %v, want context.Canceled", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the client call did not return after cancel")
			}
			waitFor(t, e.fake.cancelled, "the server to cancel the adapter's context")

			// The session is still usable.
			res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "again"}})
			if err != nil || text(res) != "Hello, again x1" {
				t.Errorf("call after a cancellation: %v %v", res, err)
			}
		})
	}
}

func waitFor(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// After Notify, every connected client hears exactly one list_changed per
// kind that changed: a stdio (in-memory) client of either era, a legacy HTTP
// session (on its GET stream) and a modern HTTP client (on its
// subscriptions/listen stream).
func TestNotify(t *testing.T) {
	e := newEnv(t)
	type counts struct {
		mu                        sync.Mutex
		tools, prompts, resources int
	}
	clients := map[string]*counts{}
	for _, era := range eras {
		c := &counts{}
		clients[era.name] = c
		era.connect(t, e, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				c.mu.Lock()
				c.tools++
				c.mu.Unlock()
			},
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
				c.mu.Lock()
				c.prompts++
				c.mu.Unlock()
			},
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
				c.mu.Lock()
				c.resources++
				c.mu.Unlock()
			},
		})
	}
	get := func(c *counts) [3]int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return [3]int{c.tools, c.prompts, c.resources}
	}
	// Connecting must not have produced any notification: a window in
	// which none may arrive, so nothing to wait for.
	time.Sleep(100 * time.Millisecond)
	for name, c := range clients {
		if got := get(c); got != [3]int{} {
			t.Errorf("%s: notifications before Notify: %v", name, got)
		}
	}

	check := func(want [3]int) {
		t.Helper()
		for name, c := range clients {
			wait.Until(t, name+" to be notified", func() bool {
				got := get(c)
				return got[0] >= want[0] && got[1] >= want[1] && got[2] >= want[2]
			})
		}
		// Count over a settle window longer than the SDK's 10 ms debounce.
		time.Sleep(300 * time.Millisecond)
		for name, c := range clients {
			if got := get(c); got != want {
				t.Errorf("%s: (tools, prompts, resources) list_changed = %v, want %v", name, got, want)
			}
		}
	}
	e.srv.Notify(true, false, false)
	check([3]int{1, 0, 0})
	e.srv.Notify(false, true, true)
	check([3]int{1, 1, 1})
}

// A swapped snapshot is what the next request sees, on every transport.
func TestServeSwap(t *testing.T) {
	e := newEnv(t)
	sessions := map[string]*mcp.ClientSession{}
	for _, era := range eras {
		sessions[era.name] = era.connect(t, e, nil)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "t.hcl"), []byte("tool \"only\" {\n  description = \"The only one.\"\n  result {\n    text = \"'v2'\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := loader.Load([]string{dir}, e.fake.registry(), e.cur.Load(), "test")
	if l.Snapshot == nil {
		t.Fatal(l.Diagnostics)
	}
	e.cur.Swap(l.Snapshot)
	for name, cs := range sessions {
		res, err := cs.ListTools(bounded(t), nil)
		if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "only" {
			t.Errorf("%s: after swap: %v %v", name, res, err)
		}
		call, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "only", Arguments: map[string]any{}})
		if err != nil || text(call) != "v2" {
			t.Errorf("%s: call after swap: %v %v", name, call, err)
		}
		if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "x"}}); rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: removed tool still callable: %v", name, err)
		}
	}
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

const discoverBody = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// Requests from a foreign Origin or for a foreign Host are refused with 403
// before they reach the SDK, in both eras; loopback origins and the
// configured ones are accepted.
func TestOriginAndHostGuard(t *testing.T) {
	e := newEnv(t)
	def := e.httpServer(t, serve.HTTPOptions{})
	custom := e.httpServer(t, serve.HTTPOptions{
		AllowedOrigins: []string{"https://app.example.com"},
		AllowedHosts:   []string{"mcp.example.com"},
	})
	anyOrigin := e.httpServer(t, serve.HTTPOptions{AllowedOrigins: []string{"*"}})
	tests := []struct {
		name   string
		server *httptest.Server
		method string
		body   string
		host   string
		origin string
		want   int
	}{
		{"no origin", def, "POST", initializeBody, "", "", 200},
		{"evil origin", def, "POST", initializeBody, "", "http://evil.example.com", 403},
		{"evil origin, modern", def, "POST", discoverBody, "", "http://evil.example.com", 403},
		{"evil origin, GET", def, "GET", "", "", "http://evil.example.com", 403},
		{"evil host", def, "POST", initializeBody, "evil.example.com", "", 403},
		{"evil host with port", def, "POST", initializeBody, "evil.example.com:8080", "", 403},
		{"evil host, modern", def, "POST", discoverBody, "evil.example.com", "", 403},
		{"null origin", def, "POST", initializeBody, "", "null", 403},
		{"origin with another scheme", def, "POST", initializeBody, "", "file://localhost", 403},
		{"loopback origin localhost", def, "POST", initializeBody, "", "http://localhost:3000", 200},
		{"loopback origin 127.0.0.1", def, "POST", initializeBody, "", "http://127.0.0.1:6274", 200},
		{"loopback origin ::1", def, "POST", initializeBody, "", "http://[::1]:6274", 200},
		{"loopback origin, modern", def, "POST", discoverBody, "", "http://localhost:3000", 200},
		{"localhost host", def, "POST", initializeBody, "localhost", "", 200},
		{"allowed origin", custom, "POST", initializeBody, "", "https://app.example.com", 200},
		{"allowed origin with trailing slash", custom, "POST", initializeBody, "", "https://APP.example.com", 200},
		{"allowed origin, wrong scheme", custom, "POST", initializeBody, "", "http://app.example.com", 403},
		{"other origin on custom", custom, "POST", initializeBody, "", "https://other.example.com", 403},
		{"allowed host", custom, "POST", initializeBody, "mcp.example.com", "", 200},
		{"allowed host, origin on it", custom, "POST", initializeBody, "mcp.example.com", "https://mcp.example.com", 200},
		{"any origin", anyOrigin, "POST", initializeBody, "", "https://whatever.example.com", 200},
		{"any origin is not any host", anyOrigin, "POST", initializeBody, "evil.example.com", "", 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.server.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.method == "POST" {
				req.Header.Set("Content-Type", "application/json")
			}
			if tc.body == discoverBody {
				req.Header.Set("MCP-Protocol-Version", modern)
				req.Header.Set("Mcp-Method", "server/discover")
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := tc.server.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

// Lists are cut into pages of Options.PageSize; following nextCursor
// yields every item once, in declaration order. A cursor the server did not
// make is invalid params.
func TestServePagination(t *testing.T) {
	e := newEnv(t)
	e.srv = serve.New(e.cur, serve.Options{Logger: quiet, PageSize: 2})
	for _, era := range eras[:4] {
		t.Run(era.name, func(t *testing.T) {
			cs := era.connect(t, e, nil)
			var names []string
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > len(declaredTools) {
					t.Fatal("pagination does not end")
				}
				res, err := cs.ListTools(bounded(t), &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Tools) > 2 {
					t.Errorf("page of %d tools, want at most 2", len(res.Tools))
				}
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
				}
				if cursor = res.NextCursor; cursor == "" {
					break
				}
			}
			if !reflect.DeepEqual(names, declaredTools) {
				t.Errorf("tools over all pages = %v, want %v", names, declaredTools)
			}
			for _, bad := range []string{"not-base64!", "LTE" /* "-1" */, "eA" /* "x" */} {
				_, err := cs.ListTools(bounded(t), &mcp.ListToolsParams{Cursor: bad})
				if rpcCode(err) != jsonrpc.CodeInvalidParams {
					t.Errorf("cursor %q: err = %v, want invalid params", bad, err)
				}
			}
		})
	}
}

// On the wire, 2026-07-28 results carry resultType, and list and read
// results carry ttlMs (Options.ListTTL) and cacheScope; 2025-11-25 results
// carry no resultType.
func TestServeModernWire(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{JSONResponse: true})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(method, name, params string) map[string]any {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + params + `}}`
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", modern)
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var msg struct {
			Result map[string]any `json:"result"`
			Error  *jsonrpc.Error `json:"error"`
		}
		if err := json.Unmarshal(raw, &msg); err != nil || msg.Error != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", method, resp.StatusCode, raw)
		}
		return msg.Result
	}
	for _, tc := range []struct {
		method, name, params string
		keys                 map[string]any
	}{
		{"tools/list", "", meta, map[string]any{"resultType": "complete", "ttlMs": float64(5000), "cacheScope": "public"}},
		{"prompts/list", "", meta, map[string]any{"resultType": "complete", "ttlMs": float64(5000)}},
		{"resources/list", "", meta, map[string]any{"resultType": "complete", "ttlMs": float64(5000)}},
		{"resources/read", "docs://readme", meta + `,"uri":"docs://readme"`, map[string]any{"resultType": "complete", "ttlMs": float64(5000)}},
		{"tools/call", "zeta_greet", meta + `,"name":"zeta_greet","arguments":{"name":"wire"}`, map[string]any{"resultType": "complete"}},
		{"tools/call", "mid_check", meta + `,"name":"mid_check","arguments":{"n":-1}`, map[string]any{"resultType": "complete", "isError": true}},
		{"prompts/get", "trip", meta + `,"name":"trip","arguments":{"city":"Oslo"}`, map[string]any{"resultType": "complete"}},
	} {
		got := post(tc.method, tc.name, tc.params)
		for k, want := range tc.keys {
			if got[k] != want {
				t.Errorf("%s: %s = %v, want %v (result %v)", tc.method, k, got[k], want, got)
			}
		}
	}
	if res := post("tools/call", "zeta_greet", meta+`,"name":"zeta_greet","arguments":{"name":"wire"}`); !strings.Contains(asJSON(res["content"]), "Hello, wire x1") {
		t.Errorf("content = %v", res["content"])
	}
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
