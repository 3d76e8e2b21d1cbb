package mcpadapter_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
)

// BenchmarkGatewayFloor measures, in one process, the CPU time per call
// (user + system, all goroutines: cpu-µs/op) of the static tool:
//
//   - direct: a plain net/http client's stateless 2026-07-28 POST to an mcpd
//     upstream (the upstream's fast path);
//   - sdk-client/VERSION: the go-sdk client's CallTool to the same upstream
//     in a session of that protocol version: the call a gateway makes for
//     each of its own (2026-07-28 to an upstream that speaks it);
//   - gateway: the plain client's POST to an mcpd gateway whose static is the
//     upstream's (HTTP both hops, the gateway's own fast path in front).
//
// sdk-client minus direct is what the SDK client costs above a plain POST;
// gateway minus direct is what the gateway adds (all three in one process,
// one call at a time: the CPU per call is higher than under concurrent
// load, the proportions are what matter). The target (a
// gateway adds at most 60 % of the upstream's CPU) needs gateway/direct
// at most 1.6 (docs/performance.md, "Gateway overhead").
func BenchmarkGatewayFloor(b *testing.B) {
	// mcpd serve's garbage collector policy (cmd/mcpd/gc.go), not the test
	// binary's: the SDK's per-message buffers make GOGC decide much of the
	// cost.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	// The upstream answers with JSON, not SSE, as bench/gateway-pair.sh's
	// does (--json-response): the cheaper answer for both sides.
	// The upstream serves the benchmark harness's own config (no backend:
	// a call costs the protocol and nothing else).
	static, err := os.ReadFile(filepath.Join("..", "..", "bench", "configs", "static.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	upstream := serveWatchedWith(b, string(static), nil, serve.HTTPOptions{JSONResponse: true}).url
	gw, err := os.ReadFile(filepath.Join("..", "..", "bench", "configs", "gateway.hcl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv("MCPD_BENCH_UPSTREAM", upstream+"/mcp")
	gateway := serveConfig(b, string(gw))

	b.Run("direct", func(b *testing.B) { benchPost(b, upstream) })
	for _, version := range []string{modern, legacy} {
		b.Run("sdk-client/"+version, func(b *testing.B) {
			c := mcp.NewClient(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
			ctx := context.Background()
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: upstream + "/mcp", MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			perCPU(b, func() {
				params := &mcp.CallToolParams{Name: "static", Arguments: map[string]any{"name": "bench"}}
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError || len(res.Content) != 1 {
					b.Fatalf("call: %v %+v", err, res)
				}
			})
		})
	}
	b.Run("gateway", func(b *testing.B) { benchPost(b, gateway) })
	// A 2025-11-25 client's session to the gateway (the gateway's serving
	// fast path of legacy sessions; the upstream hop is the same).
	b.Run("gateway-legacy", func(b *testing.B) { benchLegacyPost(b, gateway) })
}

// benchLegacyPost calls static in a 2025-11-25 session opened by plain
// POSTs, over one keep-alive connection.
func benchLegacyPost(b *testing.B, url string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	send := func(sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", legacy)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		return resp, string(out)
	}
	resp, out := send("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacy+`","capabilities":{},"clientInfo":{"name":"floor","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize: %s", out)
	}
	send(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"static","arguments":{"name":"bench"}}}`
	deadline := time.Now().Add(10 * time.Second)
	for { // the gateway's first listing of its upstream
		if _, out := send(sid, call); strings.Contains(out, "This is a static response.") {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("unexpected answer %q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	perCPU(b, func() {
		if _, out := send(sid, call); !strings.Contains(out, "This is a static response.") {
			b.Fatalf("unexpected answer %q", out)
		}
	})
}

// benchPost calls static by stateless POSTs over one keep-alive connection.
func benchPost(b *testing.B, url string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
	body := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"static","arguments":{"name":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	deadline := time.Now().Add(10 * time.Second)
	for { // the gateway's first listing of its upstream
		if out := post(b, client, url, body); strings.Contains(out, "This is a static response.") {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("unexpected answer %q", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	perCPU(b, func() {
		if out := post(b, client, url, body); !strings.Contains(out, "This is a static response.") {
			b.Fatalf("unexpected answer %q", out)
		}
	})
}

func post(b *testing.B, client *http.Client, url string, body []byte) string {
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modern)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "static")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	return string(out)
}

// perCPU runs call b.N times and reports the process's CPU time per call.
func perCPU(b *testing.B, call func()) {
	b.ReportAllocs()
	before := cpuTime(b)
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
