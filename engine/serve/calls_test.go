package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// callRecord is what a test keeps of an event Options.OnCall hears: the
// event is valid only during the call.
type callRecord struct {
	event.Detail
	Time     time.Time
	Kind     string
	Name     string
	Duration time.Duration
	Outcome  string
}

// callLog collects what Options.OnCall hears.
type callLog struct {
	mu   sync.Mutex
	recs []callRecord
}

func (c *callLog) add(ev *event.Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, callRecord{Detail: ev.Detail, Time: ev.Time, Kind: ev.Kind, Name: ev.Name, Duration: ev.Duration, Outcome: ev.Outcome})
}

func (c *callLog) all() []callRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]callRecord(nil), c.recs...)
}

// OnCall hears of every call, read and prompt once answered, over HTTP in
// both eras, with the verified caller, the client's self-given label from
// params._meta, and the outcome; lists are not calls.
func TestOnCall(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(testConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFake()
			defer f.releaseAll()
			l := loader.Load([]string{dir}, f.registry(), nil, "test")
			if l.Snapshot == nil {
				t.Fatalf("config does not load: %v", l.Diagnostics)
			}
			cur := &snapshot.Current{}
			cur.Swap(l.Snapshot)
			t.Cleanup(func() { cur.Load().Close() })
			log := &callLog{}
			srv := serve.New(cur, serve.Options{Logger: quiet, OnCall: log.add})

			p := &principal.Principal{Name: "ci-bot", Method: "api_key"}
			verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
				ti := p.TokenInfo()
				ti.Expiration = time.Now().Add(time.Hour)
				return ti, nil
			}
			ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(srv.HTTPHandler(serve.HTTPOptions{})))
			t.Cleanup(ts.Close)
			tr := &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: authtest.Bearer("key-1", nil)}}
			cs := connect(t, tr, version, nil)
			ctx := bounded(t)

			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			console := mcp.Meta{serve.ClientMetaKey: "console"}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: console, Name: "zeta_greet", Arguments: map[string]any{"name": "Ann"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mid_check", Arguments: map[string]any{"n": -1}}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
				t.Fatal("an unknown tool answered")
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://readme"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "trip", Arguments: map[string]string{"city": "Rome"}}); err != nil {
				t.Fatal(err)
			}

			cctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
				done <- err
			}()
			waitFor(t, f.started, "the slow call to start")
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}
			wait.Until(t, "the cancelled call's record", func() bool { return len(log.all()) == 6 })

			want := []callRecord{
				{Kind: "tool", Name: "zeta_greet", Detail: event.Detail{Client: "console"}, Outcome: "ok"},
				{Kind: "tool", Name: "mid_check", Outcome: "tool_error", Detail: event.Detail{Error: "negative"}},
				{Kind: "tool", Name: "no_such_tool", Outcome: "protocol_error"},
				{Kind: "resource", Name: "docs://readme", Outcome: "ok"},
				{Kind: "prompt", Name: "trip", Outcome: "ok"},
				{Kind: "tool", Name: "slow", Outcome: "cancelled"},
			}
			got := log.all()
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d: %+v", len(got), len(want), got)
			}
			for i, w := range want {
				g := got[i]
				if g.Kind != w.Kind || g.Name != w.Name || g.Client != w.Client || g.Outcome != w.Outcome {
					t.Errorf("record %d = %+v, want %+v", i, g, w)
				}
				if w.Error != "" && g.Error != w.Error {
					t.Errorf("record %d: error %q, want %q", i, g.Error, w.Error)
				}
				if w.Outcome == "protocol_error" && g.Error == "" {
					t.Errorf("record %d: a protocol error without its text", i)
				}
				if g.Principal != "ci-bot" || g.Transport != "http" || g.Time.IsZero() || g.Duration <= 0 {
					t.Errorf("record %d: principal %q transport %q time %v duration %v", i, g.Principal, g.Transport, g.Time, g.Duration)
				}
			}
		})
	}
}

// The size the audit log records of a result, counted without encoding it,
// is that of the result's JSON encoding (what the audit log used to
// encode it for), in both eras: a 2026 result carries resultType.
func TestResultBytesCounted(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(testConfig), 0o644); err != nil {
				t.Fatal(err)
			}
			f := newFake()
			defer f.releaseAll()
			l := loader.Load([]string{dir}, f.registry(), nil, "test")
			if l.Snapshot == nil {
				t.Fatalf("config does not load: %v", l.Diagnostics)
			}
			cur := &snapshot.Current{}
			cur.Swap(l.Snapshot)
			t.Cleanup(func() { cur.Load().Close() })
			var mu sync.Mutex
			var checked []string
			onCall := func(ev *event.Call) {
				mu.Lock()
				defer mu.Unlock()
				want := 0
				if ev.Err == nil {
					b, err := json.Marshal(ev.Result)
					if err != nil {
						t.Errorf("%s: %v", ev.Name, err)
					}
					want = len(b)
				}
				if ev.ResultBytes != want {
					t.Errorf("%s %s: ResultBytes %d, the encoding has %d bytes", ev.Kind, ev.Name, ev.ResultBytes, want)
				}
				checked = append(checked, ev.Name)
			}
			al := audit.New(io.Discard, audit.Options{Logger: quiet})
			t.Cleanup(func() { al.Close(context.Background()) })
			srv := serve.New(cur, serve.Options{Logger: quiet, Audit: al, OnCall: onCall})
			ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{}))
			t.Cleanup(ts.Close)
			cs := connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, version, nil)
			ctx := bounded(t)
			for _, p := range []*mcp.CallToolParams{
				{Name: "zeta_greet", Arguments: map[string]any{"name": "<Ann> & co"}},
				{Name: "mid_check", Arguments: map[string]any{"n": 5}},
				{Name: "mid_check", Arguments: map[string]any{"n": -1}},
				{Name: "zeta_greet", Arguments: map[string]any{"name": 1}}, // invalid
				{Name: "no_such_tool"},
			} {
				_, _ = cs.CallTool(ctx, p)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://readme"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "trip", Arguments: map[string]string{"city": "Rome"}}); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(checked) != 7 {
				t.Errorf("checked %v, want 7 calls", checked)
			}
		})
	}
}
