package loader_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// Diagnostics come out in file order (file, line, column), errors before
// warnings, whichever pass found them: here decoding (an unknown attribute, a bad tool name), the
// check across files (a duplicate), compiling (an undeclared param) and
// env() (an unset variable) each find one, in two files, and the passes
// ran in an order that jumped between the files.
func TestDiagnosticsInFileOrder(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.hcl")
	b := filepath.Join(dir, "b.hcl")
	write := func(path, src string) {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(a, `tool "dup" {
  description = "x"
  shell { command = ["echo", "${args.nope}"] }
}
tool "t2" {
  descriptoin = "x"
  shell { command = ["true"] }
}
`)
	write(b, `tool "dup" {
  description = env("MCPD_ORDER_TEST_UNSET")
  shell { command = ["true"] }
}
tool "bad name" {
  description = "x"
  shell { command = ["true"] }
}
`)
	os.Unsetenv("MCPD_ORDER_TEST_UNSET")
	l := loader.Load([]string{dir}, allAdapters(), nil, "test")
	if l.Snapshot != nil {
		l.Snapshot.Close()
	}
	// The two warnings, last, are the tools without a description.
	want := []string{a + ":3:33", a + ":6:3", b + ":1:1", b + ":2:17", b + ":5:6", a + ":5:6", b + ":1:6"}
	var got []string
	for _, d := range l.Diagnostics {
		got = append(got, config.Pos(*d.Subject))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("want diagnostics at %q in this order, got:\n%s", want, render(l.Diagnostics))
	}
}
