package funcs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func TestFunctions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin"), []byte{0xff, 0x00}, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPD_FUNCS_TEST", "secret-value")
	t.Setenv("MCPD_FUNCS_PLACEHOLDER", "${MCPD_FUNCS_PLACEHOLDER}")
	t.Setenv("MCPD_FUNCS_PLACEHOLDER_ENV", "${env:MCPD_FUNCS_PLACEHOLDER_ENV}")
	t.Setenv("MCPD_FUNCS_OTHER", "${SOMETHING_ELSE}")
	ectx := &hcl.EvalContext{Functions: Table(dir)}
	tests := []struct {
		expr, want, err string
	}{
		{expr: `env("MCPD_FUNCS_TEST")`, want: "secret-value"},
		{expr: `env("MCPD_FUNCS_UNSET_X", "fallback")`, want: "fallback"},
		{expr: `env("MCPD_FUNCS_UNSET_X")`, err: "environment variable MCPD_FUNCS_UNSET_X is not set"},
		// A host that passed its placeholder on instead of the value.
		{expr: `env("MCPD_FUNCS_PLACEHOLDER")`, err: `environment variable MCPD_FUNCS_PLACEHOLDER is "${MCPD_FUNCS_PLACEHOLDER}", a placeholder its host did not fill in`},
		{expr: `env("MCPD_FUNCS_PLACEHOLDER_ENV", "x")`, err: "a placeholder its host did not fill in"},
		{expr: `env("MCPD_FUNCS_OTHER")`, want: "${SOMETHING_ELSE}"},
		{expr: `file("note.txt")`, want: "hello"},
		{expr: `file("missing.txt")`, err: "no such file or directory"},
		{expr: `file("bin")`, err: "not valid UTF-8 text; use filebase64"},
		{expr: `filebase64("bin")`, want: "/wA="},
		{expr: `base64encode("hi")`, want: "aGk="},
		{expr: `base64decode("aGk=")`, want: "hi"},
		{expr: `base64decode("!!")`, err: "invalid base64"},
		{expr: `urlencode("a b&c")`, want: "a+b%26c"},
		{expr: `jsonencode({a = 1})`, want: `{"a":1}`},
		{expr: `upper(trimspace("  x "))`, want: "X"},
		{expr: `join(",", split(" ", "a b"))`, want: "a,b"},
		{expr: `tostring(12)`, want: "12"},
		{expr: `format("%05d", 42)`, want: "00042"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, diags := hclsyntax.ParseExpression([]byte(tt.expr), "t.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			v, diags := e.Value(ectx)
			if tt.err != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.err) {
					t.Fatalf("got %v, %v; want error %q", v, diags, tt.err)
				}
				if strings.Contains(diags.Error(), "secret-value") {
					t.Errorf("an error echoes an environment value: %v", diags)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if got := v.AsString(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	for _, tt := range []struct{ dir, p, want string }{
		{"/etc/mcpd", "x.sql", "/etc/mcpd/x.sql"},
		{"/etc/mcpd", "/abs/x.sql", "/abs/x.sql"},
		{"/etc/mcpd", "../x", "/etc/x"},
		{"", "x", "x"},
	} {
		if got := Resolve(tt.dir, tt.p); got != tt.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tt.dir, tt.p, got, tt.want)
		}
	}
}
