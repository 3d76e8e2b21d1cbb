package shape

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// BenchmarkRun measures evaluating compiled result expressions against an
// adapter's output, as every call of a tool with a result block does.
func BenchmarkRun(b *testing.B) {
	env := map[string]any{
		"args": map[string]any{"q": "go", "limit": 10.0},
		"body": map[string]any{
			"login": "gopher",
			"items": []any{
				map[string]any{"name": "a", "stars": 10.0, "private": false},
				map[string]any{"name": "b", "stars": 3.0, "private": true},
				map[string]any{"name": "c", "stars": 7.0, "private": false},
			},
		},
		"status": 200.0,
	}
	for _, bm := range []struct{ name, src string }{
		{"field", `body.login`},
		{"object", `{login: body.login, count: len(body.items), q: args.q}`},
		{"filter-map", `map(filter(body.items, !.private), .stars * 2)`},
		{"error-when", `status >= 400 || body.login == ""`},
	} {
		e, diags := hclsyntax.ParseExpression([]byte(`"`+escape(bm.src)+`"`), "bench.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		p, diags := Compile(&hcl.Attribute{Name: "structured", Expr: e}, []string{"body", "status"}, []string{"q", "limit"})
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Run(env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func escape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
