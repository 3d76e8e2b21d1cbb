package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Options.Overlay replaces a file's contents (an editor's unsaved buffer)
// and leaves the other files of the directory as they are on disk.
func TestLoadOverlay(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")
	for name, src := range map[string]string{a: `tool "a" { description = "on disk" }`, b: `tool "b" { description = "b" }`} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	blocks := Blocks{}
	cfg, diags := LoadWith([]string{dir}, blocks, Options{Overlay: map[string][]byte{a: []byte(`tool "a" { description = "unsaved" }` + "\n" + `tool "b" { description = "dup" }`)}})
	if cfg == nil {
		t.Fatal(diags)
	}
	if got := string(cfg.Sources[a]); !strings.Contains(got, "unsaved") {
		t.Errorf("source of a.hcl = %q, want the overlay", got)
	}
	if cfg.Tools[0].Description != "unsaved" {
		t.Errorf("description = %q, want the overlay's", cfg.Tools[0].Description)
	}
	// The overlay is checked against the file on disk: b is declared twice.
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `Duplicate tool "b"`) {
		t.Errorf("diags = %v, want the duplicate tool b", diags)
	}
	// Without it, the disk.
	cfg, _ = LoadWith([]string{dir}, blocks, Options{})
	if cfg.Tools[0].Description != "on disk" {
		t.Errorf("description = %q without an overlay", cfg.Tools[0].Description)
	}
}
