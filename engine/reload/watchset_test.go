package reload

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A config directory's *_test.hcl files are tests, not config: a change to
// one must not reload the server.
func TestWatchSetIgnoresTestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"tools.hcl", "tools_test.hcl"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws := newWatchSet([]string{dir}, []string{filepath.Join(dir, "tools.hcl")}, nil)
	for name, want := range map[string]bool{
		"tools.hcl":      true,
		"new.hcl":        true,
		"tools_test.hcl": false,
		"new_test.hcl":   false,
	} {
		if got := ws.relevant(filepath.Join(dir, name)); got != want {
			t.Errorf("relevant(%s) = %v, want %v", name, got, want)
		}
	}
	if names := ws.names(); slices.Contains(names, filepath.Join(dir, "tools_test.hcl")) {
		t.Errorf("names() = %v: holds the test file", names)
	}
}
