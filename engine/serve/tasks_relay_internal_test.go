package serve

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientUsesTasks reads the extension from a request's _meta as decoded
// JSON, and otherwise as the SDK decodes the capabilities.
func TestClientUsesTasks(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta mcp.Meta
		want bool
	}{
		{"none", nil, false},
		{"json, declared", mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}, true},
		{"json, another extension", mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{"x": map[string]any{}}}}, false},
		{"json, no extensions", mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}}}, false},
		{"json, extensions not an object", mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": "x"}}, false},
	} {
		p := &mcp.CallToolParamsRaw{Name: "t"}
		p.SetMeta(tc.meta)
		if got := clientUsesTasks(&mcp.CallToolRequest{Params: p}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// What a call of an upstream tool pays to learn whether its client uses
// tasks, read from _meta as decoded JSON, against the SDK's decoding of
// the capabilities.
func BenchmarkClientUsesTasks(b *testing.B) {
	p := &mcp.CallToolParamsRaw{Name: "t"}
	p.SetMeta(mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}, "roots": map[string]any{}}})
	req := &mcp.CallToolRequest{Params: p}
	b.Run("meta", func(b *testing.B) {
		for b.Loop() {
			clientUsesTasks(req)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			declaresTasks(req.ClientCapabilities())
		}
	})
}
