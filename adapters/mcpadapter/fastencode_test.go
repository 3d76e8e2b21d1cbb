package mcpadapter

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestEncodeCallMeta holds fastPath.encodeCall, which encodes a call's
// _meta once per kind of client, to encodeCall, which encodes it all
// with encoding/json: byte for byte, the first call and the next.
func TestEncodeCallMeta(t *testing.T) {
	f := &fastPath{info: &mcp.Implementation{Name: "mcpd", Version: "v1 <&>"}}
	capsA := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "roots": &mcp.RootCapabilities{ListChanged: true}}
	capsB := map[string]any{}
	for _, tc := range []struct {
		name    string
		caps    map[string]any
		version string
		tool    string
		args    any
		extra   func(*mcp.CallToolParams)
	}{
		{"plain", capsA, "2026-07-28", "static", map[string]any{"name": "bench"}, nil},
		{"again", capsA, "2026-07-28", "static", map[string]any{"name": "bench"}, nil},
		{"other caps", capsB, "2026-07-28", "static", map[string]any{}, nil},
		{"other version", capsB, "2026-12-01", "static", map[string]any{}, nil},
		{"escapes", capsA, "2026-07-28", "a<b>&\"c\u2028", map[string]any{"x": "<&>\n\u2028", "n": 1.5, "deep": []any{map[string]any{"z": nil}}}, nil},
		{"no arguments", capsA, "2026-07-28", "static", nil, nil},
		{"request state", capsA, "2026-07-28", "static", map[string]any{}, func(p *mcp.CallToolParams) { p.RequestState = "s" }},
		{"more meta", capsA, "2026-07-28", "static", map[string]any{}, func(p *mcp.CallToolParams) { p.Meta["x"] = 1 }},
	} {
		p := &mcp.CallToolParams{Meta: mcp.Meta{mcp.MetaKeyClientCapabilities: tc.caps}, Name: tc.tool, Arguments: tc.args}
		if tc.extra != nil {
			tc.extra(p)
		}
		q := *p
		q.Meta = mcp.Meta{}
		for k, v := range p.Meta {
			q.Meta[k] = v
		}
		q.Meta[mcp.MetaKeyProtocolVersion] = tc.version
		q.Meta[mcp.MetaKeyClientInfo] = f.info
		id := []byte("1099511627777")
		want, err := encodeCall(id, &q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.encodeCall(id, p, &q, tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}
