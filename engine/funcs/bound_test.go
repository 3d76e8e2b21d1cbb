package funcs

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// The functions whose output is a product of their arguments' sizes fail
// with an error naming the limit before they build it, whatever the
// arguments a client sends; ordinary calls are untouched.
func TestBoundedFunctions(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	list := make([]cty.Value, 100)
	for i := range list {
		list[i] = cty.StringVal("a")
	}
	ectx := &hcl.EvalContext{
		Functions: Table(t.TempDir()),
		Variables: map[string]cty.Value{"args": cty.ObjectVal(map[string]cty.Value{
			"big": cty.StringVal(big), "width": cty.NumberIntVal(1 << 40), "list": cty.ListVal(list),
			"fmt": cty.StringVal(strings.Repeat("%1000000d", 100)),
		})},
	}
	tests := []struct{ expr, want, err string }{
		{expr: `format("%${args.width}s", "")`, err: "format would build 1024.0 GiB"},
		{expr: `format("%.${args.width}f", 1)`, err: "MaxBuiltBytes"},
		{expr: `format(args.fmt, ` + strings.TrimSuffix(strings.Repeat("1, ", 100), ", ") + `)`, err: "MaxBuiltBytes"},
		{expr: `join(args.big, args.list)`, err: "join would build 100.0 MiB"},
		{expr: `replace(args.big, "", args.big)`, err: "replace would build 1024.0 GiB"},
		{expr: `regex_replace(args.big, "", args.big)`, err: "regex_replace would build"},
		{expr: `regex_replace(args.big, "x", "$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0")`, err: "MaxBuiltBytes"},
		{expr: `format("%5s|%-4d|%.2f", "ab", 7, 3.14159)`, want: "   ab|7   |3.14"},
		{expr: `join("-", ["a", "b"], ["c"])`, want: "a-b-c"},
		{expr: `replace("a.b.c", ".", "::")`, want: "a::b::c"},
		{expr: `regex_replace("a1b22", "[0-9]+", "<$0>")`, want: "a<1>b<22>"},
		{expr: `strlen(replace(args.big, "x", "yy"))`, want: "2097152"},
	}
	for _, tt := range tests {
		e, diags := hclsyntax.ParseExpression([]byte(tt.expr), "t.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		v, diags := e.Value(ectx)
		if tt.err != "" {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.err) {
				t.Errorf("%s: %v, want an error containing %q", tt.expr, diags, tt.err)
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("%s: %v", tt.expr, diags)
			continue
		}
		got := ""
		if v.Type() == cty.Number {
			got = v.AsBigFloat().Text('f', -1)
		} else {
			got = v.AsString()
		}
		if got != tt.want {
			t.Errorf("%s = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
