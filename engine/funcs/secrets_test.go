package funcs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/redact"
)

// The recording table records what env(), file() and filebase64() read, and
// EvalSecretCalls reaches the calls that only run on a call (next to args).
func TestRecordSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("file-token-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert"), []byte("cert-bytes-456"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPD_SECRET_TEST", "env-secret-789")
	src := `
headers = { Authorization = "Bearer ${env("MCPD_SECRET_TEST")} ${args.x}" }
token   = file("token")
cert    = filebase64("cert")
base    = env("MCPD_UNSET_FOR_TEST", "https://default.example")
debug   = env("MCPD_SHORT_FOR_TEST", "1")
dynamic = file("${args.name}")
`
	f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var set redact.Set
	EvalSecretCalls(f.Body, &hcl.EvalContext{Functions: RecordingTable(dir, &set)})
	r := set.Redactor()
	for in, want := range map[string]string{
		"env-secret-789":          redact.Mark,
		"file-token-123":          redact.Mark, // without its newline
		"cert-bytes-456":          redact.Mark,
		"Y2VydC1ieXRlcy00NTY=":    redact.Mark,               // what filebase64 returned
		"https://default.example": "https://default.example", // a default is config, not a secret
	} {
		if got := r.String(in); got != want {
			t.Errorf("%q became %q, want %q", in, got, want)
		}
	}
	if n := set.Len(); n != 4 {
		t.Errorf("recorded %d values, want 4", n)
	}

	var none redact.Set
	EvalSecretCalls(f.Body, &hcl.EvalContext{Functions: Table(dir)})
	if none.Len() != 0 {
		t.Error("Table recorded secrets")
	}
}
