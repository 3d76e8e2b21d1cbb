package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The gateway's fast path (fastcall.go) against the SDK's client: the same
// calls through two gateways, one with fast_path = true (the default), one
// with fast_path = false, each in front of its own go-sdk upstream of the
// same tools; what mcpd's client receives, what the upstream receives (its
// headers and body, the JSON-RPC id aside) and the call event must be the
// same. Each upstream era, JSON answers and event streams, results, tool
// errors, protocol errors, an HTTP error, and streams the fast path hands
// over (a log record, an elicitation before the result), answers over the
// bounds (nested too deep, larger than max_output_bytes).

// recorded is one request an upstream received, canonical: its id
// replaced, and the headers that may differ between two sessions reduced
// to their presence.
type recorded struct {
	Method  string
	Headers map[string]string
	Body    string
	ID      int64 // as sent
}

type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

var envelopeID = regexp.MustCompile(`^\{"jsonrpc":"2.0","id":(\d+),`)

func (rec *recorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" || msg.Method == "notifications/cancelled" {
			h := map[string]string{}
			for _, k := range []string{"Content-Type", "Accept", "Accept-Encoding", "User-Agent", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "X-Api-Key"} {
				h[k] = r.Header.Get(k)
			}
			h["Mcp-Session-Id"] = strconv.FormatBool(r.Header.Get("Mcp-Session-Id") != "")
			var id int64
			canon := string(body)
			if m := envelopeID.FindStringSubmatch(canon); m != nil {
				id, _ = strconv.ParseInt(m[1], 10, 64)
				canon = envelopeID.ReplaceAllString(canon, `{"jsonrpc":"2.0","id":0,`)
			}
			rec.mu.Lock()
			rec.reqs = append(rec.reqs, recorded{Method: msg.Method, Headers: h, Body: canon, ID: id})
			rec.mu.Unlock()
		}
		if msg.Params.Name == "http500" {
			http.Error(w, "the upstream broke", http.StatusInternalServerError)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func (rec *recorder) take() []recorded {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.reqs
	rec.reqs = nil
	return out
}

// fastUpstream is a go-sdk server of the test's tools, in one era,
// answering with JSON or event streams, its requests recorded.
func fastUpstream(t *testing.T, version string, jsonResponse bool) (string, *recorder) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "fast-up", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	add := func(name string, h mcp.ToolHandler) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: schema}, h)
	}
	add("plain", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Name string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &mcp.CallToolResult{Content: text("hello <" + args.Name + "> \u00e9\u4e16 \"quoted\"\n")}, nil
	})
	add("twice", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: append(text("one"), text("two")...)}, nil
	})
	add("meta", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Meta: mcp.Meta{"io.example/server": map[string]any{"name": "up", "tags": []any{"a", true, nil}}}, Content: text("with _meta")}, nil
	})
	add("failing", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("it failed"), IsError: true}, nil
	})
	add("structured", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(`{"n":1.5}`), StructuredContent: map[string]any{"n": 1.5}}, nil
	})
	add("protoerr", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("the upstream refuses this")
	})
	add("logs", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: "a record before the result"})
		return &mcp.CallToolResult{Content: text("logged")}, nil
	})
	add("asks", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "which?", RequestedSchema: map[string]any{"type": "object"}})
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("asked: %v", err))}, nil
	})
	add("deep", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var v any = "bottom"
		for range 1200 {
			v = []any{v}
		}
		return &mcp.CallToolResult{Content: text("deep"), StructuredContent: map[string]any{"v": v}}, nil
	})
	add("big", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text(strings.Repeat("x", 2<<20))}, nil
	})
	add("http500", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: text("never")}, nil
	})
	rec := &recorder{}
	// block runs until its request is cancelled, and records that it was
	// (TestFastPathCancel); not in fastTools.
	add("block", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recorded{Method: "block ended: " + ctx.Err().Error()})
		rec.mu.Unlock()
		return nil, ctx.Err()
	})
	opts := &mcp.StreamableHTTPOptions{Stateless: version == modern, JSONResponse: jsonResponse}
	ts := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)))
	t.Cleanup(ts.Close)
	return ts.URL, rec
}

var fastTools = []string{"plain", "twice", "meta", "failing", "structured", "protoerr", "logs", "asks", "deep", "big", "http500"}

func fastGateway(url string, fast bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp_server \"up\" {\n  url = %q\n  start = \"load\"\n  fast_path = %v\n  headers = { X-Api-Key = \"k3y-of-the-upstream\" }\n}\n", url, fast)
	for _, name := range fastTools {
		fmt.Fprintf(&b, "tool %q {\n  description = \"x\"\n  param \"name\" {\n    type = \"string\"\n    required = false\n  }\n  mcp { server = \"up\" }\n}\n", name)
	}
	return b.String()
}

// callEvent is what the test compares of a call's event.
type callEvent struct {
	Outcome string
	Err     string
	Result  string
}

// serveEvents serves config as serveWatched does, and records its call
// events.
func serveEvents(t *testing.T, config string) (string, func() []callEvent) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := adapter.NewRegistry()
	reg.Register("mcp", mcpadapter.New(nil))
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	var mu sync.Mutex
	var events []callEvent
	srv := serve.New(cur, serve.Options{Logger: quiet, OnCall: func(c *event.Call) {
		if c.Kind != event.KindTool {
			return
		}
		e := callEvent{Outcome: c.Outcome}
		if c.Err != nil {
			e.Err = c.Err.Error()
		}
		if c.Result != nil {
			b, _ := json.Marshal(c.Result)
			e.Result = string(b)
		}
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	r := &reload.Reloader{Paths: []string{dir}, Registry: reg, Current: cur, Notifier: srv, Version: "test", Logger: quiet}
	r.Init(l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx, false) }()
	ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{}))
	t.Cleanup(func() {
		ts.Close()
		cancel()
		<-done
		cur.Load().Close()
	})
	return ts.URL, func() []callEvent {
		mu.Lock()
		defer mu.Unlock()
		out := events
		events = nil
		return out
	}
}

// outcome is what mcpd's client received.
func outcome(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(res)
	return string(b)
}

func TestFastPathDifferential(t *testing.T) {
	for _, upVersion := range []string{legacy, modern} {
		for _, jsonResponse := range []bool{true, false} {
			for _, clientVersion := range []string{legacy, modern} {
				if upVersion == legacy && clientVersion == modern {
					// A 2026-07-28 client of a 2025-11-25 upstream is held
					// (held.go): never the fast path.
					continue
				}
				name := fmt.Sprintf("upstream %s json=%v client %s", upVersion, jsonResponse, clientVersion)
				t.Run(name, func(t *testing.T) {
					testFastPathDifferential(t, upVersion, jsonResponse, clientVersion)
				})
			}
		}
	}
}

func testFastPathDifferential(t *testing.T, upVersion string, jsonResponse bool, clientVersion string) {
	type side struct {
		rec    *recorder
		events func() []callEvent
		cs     *mcp.ClientSession
	}
	sides := map[bool]*side{}
	for _, fast := range []bool{true, false} {
		upURL, rec := fastUpstream(t, upVersion, jsonResponse)
		gw, events := serveEvents(t, fastGateway(upURL+"/mcp", fast))
		// A client that declares nothing an upstream could ask: its calls
		// share the upstream's session (pool.go), as the fast path needs.
		cs := connect(t, gw, clientVersion, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}, true)
		waitFor(t, "the gateway's tools", func() bool {
			res, err := cs.ListTools(bounded(t), nil)
			return err == nil && len(res.Tools) == len(fastTools)
		})
		if fast {
			// The fast path takes a 2026-07-28 upstream's calls once it
			// has listed the session's tools.
			waitFor(t, "the fast path", func() bool {
				rec.take()
				_, _ = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "plain"})
				rs := rec.take()
				return len(rs) == 1 && rs[0].ID >= 1<<40
			})
		}
		sides[fast] = &side{rec: rec, events: events, cs: cs}
	}
	for _, tool := range fastTools {
		t.Run(tool, func(t *testing.T) {
			var got [2]string
			var ups [2][]recorded
			var evs [2][]callEvent
			for i, fast := range []bool{true, false} {
				s := sides[fast]
				s.rec.take()
				s.events()
				res, err := s.cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"name": "Zoë <&>"}})
				got[i] = outcome(res, err)
				ups[i] = s.rec.take()
				evs[i] = s.events()
			}
			if got[0] != got[1] {
				t.Errorf("the client received\nfast: %s\nSDK:  %s", got[0], got[1])
			}
			if len(evs[0]) != 1 || len(evs[1]) != 1 || evs[0][0] != evs[1][0] {
				t.Errorf("call events\nfast: %+v\nSDK:  %+v", evs[0], evs[1])
			}
			calls := func(rs []recorded) []recorded {
				var out []recorded
				for _, r := range rs {
					if r.Method == "tools/call" {
						out = append(out, r)
					}
				}
				return out
			}
			fastCalls, sdkCalls := calls(ups[0]), calls(ups[1])
			if len(fastCalls) != 1 || len(sdkCalls) != 1 {
				t.Fatalf("the upstream received %d calls through the fast path, %d through the SDK; want one each", len(fastCalls), len(sdkCalls))
			}
			// The fast path sent it (its ids start at 2^40), once.
			if fastCalls[0].ID < 1<<40 || sdkCalls[0].ID >= 1<<40 {
				t.Errorf("ids: fast path %d, SDK %d: the fast path did not send the call", fastCalls[0].ID, sdkCalls[0].ID)
			}
			f, s := fastCalls[0], sdkCalls[0]
			if f.Body != s.Body {
				t.Errorf("the upstream received\nfast: %s\nSDK:  %s", f.Body, s.Body)
			}
			for k, v := range s.Headers {
				if f.Headers[k] != v {
					t.Errorf("header %s: fast %q, SDK %q", k, f.Headers[k], v)
				}
			}
		})
	}
}

// A call mcpd gives up on (here: the tool's timeout) ends at a 2025-11-25
// upstream on the fast path as through the SDK's client: the session is
// told with notifications/cancelled naming the id the call went with, and
// the upstream's handler ends. (A stateless go-sdk upstream's handler does
// not end when its request is abandoned, through either client: the
// 2026-07-28 era is left out.)
func TestFastPathCancel(t *testing.T) {
	version := legacy
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("%s fast=%v", version, fast), func(t *testing.T) {
			upURL, rec := fastUpstream(t, version, false)
			config := fastGateway(upURL+"/mcp", fast) + "tool \"block\" {\n  description = \"x\"\n  timeout = \"1s\"\n  mcp { server = \"up\" }\n}\n"
			gw, _ := serveEvents(t, config)
			cs := connect(t, gw, version, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}, true)
			waitFor(t, "the gateway's tools", func() bool {
				res, err := cs.ListTools(bounded(t), nil)
				return err == nil && len(res.Tools) == len(fastTools)+1
			})
			// A 2025-11-25 upstream's calls take the fast path from the
			// first (plainTool).
			rec.take()
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "block"})
			if err != nil || !res.IsError {
				t.Fatalf("the call that timed out: %s, want a tool error", outcome(res, err))
			}
			var seen []recorded
			var callID int64
			waitFor(t, "the upstream to see the call end", func() bool {
				seen = append(seen, rec.take()...)
				ended, told := false, false
				for _, r := range seen {
					switch {
					case r.Method == "tools/call":
						callID = r.ID
					case strings.HasPrefix(r.Method, "block ended"):
						ended = true
					case r.Method == "notifications/cancelled":
						told = told || strings.Contains(r.Body, fmt.Sprintf(`"requestId":%d`, callID))
					}
				}
				return ended && told
			})
			if fast != (callID >= 1<<40) {
				t.Errorf("the call went with id %d; fast path %v", callID, fast)
			}
		})
	}
}
