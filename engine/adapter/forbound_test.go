package adapter_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// For expressions build a product of the call's sizes; armed by Check they
// stop at the limit with an error naming it, before HCL allocates the
// product, and ordinary ones evaluate as before.
func TestForBound(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	many := make([]any, 1<<16)
	for i := range many {
		many[i] = "a"
	}
	thousand := make([]any, 1000)
	for i := range thousand {
		thousand[i] = int64(i)
	}
	ten := []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	for _, tc := range []struct {
		name, src string
		template  bool
		args      map[string]any
		want      string // the value (as a string); or
		wantErr   string
	}{
		{"template for ten", `%{for x in args.l}${x}-%{endfor}`, true, map[string]any{"l": ten}, "a-b-c-d-e-f-g-h-i-j-", ""},
		{"tuple for ten", `join(",", [for i, x in args.l : "${i}${x}" if x != "c"])`, false, map[string]any{"l": ten}, "0a,1b,3d,4e,5f,6g,7h,8i,9j", ""},
		{"object for ten", `jsonencode({for x in args.l : x => upper(x)...})`, false, map[string]any{"l": ten[:2]}, `{"a":["A"],"b":["B"]}`, ""},
		{"nested for, 3 of 1000 by 1000", `jsonencode([for a in args.n : length([for b in args.n : b]) if a < 3])`, false, map[string]any{"n": thousand}, "[1000,1000,1000]", ""},
		{"static for", `join(",", [for x in ["a", "b"] : upper(x)])`, false, nil, "A,B", ""},
		{"template for repeats a big string", `%{for x in args.l}${args.s}%{endfor}`, true, map[string]any{"l": many, "s": big}, "", "MaxForBytes"},
		{"tuple for of references", `jsonencode([for x in args.l : args.s])`, false, map[string]any{"l": many, "s": big}, "", "MaxForBytes"},
		{"nested for", `jsonencode([for a in args.l : [for b in args.l : args.s]])`, false, map[string]any{"l": many[:4096], "s": big[:100]}, "", "MaxForBytes"},
		{"nested for iterations", `length([for a in args.l : length([for b in args.l : 1])])`, false, map[string]any{"l": many[:2048]}, "", "MaxForIterations"},
		{"for behind a conditional and a function", `args.s == "" ? "" : join("", [for x in args.l : format("%s%s", args.s, x)])`, false, map[string]any{"l": many, "s": big[:1<<10]}, "", "MaxForBytes"},
		{"for inside a template interpolation", `[${join(",", [for x in args.l : "${args.s}"])}]`, true, map[string]any{"l": many, "s": big}, "", "MaxForBytes"},
		{"object for keys", `length({for i, x in args.l : "${args.s}${i}" => 1})`, false, map[string]any{"l": many, "s": big[:1<<10]}, "", "MaxForBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var expr hclsyntax.Expression
			var diags hcl.Diagnostics
			if tc.template {
				expr, diags = hclsyntax.ParseTemplate([]byte(tc.src), "t.hcl", hcl.InitialPos)
			} else {
				expr, diags = hclsyntax.ParseExpression([]byte(tc.src), "t.hcl", hcl.InitialPos)
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: map[string]string{"l": "array", "n": "array", "s": "string"}}
			if d := scope.Check(expr); d.HasErrors() {
				t.Fatal(d)
			}
			if d := scope.Check(expr); d.HasErrors() { // twice arms once
				t.Fatal(d)
			}
			ectx := scope.CallContext(tc.args)
			if tc.args == nil {
				ectx = scope.EvalContext() // as for a static attribute at load
			}
			got, err := adapter.EvalString(expr, ectx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one naming %s", err, tc.wantErr)
				}
				if strings.Count(err.Error(), tc.wantErr) != 1 { // nested fors report it once
					t.Errorf("error repeats: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
