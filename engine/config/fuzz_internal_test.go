package config

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// FuzzParseDecode fuzzes the loader's own stages in memory: parsing in
// pieces, decoding the blocks and checking them. It is FuzzLoad without
// the file writes and without compiling a snapshot, whose packages (and
// their coverage counters) made FuzzLoad run a few executions a second.
// Besides not panicking:
//   - parsing in pieces gives the diagnostics a whole-file parse gives
//     (parseConfig's promise), here with pieces small enough to cut
//     between most blocks;
//   - a failed load says why;
//   - diagnostics print whatever their ranges.
func FuzzParseDecode(f *testing.F) {
	seeds, _ := filepath.Glob("../loader/testdata/broken/*.hcl")
	seeds = append(seeds, "../../examples/conformance/conformance.hcl", "../../tools.hcl")
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"tool \"t\" {\n",
		"tool \"t\" {\n  description = \"x\"\n}\n\n# c\ntool \"u\" {\n  description = <<EOT\n}\ntool \"v\" {\nEOT\n}\n",
		"tool \"t\" {\n  progress {}\n  log {}\n}\n",
		"a = 1\ntool \"t\" {\n}\na = 2\n",
	} {
		f.Add([]byte(s))
	}
	blocks := Blocks{Adapters: []string{"http", "shell", "sql"}, Backends: []string{"http_backend", "sql_backend"}}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "fuzz.hcl"
		body, diags := parseConfig(src, name, 64)
		_, whole := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		if diags.Error() != whole.Error() {
			t.Fatalf("parsed in pieces:\n%v\nwhole:\n%v", diags, whole)
		}
		cfg := &Config{Files: []string{name}, Sources: map[string][]byte{name: src}, UnsetEnvUnknown: true}
		if body != nil && !diags.HasErrors() {
			d := decodeFile(cfg, body, dir, blocks)
			diags = append(diags, d...)
		}
		diags = append(diags, checkUnique(cfg)...)
		for _, d := range diags {
			if d.Severity == hcl.DiagError && d.Summary == "" {
				t.Fatalf("an error without a summary: %#v", d)
			}
		}
		WriteDiagnostics(io.Discard, diags, cfg.Sources)
		MarshalDiagnostics(diags)
	})
}
