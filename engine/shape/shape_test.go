package shape

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func attr(t *testing.T, name, src string) *hcl.Attribute {
	t.Helper()
	e, diags := hclsyntax.ParseExpression([]byte(src), "t.hcl", hcl.Pos{Line: 3, Column: 10, Byte: 0})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return &hcl.Attribute{Name: name, Expr: e}
}

func TestCompileAndRun(t *testing.T) {
	env := map[string]any{
		"args": map[string]any{"q": "go"},
		"body": map[string]any{"login": "gopher", "items": []any{map[string]any{"n": 1.0}, map[string]any{"n": 2.0}}},
	}
	tests := []struct {
		name, src string
		want      string // fmt of the value, or the run error fragment
		compile   string // compile error fragment
	}{
		{name: "field", src: `"body.login"`, want: "gopher"},
		{name: "args", src: `"args.q + '!'"`, want: "go!"},
		{name: "map builtin", src: `"sum(map(body.items, .n))"`, want: "3"},
		{name: "object", src: `"{who: body.login}"`, want: "map[who:gopher]"},
		{name: "unknown name", src: `"nope.x"`, compile: "unknown name nope (available: args, body)"},
		{name: "undeclared param", src: `"args.nope"`, compile: "unknown field nope"},
		{name: "syntax", src: `"body.login +"`, compile: "unexpected token EOF"},
		{name: "not a string", src: `body.login`, compile: "must be a string"},
		{name: "runtime type error", src: `"body + 1"`, want: "invalid operation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := Compile(attr(t, "structured", tt.src), []string{"body"}, []string{"q"})
			if tt.compile != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.compile) {
					t.Fatalf("compile diagnostics %v, want %q", diags, tt.compile)
				}
				if diags[0].Subject == nil || diags[0].Subject.Start.Line != 3 {
					t.Errorf("diagnostic not on the attribute's line: %v", diags[0].Subject)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			v, err := p.Run(env)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = strings.TrimSpace(strings.ReplaceAll(fmtValue(v), "\n", " "))
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func fmtValue(v any) string { return fmt.Sprint(v) }
