package serve_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// staticConfig is bench/configs/static.hcl's static tool.
const staticConfig = `
tool "static" {
  description = "Returns a fixed text."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}
`

// BenchmarkHTTPCall is one tools/call of the static tool over a real HTTP
// connection, through the handler stack `mcpd serve --http` builds with its
// default limits (Host guard, drain counting, request limits, stream
// deadlines, flush deferral, metrics), in a 2025-11-25 session ("legacy") and
// as a stateless 2026-07-28 request ("modern"). "sdk" is the bare SDK
// serving the same tool with the same handler options, as bench/baseline
// does: the allocs/op between them is what mcpd adds per call.
// "mcpd/modern-sdk" is mcpd with --no-fast-path: the modern request through
// the SDK's handler rather than mcpd's stateless fast path (fastpath.go);
// "mcpd/legacy-sdk" with --no-legacy-fast-path, the session's call through
// the SDK's handler rather than fastlegacy.go. The client
// is a few lines over one keep-alive connection; its allocations are the
// same in every case.
func BenchmarkHTTPCall(b *testing.B) {
	cur := benchCurrent(b, staticConfig)
	// mcpd serve's defaults (cmd/mcpd/httpserver.go).
	opts := serve.HTTPOptions{
		SessionTimeout: 10 * time.Minute, MaxSessions: 1000, MaxInflight: 64, MaxBody: 4 << 20,
		MaxInflightBytes: 64 << 20, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
	}
	mcpdWith := func(opts serve.HTTPOptions) func() http.Handler {
		return func() http.Handler {
			m := telemetry.NewMetricsFor(buildinfo.Read("bench", ""))
			srv := serve.New(cur, serve.Options{Logger: quiet, Metrics: m, MaxInflight: 64, OutputBudget: 256 << 20})
			mux := http.NewServeMux()
			mux.Handle("/mcp", srv.HTTPHandler(opts))
			return m.HTTPMiddleware(mux)
		}
	}
	mcpdHandler := mcpdWith(opts)
	noFast := opts
	noFast.NoFastPath = true
	noLegacyFast := opts
	noLegacyFast.NoLegacyFastPath = true
	for _, bc := range []struct {
		name    string
		handler func() http.Handler
		modern  bool
	}{
		{"sdk/legacy", sdkHandler, false},
		{"mcpd/legacy", mcpdHandler, false},
		{"sdk/modern", sdkHandler, true},
		{"mcpd/modern", mcpdHandler, true},
		// --no-fast-path: the SDK serves the 2026-07-28 request.
		{"mcpd/modern-sdk", mcpdWith(noFast), true},
		// --no-legacy-fast-path: the SDK serves the session's call.
		{"mcpd/legacy-sdk", mcpdWith(noLegacyFast), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ts := benchServer(b, bc.handler())
			c := dialBench(b, ts.Listener.Addr().String(), bc.modern)
			defer c.nc.Close()
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"static","arguments":{}}}`
			if bc.modern {
				body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"static","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
			}
			req := c.request(body, "tools/call", "static")
			b.ReportAllocs()
			for b.Loop() {
				if out := c.roundTrip(req); !strings.Contains(out, "This is a static response.") {
					b.Fatalf("unexpected answer %q", out)
				}
			}
		})
	}
}

// benchCurrent is config (one tools.hcl, the fake adapter's tools) loaded
// as a served snapshot, closed when b ends.
func benchCurrent(b *testing.B, config string) *snapshot.Current {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	return loadDirs(b, newFake().registry(), dir)
}

// benchServer serves h over HTTP on a local port until b ends.
func benchServer(b *testing.B, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	return ts
}

// sdkHandler is bench/baseline's server: the static tool on the bare SDK,
// the two eras routed as mcpd routes them.
func sdkHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "baseline", Version: "1"}, &mcp.ServerOptions{PageSize: 1000})
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string", "maxLength": 64}}}
	srv.AddTool(&mcp.Tool{Name: "static", Description: "Returns a fixed text.", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "This is a static response."}}}, nil
	})
	get := func(*http.Request) *mcp.Server { return srv }
	legacy := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{SessionTimeout: 10 * time.Minute, DisableLocalhostProtection: true})
	modern := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true, PropagateRequestCancellation: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") != "" {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	})
}

type benchConn struct {
	b       *testing.B
	addr    string
	modern  bool
	session string
	nc      net.Conn
	br      *bufio.Reader
}

func dialBench(b *testing.B, addr string, modern bool) *benchConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	c := &benchConn{b: b, addr: addr, modern: modern, nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}
	if modern {
		return c
	}
	c.roundTrip(c.request(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacy+`","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, "initialize", ""))
	if c.session == "" {
		b.Fatal("no Mcp-Session-Id")
	}
	c.roundTrip(c.request(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notifications/initialized", ""))
	return c
}

func (c *benchConn) request(body, method, name string) []byte {
	h := "POST /mcp HTTP/1.1\r\nHost: " + c.addr + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
	if c.modern {
		h += "Mcp-Protocol-Version: " + modern + "\r\nMcp-Method: " + method + "\r\n"
		if name != "" {
			h += "Mcp-Name: " + name + "\r\n"
		}
	} else if c.session != "" {
		h += "Mcp-Protocol-Version: " + legacy + "\r\nMcp-Session-Id: " + c.session + "\r\n"
	}
	return []byte(h + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

func (c *benchConn) roundTrip(req []byte) string {
	if _, err := c.nc.Write(req); err != nil {
		c.b.Fatal(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode/100 != 2 {
		c.b.Fatalf("HTTP %d: %s %v", resp.StatusCode, out, err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		c.session = id
	}
	return string(out)
}
