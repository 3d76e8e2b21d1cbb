package event

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// complete is a CallToolResult with resultType "complete", as serve's
// markCall makes them for 2026-07-28 requests.
func complete(r *mcp.CallToolResult) *mcp.CallToolResult {
	var out mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &out); err != nil {
		panic(err)
	}
	out.Content, out.StructuredContent, out.IsError = r.Content, r.StructuredContent, r.IsError
	return &out
}

// Size agrees with json.Marshal, byte for byte, for every kind of result:
// those the walk counts and those it hands to the encoder.
func TestSize(t *testing.T) {
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	tricky := "a\"b\\c\n\r\t\b\f\x01<>&é€😀\u2028\u2029\xff\xfe end"
	structured := map[string]any{
		"s": tricky, "n": 1.5, "big": 1e21, "small": 1e-7, "neg": -0.000001, "zero": 0.0, "int": 3, "i64": int64(-42),
		"num": json.Number("12.50"), "empty": json.Number(""), "t": true, "f": false, "nil": nil,
		"list": []any{1.0, "x", []any{}, map[string]any{}}, "obj": map[string]any{"k<": "v>"}, "<key&>": "v",
		"nilmap": map[string]any(nil), "nillist": []any(nil), "exp": 123456789e-30, "i32": int32(7),
	}
	for _, tc := range []struct {
		name string
		res  mcp.Result
	}{
		{"empty", &mcp.CallToolResult{}},
		{"no contents", &mcp.CallToolResult{Content: []mcp.Content{}}},
		{"text", &mcp.CallToolResult{Content: text("hello")}},
		{"tricky text", &mcp.CallToolResult{Content: text(tricky)}},
		{"empty text", &mcp.CallToolResult{Content: text("")}},
		{"tool error", &mcp.CallToolResult{IsError: true, Content: text("negative")}},
		{"structured", &mcp.CallToolResult{Content: text(`{"a":1}`), StructuredContent: structured}},
		{"nil structured map", &mcp.CallToolResult{Content: text("x"), StructuredContent: map[string]any(nil)}},
		{"media", &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "the chart:"},
			&mcp.ImageContent{Data: []byte("\x89PNG\r\n"), MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte{1, 2, 3, 4}, MIMEType: "audio/wav"},
			&mcp.ImageContent{MIMEType: "image/png"},
		}}},
		{"complete", complete(&mcp.CallToolResult{Content: text("hi")})},
		{"complete error", complete(&mcp.CallToolResult{IsError: true, Content: text("no"), StructuredContent: map[string]any{"a": []any{}}})},
		{"large", &mcp.CallToolResult{Content: text(strings.Repeat("row <1> & more\n", 10000))}},
		// Handed to the encoder.
		{"meta", &mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: text("x")}},
		{"annotated", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 0.5}}}}},
		{"link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "docs://a", Name: "a"}}}},
		{"embedded", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "docs://a", Text: "t"}}}}},
		{"other structured", &mcp.CallToolResult{Content: text("x"), StructuredContent: map[string]any{"l": []string{"a"}, "u": uint8(3)}}},
		{"prompt", &mcp.GetPromptResult{Description: "d", Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Plan <Rome>"}}}}},
		{"read", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "docs://readme", MIMEType: "text/plain", Text: "Read me."}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.res)
			if err != nil {
				t.Fatal(err)
			}
			_, isComplete := tc.res.(*mcp.CallToolResult)
			isComplete = isComplete && strings.Contains(string(want), `"resultType":"complete"`)
			if got := Size(tc.res, isComplete); got != len(want) {
				t.Errorf("Size = %d, json.Marshal gives %d bytes: %s", got, len(want), want)
			}
		})
	}
	// What does not encode has no size, as before.
	if n := Size(&mcp.CallToolResult{Content: text("x"), StructuredContent: map[string]any{"nan": math.NaN()}}, false); n != 0 {
		t.Errorf("a result that does not encode: %d", n)
	}
}

// The walk allocates nothing: counting the bytes of a result is not
// encoding it.
func TestSizeAllocs(t *testing.T) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x<", 500)}},
		StructuredContent: map[string]any{"rows": []any{map[string]any{"id": 1.0, "name": "a"}}, "row_count": 1.0}}
	if n := testing.AllocsPerRun(100, func() { Size(res, true) }); n != 0 {
		t.Errorf("Size allocates %v times per result", n)
	}
}

// BenchmarkSize compares counting a typical SQL tool result with encoding
// it, which is what the audit log did before.
func BenchmarkSize(b *testing.B) {
	rows := make([]any, 20)
	for i := range rows {
		rows[i] = map[string]any{"id": float64(i), "title": "The Left Hand of Darkness", "year": 1969.0}
	}
	st := map[string]any{"rows": rows, "row_count": 20.0}
	js, _ := json.Marshal(st)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(js)}}, StructuredContent: st}
	b.Run("count", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Size(res, false)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _ := json.Marshal(res)
			_ = len(out)
		}
	})
}
