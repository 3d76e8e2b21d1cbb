package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Test files belong to the config they sit beside and are never part of it.
func TestTestFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"tools.hcl", "tools_test.hcl", "b_test.hcl", "a_test.hcl", ".swap_test.hcl", "other.hcl"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	tests := []struct {
		name  string
		paths []string
		want  []string
	}{
		{"directory: all its test files, sorted", []string{dir}, j("a_test.hcl", "b_test.hcl", "tools_test.hcl")},
		{"file: NAME_test.hcl beside it", j("tools.hcl"), j("tools_test.hcl")},
		{"file without a test file", j("other.hcl"), nil},
		{"a test file given itself is config", j("a_test.hcl"), nil},
		{"no duplicates", append([]string{dir}, j("tools.hcl")...), j("a_test.hcl", "b_test.hcl", "tools_test.hcl")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TestFiles(tc.paths); !slices.Equal(got, tc.want) {
				t.Fatalf("TestFiles = %v, want %v", got, tc.want)
			}
		})
	}
	files, _ := ExpandPaths([]string{dir})
	if !slices.Equal(files, j("other.hcl", "tools.hcl")) {
		t.Fatalf("ExpandPaths = %v: test files are not config", files)
	}
}
