package adapter_test

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// The per-call cost of HCL expressions: binding a call's arguments into an
// evaluation context, and evaluating the kinds of templates tools and
// adapters use (a content text, a URL path, a map of headers).

var benchScope = &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: map[string]string{
	"name": "string", "punct": "string", "id": "integer", "tags": "array", "opt": "string",
}}

var benchArgs = map[string]any{"name": "Ada", "punct": "!", "id": 42.0, "tags": []any{"a", "b"}}

func BenchmarkCallContext(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchScope.CallContext(benchArgs)
	}
}

func BenchmarkEvalTemplate(b *testing.B) {
	for _, bm := range []struct{ name, src string }{
		{"text", `"Hello, ${args.name}${args.punct}"`},
		{"path", `"/users/${args.id}/repos?tag=${join(",", args.tags)}"`},
		{"headers", `{ Accept = "application/json", X-Name = upper(args.name), X-Opt = args.opt }`},
		{"for", `"%{for i, t in args.tags}${i}=${t};%{endfor}"`},
	} {
		expr, diags := hclsyntax.ParseExpression([]byte(bm.src), "bench.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		if diags := benchScope.Check(expr); diags.HasErrors() { // as at load: arms for expressions
			b.Fatal(diags)
		}
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ectx := benchScope.CallContext(benchArgs)
				if _, err := adapter.Eval(expr, ectx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
