package mcpadapter_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayLegacyHTTPUpstream is one call through the gateway to
// mcpd as a 2025-11-25 HTTP upstream, by a client that can be asked (it
// declared elicitation) of a tool that asks nothing: whether it will ask
// is not known beforehand, so the call runs on a session of its own.
// Client, gateway and upstream share the process: the allocations are all
// three's.
func BenchmarkGatewayLegacyHTTPUpstream(b *testing.B) {
	up := serveConfig(b, `
tool "hello" {
  description = "Says hello."
  result {
    content "text" {
      text = "hello"
    }
  }
}
`)
	gw := serveConfig(b, fmt.Sprintf(`
mcp_server "up" {
  url              = %q
  protocol_version = "2025-11-25"
}

tool "hello" {
  description = "Says hello, from the upstream."
  mcp {
    server = "up"
  }
}
`, up))
	for _, version := range []string{modern, legacy} {
		b.Run("client="+version, func(b *testing.B) {
			ctx := context.Background()
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			var so *mcp.ClientSessionOptions
			if version == legacy {
				so = &mcp.ClientSessionOptions{ProtocolVersion: legacy}
			}
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw, MaxRetries: -1}, so)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "hello", Arguments: map[string]any{}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || textOf(res) != "hello" {
					b.Fatalf("hello: %v %q", err, textOf(res))
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
