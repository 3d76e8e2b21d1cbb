package config_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// FuzzLoad feeds arbitrary bytes to the loader as one config file. Neither
// loading nor compiling (schemas, expressions, templates) may panic, and a
// failed load must say why. It covers the whole of loader.Load, and is
// slow for it (the snapshot's packages make a large binary to trace);
// FuzzParseDecode explores the parse, decode and check stages fast.
//
// Seeds: the broken configs of engine/loader/testdata/broken, plus the corpus in
// testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	// Small seeds only: every input that finds new code is minimized, by
	// up to a minute of loads of shrinking copies, and with the 6 KB
	// conformance example among the seeds the fuzzer spent its whole run
	// minimizing mutations of it (FuzzParseDecode, whose executions are
	// cheap, still starts from it).
	var seeds []string
	broken, _ := filepath.Glob("../loader/testdata/broken/*.hcl")
	seeds = append(seeds, broken...)
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
		"tool \"t\" {\n  param \"p\" {\n    type = \"array\"\n    items = { type = \"string\", max_length = 1 }\n  }\n}\n",
		"tool \"t\" {\n  input_schema = jsonencode({ type = \"object\", properties = { a = { \"$ref\" = \"#/x\" } } })\n}\n",
		"tool \"t\" {\n  result {\n    text = \"args.x[\"\n  }\n}\n",
		"resource_template \"r\" {\n  uri_template = \"x://{a}{/b*}{?c,d}\"\n  text = args.a\n  completions = { a = [\"1\"] }\n}\n",
		"prompt \"p\" {\n  argument \"a\" {\n    completions = [1, 2]\n  }\n  message {\n    content \"resource\" {\n      uri = args.a\n      blob = \"@@\"\n    }\n  }\n}\n",
		"tool \"t\" {\n  progress {\n    steps = [0, 1]\n    interval = \"-1s\"\n  }\n}\n",
		"server {\n  name = env(\"MCPD_FUZZ_UNSET\")\n}\n",
		"tool \"t\" {\n  description = file(\"../../../../etc/hostname\")\n}\n",
	} {
		f.Add([]byte(s))
	}
	reg := adapter.NewRegistry()
	// One file per fuzzing process, rewritten for each input: a directory
	// made and removed per input cost more than the load.
	path := filepath.Join(f.TempDir(), "fuzz.hcl")
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		l := loader.Load([]string{path}, reg, nil, "fuzz")
		if l.Config == nil {
			t.Fatalf("a readable file must yield a config; diagnostics: %v", l.Diagnostics)
		}
		if l.Snapshot == nil && !l.Diagnostics.HasErrors() {
			t.Fatalf("no snapshot and no error")
		}
		if l.Snapshot != nil {
			if l.Diagnostics.HasErrors() {
				t.Fatalf("a snapshot despite errors: %v", l.Diagnostics)
			}
			l.Snapshot.Close()
		}
		// Printing diagnostics must not panic either, whatever their ranges.
		config.WriteDiagnostics(io.Discard, l.Diagnostics, l.Sources)
		config.MarshalDiagnostics(l.Diagnostics)
	})
}
