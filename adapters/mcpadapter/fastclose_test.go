package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// connKey is the context key of the upstream's connection in a request.
type connKey struct{}

// TestFastPathClosesItsConnections checks that the fast path's own
// connections to an upstream close when the upstream does (a reload that
// drops it, or mcpd stopping): its client keeps a pool of idle
// connections apart from the SDK's sessions, which nothing else closes.
func TestFastPathClosesItsConnections(t *testing.T) {
	for _, version := range []string{modern, legacy} {
		t.Run(version, func(t *testing.T) {
			// The upstream: a go-sdk server whose connections are followed,
			// each marked when it carried a fast-path call (an id from 2^40).
			srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
				})
			var mu sync.Mutex
			fast := map[net.Conn]bool{}   // connections that carried a fast-path call
			closed := map[net.Conn]bool{} // connections closed
			sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: version == modern, JSONResponse: true})
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if m := envelopeID.FindSubmatch(body); m != nil && len(m[1]) >= 13 { // 2^40 has 13 digits
					mu.Lock()
					fast[r.Context().Value(connKey{}).(net.Conn)] = true
					mu.Unlock()
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				sdk.ServeHTTP(w, r)
			}))
			ts.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
				return context.WithValue(ctx, connKey{}, c)
			}
			ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
				if s == http.StateClosed || s == http.StateHijacked {
					mu.Lock()
					closed[c] = true
					mu.Unlock()
				}
			}
			ts.Start()
			t.Cleanup(ts.Close)

			// The gateway, whose snapshot is closed (as a reload closes
			// the one it replaces) once a call went the fast way.
			dir := t.TempDir()
			config := fastGateway(ts.URL+"/mcp", true)
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
			gw := httptest.NewServer(serve.New(cur, serve.Options{Logger: quiet}).HTTPHandler(serve.HTTPOptions{}))
			t.Cleanup(gw.Close)
			cs := connect(t, gw.URL, version, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}, true)
			fastConns := func() []net.Conn {
				mu.Lock()
				defer mu.Unlock()
				var out []net.Conn
				for c := range fast {
					out = append(out, c)
				}
				return out
			}
			// A 2026-07-28 upstream's calls take the fast path once the
			// fast path listed its tools (in the background).
			wait.Until(t, "a call on the fast path", func() bool {
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "plain"})
				if err != nil || res.IsError {
					t.Fatalf("call: %s", outcome(res, err))
				}
				return len(fastConns()) > 0
			})
			cur.Load().Close()
			wait.Until(t, "the fast path's connections to close", func() bool {
				mu.Lock()
				defer mu.Unlock()
				for c := range fast {
					if !closed[c] {
						return false
					}
				}
				return true
			})
		})
	}
}
