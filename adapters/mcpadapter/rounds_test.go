package mcpadapter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/snapshot"
)

// An upstream's questions reach a 2026-07-28 client of the gateway as the
// gateway's own input_required rounds. These tests run real parts only:
// mcpd (engine/serve over httptest) as the gateway and as a 2026-07-28
// upstream, go-sdk servers as 2025-11-25 upstreams, and go-sdk clients
// speaking 2026-07-28 to the gateway.

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const (
	legacy = "2025-11-25"
	modern = "2026-07-28"
)

// serveConfig serves a config with engine/serve over HTTP and returns its
// URL; the registry has the mcp adapter only. Its reloader rebuilds the
// snapshot when an upstream's listing changes, as `mcpd serve` does, so
// that exposed tools and prompts are served once listed.
func serveConfig(t testing.TB, config string) string {
	t.Helper()
	url, _ := serveSnapshot(t, config)
	return url
}

// serveSnapshot is serveConfig, with the served snapshot.
func serveSnapshot(t testing.TB, config string) (string, *snapshot.Current) {
	t.Helper()
	w := serveWatched(t, config)
	return w.url, w.cur
}

// bounded is a liveness bound for one request, not a speed assertion.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a client session to url on the given protocol version.
// With manual, the client does not answer input_required itself
// (MultiRoundTrip disabled): the test retries by hand.
func connect(t *testing.T, url, version string, opts *mcp.ClientOptions, manual bool) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return connectAs(t, url, version, "", opts)
}

func textOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// answering is a client's elicitation handler that records the questions
// and answers each with reply.
type answering struct {
	mu    sync.Mutex
	asked []string
	reply func(msg string) *mcp.ElicitResult
}

func (a *answering) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, req.Params.Message)
	a.mu.Unlock()
	return a.reply(req.Params.Message), nil
}

func (a *answering) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

func accept(content map[string]any) func(string) *mcp.ElicitResult {
	return func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "accept", Content: content} }
}

// upstreamMCPD is mcpd as a 2026-07-28 upstream: its tool asks its client
// (the gateway) for a name by an ask block, i.e. by input_required.
const upstreamMCPD = `
tool "greet" {
  description = "Greets the user by name."
  param "greeting" {
    type    = "string"
    default = "Hello"
  }
  ask "user_name" {
    elicit = "What is your name?"
    field "name" { type = "string" }
  }
  result {
    content "text" {
      text = "${args.greeting}, ${inputs.user_name.name}!"
    }
  }
}
`

// gatewayConfig puts the upstream at url behind mcpd: greet as it is, and
// greet_confirmed behind mcpd's own confirmation and ask block.
func gatewayConfig(url, version, extra string) string {
	return fmt.Sprintf(`
server {
  request_state_key = "0123456789abcdef0123456789abcdef"
}

mcp_server "up" {
  url              = %q
  protocol_version = %q
}

tool "greet" {
  description = "Greets the user (the upstream asks for the name)."
  param "greeting" {
    type    = "string"
    default = "Hello"
  }
  mcp {
    server = "up"
  }
}

tool "greet_confirmed" {
  description = "As greet, confirmed and with a greeting asked by mcpd first."
  confirm     = "Greet someone?"
  ask "how" {
    elicit = "Which greeting?"
    field "greeting" { type = "string" }
  }
  mcp {
    server    = "up"
    tool      = "greet"
    arguments = { greeting = inputs.how.greeting }
  }
}
%s`, url, version, extra)
}

// callManual calls a tool without the client's own retry loop.
func callManual(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(bounded(t), params)
}

func TestRoundsModernUpstream(t *testing.T) {
	up := serveConfig(t, upstreamMCPD)
	gw := serveConfig(t, gatewayConfig(up, modern, ""))

	t.Run("answered", func(t *testing.T) {
		a := &answering{reply: accept(map[string]any{"name": "Grace"})}
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
		if err != nil || res.IsError || textOf(res) != "Hello, Grace!" {
			t.Fatalf("greet: %v %v %q", err, res != nil && res.IsError, textOf(res))
		}
		if q := a.questions(); len(q) != 1 || q[0] != "What is your name?" {
			t.Errorf("the client was asked %q", q)
		}
	})

	t.Run("the upstream's keys and a sealed state", func(t *testing.T) {
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		res, err := callManual(t, cs, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("greet: %v, want input_required", err)
		}
		q, ok := res.InputRequests["user_name"].(*mcp.ElicitParams)
		if !ok || len(res.InputRequests) != 1 || q.Message != "What is your name?" {
			t.Fatalf("input requests: %#v", res.InputRequests)
		}
		// The upstream's state is inside mcpd's, signed: any change is refused.
		tampered := res.RequestState[:len(res.RequestState)-2] + "xy"
		if strings.HasSuffix(res.RequestState, "xy") {
			tampered = res.RequestState[:len(res.RequestState)-2] + "zz"
		}
		answer := mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}
		_, err = callManual(t, cs, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}, InputResponses: answer, RequestState: tampered})
		if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "requestState") {
			t.Errorf("tampered state: %v", err)
		}
		// Minted for other arguments: refused.
		_, err = callManual(t, cs, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"greeting": "Hi"}, InputResponses: answer, RequestState: res.RequestState})
		if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "another call") {
			t.Errorf("foreign state: %v", err)
		}
		// The upstream's own requestState, handed in bare: refused.
		_, err = callManual(t, cs, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}, InputResponses: answer, RequestState: "bare-upstream-state"})
		if rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("bare state: %v", err)
		}
		res, err = callManual(t, cs, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}, InputResponses: answer, RequestState: res.RequestState})
		if err != nil || res.IsError || textOf(res) != "Hello, Ada!" {
			t.Fatalf("retry: %v %q", err, textOf(res))
		}
	})

	t.Run("another replica answers the retry", func(t *testing.T) {
		other := serveConfig(t, gatewayConfig(up, modern, ""))
		first := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		res, err := callManual(t, first, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("greet: %v", err)
		}
		second := connect(t, other, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		answer := mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Linus"}}}
		res, err = callManual(t, second, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}, InputResponses: answer, RequestState: res.RequestState})
		if err != nil || textOf(res) != "Hello, Linus!" {
			t.Fatalf("retry on the other replica: %v %q", err, textOf(res))
		}
	})

	t.Run("declined", func(t *testing.T) {
		a := &answering{reply: func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }}
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
		if err != nil || !strings.Contains(textOf(res), "declined") {
			t.Fatalf("greet declined: %v %q", err, textOf(res))
		}
	})

	t.Run("missing capability refused", func(t *testing.T) {
		// The client's capabilities go with the call: the upstream refuses
		// with -32021 (it would have to ask), and so does mcpd, as it does
		// for its own ask blocks.
		cs := connect(t, gw, modern, nil, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(rpcErr.Message, "did not declare") {
			t.Fatalf("greet without elicitation: %v %q, want the -32021 error", err, textOf(res))
		}
		if !strings.Contains(string(rpcErr.Data), `"elicitation"`) {
			t.Fatalf("-32021 data %s does not name elicitation", rpcErr.Data)
		}
	})

	t.Run("mcpd's asks first, then the upstream's", func(t *testing.T) {
		a := &answering{reply: func(msg string) *mcp.ElicitResult {
			switch msg {
			case "Greet someone?":
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}
			case "Which greeting?":
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"greeting": "Howdy"}}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Barbara"}}
		}}
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet_confirmed", Arguments: map[string]any{}})
		if err != nil || res.IsError || textOf(res) != "Howdy, Barbara!" {
			t.Fatalf("greet_confirmed: %v %q", err, textOf(res))
		}
		q := a.questions()
		if len(q) != 3 || q[2] != "What is your name?" {
			t.Errorf("questions in order: %q", q)
		}
	})
}

func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// legacyUpstream is a go-sdk server on the 2025-11-25 protocol whose tools
// ask their client mid-call (session.Elicit): whoami asks for a name and
// answers "TAG: NAME"; what the Elicit call returned as an error is sent
// to failed.
func legacyUpstream(t *testing.T, failed chan<- string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy-up", Version: "1"}, nil)
	type in struct {
		Tag string `json:"tag"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Asks the user's name."}, func(ctx context.Context, req *mcp.CallToolRequest, args in) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
			Message:         "Name for " + args.Tag + "?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		})
		if err != nil {
			if failed != nil {
				failed <- err.Error()
			}
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil, nil
		}
		if res.Action != "accept" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Tag + ": " + res.Action}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %v", args.Tag, res.Content["name"])}}}, nil, nil
	})
	// sample_roots asks twice in one call: the client's model, then its
	// roots.
	mcp.AddTool(s, &mcp.Tool{Name: "sample_roots", Description: "Samples, then lists roots."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		msg, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		text := msg.Content.(*mcp.TextContent).Text
		for _, r := range roots.Roots {
			text += " " + r.URI
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	// block runs until it is cancelled, and says so on failed.
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Blocks."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		if failed != nil {
			failed <- "block: " + ctx.Err().Error()
		}
		return nil, nil, ctx.Err()
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// legacyGateway puts whoami of the legacy upstream at url behind mcpd,
// twice: whoami, and whoami_brief, whose upstream block holds a call for
// a short answer_timeout only.
func legacyGateway(url string) string {
	return fmt.Sprintf(`
server {
  request_state_key = "0123456789abcdef0123456789abcdef"
}

mcp_server "legacy" {
  url              = %[1]q
  protocol_version = "2025-11-25"
}

mcp_server "legacy_brief" {
  url              = %[1]q
  protocol_version = "2025-11-25"
  answer_timeout   = "300ms"
}

tool "whoami" {
  description = "Asks the user's name (the upstream elicits mid-call)."
  param "tag" { type = "string" }
  mcp {
    server = "legacy"
  }
}

tool "whoami_brief" {
  description = "As whoami, held for a short time only."
  param "tag" { type = "string" }
  mcp {
    server = "legacy_brief"
    tool   = "whoami"
  }
}

tool "sample_roots" {
  description = "Samples the client's model, then lists its roots (two questions in one call)."
  mcp {
    server = "legacy"
  }
}

tool "block" {
  description = "Runs until cancelled; mcpd's timeout ends it."
  timeout     = "300ms"
  mcp {
    server = "legacy"
  }
}

tool "whoami_confirmed" {
  description = "As whoami, confirmed by mcpd first."
  confirm     = "Ask for a name?"
  param "tag" { type = "string" }
  mcp {
    server = "legacy"
    tool   = "whoami"
  }
}
`, url)
}

func answerName(name string) mcp.InputResponseMap {
	return mcp.InputResponseMap{"upstream": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}}
}

func TestRoundsLegacyUpstream(t *testing.T) {
	failed := make(chan string, 10)
	up := legacyUpstream(t, failed)
	gw := serveConfig(t, legacyGateway(up))
	args := func(tag string) map[string]any { return map[string]any{"tag": tag} }

	t.Run("answered", func(t *testing.T) {
		a := &answering{reply: accept(map[string]any{"name": "Grace"})}
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami", Arguments: args("one")})
		if err != nil || res.IsError || textOf(res) != "one: Grace" {
			t.Fatalf("whoami: %v %q", err, textOf(res))
		}
		if q := a.questions(); len(q) != 1 || q[0] != "Name for one?" {
			t.Errorf("the client was asked %q", q)
		}
	})

	t.Run("sampling, then roots, in one call", func(t *testing.T) {
		c := mcp.NewClient(&mcp.Implementation{Name: "rounds-test", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
			},
		})
		c.AddRoots(&mcp.Root{URI: "file:///work/project", Name: "project"})
		cs, err := c.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: gw, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != modern {
			t.Fatalf("negotiated %s", v)
		}
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "sample_roots", Arguments: map[string]any{}})
		if err != nil || res.IsError || textOf(res) != "hi file:///work/project" {
			t.Fatalf("sample_roots: %v %q", err, textOf(res))
		}
	})

	t.Run("declined", func(t *testing.T) {
		a := &answering{reply: func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }}
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami", Arguments: args("two")})
		if err != nil || res.IsError || textOf(res) != "two: decline" {
			t.Fatalf("whoami declined: %v %q", err, textOf(res))
		}
	})

	t.Run("missing capability refused", func(t *testing.T) {
		cs := connect(t, gw, modern, nil, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami", Arguments: args("three")})
		want := "mcpd cannot relay elicitation/create from upstream legacy: the calling client did not declare the elicitation capability"
		if err != nil || !res.IsError || !strings.Contains(textOf(res), want) {
			t.Fatalf("whoami without elicitation: %v %q, want %q", err, textOf(res), want)
		}
		if got := <-failed; !strings.Contains(got, want) {
			t.Errorf("the upstream's request failed with %q", got)
		}
	})

	t.Run("mcpd's confirmation first, then the upstream's question", func(t *testing.T) {
		a := &answering{reply: func(msg string) *mcp.ElicitResult {
			if msg == "Ask for a name?" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Edsger"}}
		}}
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami_confirmed", Arguments: args("four")})
		if err != nil || res.IsError || textOf(res) != "four: Edsger" {
			t.Fatalf("whoami_confirmed: %v %q", err, textOf(res))
		}
		if q := a.questions(); len(q) != 2 || q[0] != "Ask for a name?" || q[1] != "Name for four?" {
			t.Errorf("questions in order: %q", q)
		}
	})

	t.Run("tampered and foreign requestState refused", func(t *testing.T) {
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		res, err := callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("five")})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("whoami: %v, want input_required", err)
		}
		if q, ok := res.InputRequests["upstream"].(*mcp.ElicitParams); !ok || q.Message != "Name for five?" {
			t.Fatalf("input requests: %#v", res.InputRequests)
		}
		tampered := "x" + res.RequestState[1:]
		if res.RequestState[0] == 'x' {
			tampered = "y" + res.RequestState[1:]
		}
		_, err = callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("five"), InputResponses: answerName("Mallory"), RequestState: tampered})
		if rpcCode(err) != jsonrpc.CodeInvalidParams {
			t.Errorf("tampered state: %v", err)
		}
		_, err = callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("six"), InputResponses: answerName("Mallory"), RequestState: res.RequestState})
		if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "another call") {
			t.Errorf("foreign state: %v", err)
		}
		// The held call still waits for its own answer.
		res, err = callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("five"), InputResponses: answerName("Ada"), RequestState: res.RequestState})
		if err != nil || textOf(res) != "five: Ada" {
			t.Fatalf("retry: %v %q", err, textOf(res))
		}
	})

	t.Run("two calls in flight get their own answers", func(t *testing.T) {
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		first, err := callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("alpha")})
		if err != nil || !first.NeedsInput() {
			t.Fatalf("alpha: %v", err)
		}
		// alpha's upstream call waits for its answer: beta's question can
		// only be beta's.
		second, err := callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("beta")})
		if err != nil || !second.NeedsInput() {
			t.Fatalf("beta: %v", err)
		}
		if q := second.InputRequests["upstream"].(*mcp.ElicitParams); q.Message != "Name for beta?" {
			t.Errorf("beta was asked %q", q.Message)
		}
		res, err := callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("beta"), InputResponses: answerName("Bob"), RequestState: second.RequestState})
		if err != nil || textOf(res) != "beta: Bob" {
			t.Errorf("beta: %v %q", err, textOf(res))
		}
		res, err = callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("alpha"), InputResponses: answerName("Alice"), RequestState: first.RequestState})
		if err != nil || textOf(res) != "alpha: Alice" {
			t.Errorf("alpha: %v %q", err, textOf(res))
		}
	})

	t.Run("held call expired", func(t *testing.T) {
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		res, err := callManual(t, cs, &mcp.CallToolParams{Name: "whoami_brief", Arguments: args("late")})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("whoami_brief: %v", err)
		}
		select {
		case got := <-failed:
			if !strings.Contains(got, "did not answer within answer_timeout 300ms") {
				t.Errorf("the upstream's request failed with %q", got)
			}
		case <-bounded(t).Done():
			t.Fatal("the upstream's request did not end at answer_timeout")
		}
		res, err = callManual(t, cs, &mcp.CallToolParams{Name: "whoami_brief", Arguments: args("late"), InputResponses: answerName("Tardy"), RequestState: res.RequestState})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "upstream legacy_brief's tool whoami is no longer waiting for this answer") {
			t.Errorf("late retry: %v %q", err, textOf(res))
		}
	})

	t.Run("the request's end ends a call that is not held", func(t *testing.T) {
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, false)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "timed out") {
			t.Errorf("block: %v %q", err, textOf(res))
		}
		select {
		case got := <-failed:
			if got != "block: context canceled" {
				t.Errorf("the upstream's call ended with %q", got)
			}
		case <-bounded(t).Done():
			t.Fatal("the upstream's call was not cancelled")
		}
	})

	t.Run("the retry reaches another replica", func(t *testing.T) {
		other := serveConfig(t, legacyGateway(up))
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		res, err := callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("away")})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("whoami: %v", err)
		}
		there := connect(t, other, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		got, err := callManual(t, there, &mcp.CallToolParams{Name: "whoami", Arguments: args("away"), InputResponses: answerName("Nomad"), RequestState: res.RequestState})
		if err != nil || !got.IsError || !strings.Contains(textOf(got), "reached another instance") {
			t.Errorf("retry elsewhere: %v %q", err, textOf(got))
		}
		// The instance that holds it still takes the answer.
		got, err = callManual(t, cs, &mcp.CallToolParams{Name: "whoami", Arguments: args("away"), InputResponses: answerName("Homer"), RequestState: res.RequestState})
		if err != nil || textOf(got) != "away: Homer" {
			t.Errorf("retry here: %v %q", err, textOf(got))
		}
	})
}
