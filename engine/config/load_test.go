package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
)

func writeFile(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tool(name string) string {
	return "tool \"" + name + "\" {\n  description = \"" + name + "\"\n}\n"
}

func toolNames(cfg *config.Config) []string {
	var out []string
	for _, t := range cfg.Tools {
		out = append(out, t.Name)
	}
	return out
}

func mustLoad(t *testing.T, paths ...string) *config.Config {
	t.Helper()
	cfg, diags := config.Load(paths, config.Blocks{})
	if diags.HasErrors() {
		t.Fatalf("Load(%v): %s", paths, diags.Error())
	}
	return cfg
}

// A directory contributes its *.hcl files in sorted order; hidden files,
// other extensions and subdirectories are not read.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.hcl"), tool("from_b"))
	writeFile(t, filepath.Join(dir, "a.hcl"), tool("from_a1")+tool("from_a2"))
	writeFile(t, filepath.Join(dir, "10.hcl"), tool("from_10"))
	writeFile(t, filepath.Join(dir, "2.hcl"), tool("from_2"))
	// None of these may be read: each would be a syntax error if it were.
	for _, name := range []string{".hidden.hcl", ".a.hcl.swp", "README.md", "b.hcl~", "tools.hcl.bak", "tools.HCL.txt"} {
		writeFile(t, filepath.Join(dir, name), "this is { not HCL")
	}
	writeFile(t, filepath.Join(dir, "sub.hcl", "nested.hcl"), tool("from_subdir"))
	writeFile(t, filepath.Join(dir, "sub", "nested.hcl"), tool("from_subdir2"))

	cfg := mustLoad(t, dir)
	wantFiles := []string{filepath.Join(dir, "10.hcl"), filepath.Join(dir, "2.hcl"), filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")}
	if !reflect.DeepEqual(cfg.Files, wantFiles) {
		t.Errorf("Files = %v, want %v", cfg.Files, wantFiles)
	}
	if got, want := toolNames(cfg), []string{"from_10", "from_2", "from_a1", "from_a2", "from_b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	for _, f := range wantFiles {
		if cfg.Sources[f] == nil {
			t.Errorf("no source kept for %s", f)
		}
	}
	for _, tl := range cfg.Tools {
		if tl.Dir != dir {
			t.Errorf("tool %s: Dir = %q, want %q", tl.Name, tl.Dir, dir)
		}
	}
}

// Paths are read in the order given; a file named twice is read once; a
// file named explicitly is read whatever its extension.
func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "conf", "a.hcl"), tool("a"))
	writeFile(t, filepath.Join(dir, "extra.conf"), tool("extra"))
	cfg := mustLoad(t, filepath.Join(dir, "extra.conf"), filepath.Join(dir, "conf"), filepath.Join(dir, "conf", "a.hcl"))
	if got, want := toolNames(cfg), []string{"extra", "a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if len(cfg.Files) != 2 {
		t.Errorf("Files = %v, want each file once", cfg.Files)
	}
}

// Kubernetes mounts a ConfigMap as symlinks into a hidden, timestamped
// directory: x.hcl -> ..data/x.hcl, ..data -> ..2026_01_01_00_00_00.1.
func TestLoadConfigMapSymlinks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "..2026_01_01_00_00_00.1", "x.hcl"), tool("from_configmap"))
	if err := os.Symlink("..2026_01_01_00_00_00.1", filepath.Join(dir, "..data")); err != nil {
		t.Skipf("symlinks not supported: %v", err)
	}
	if err := os.Symlink(filepath.Join("..data", "x.hcl"), filepath.Join(dir, "x.hcl")); err != nil {
		t.Fatal(err)
	}
	// A dangling link is not a config file.
	if err := os.Symlink(filepath.Join("..data", "gone.hcl"), filepath.Join(dir, "gone.hcl")); err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, dir)
	if got, want := toolNames(cfg), []string{"from_configmap"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools = %v, want %v (files %v)", got, want, cfg.Files)
	}
}

func TestLoadMissingPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.hcl")
	cfg, diags := config.Load([]string{missing}, config.Blocks{})
	if cfg != nil {
		t.Errorf("want a nil config when nothing could be read")
	}
	if !diags.HasErrors() || diags[0].Summary != "Cannot read config" || !strings.Contains(diags[0].Detail, missing) {
		t.Errorf("got %v", diags)
	}
}

func TestLoadEmptyDirectoryWarns(t *testing.T) {
	dir := t.TempDir()
	cfg, diags := config.Load([]string{dir}, config.Blocks{})
	if diags.HasErrors() || cfg == nil {
		t.Fatalf("an empty directory is not an error: %v", diags)
	}
	if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || diags[0].Summary != "Empty config directory" {
		t.Errorf("want one warning, got %v", diags)
	}
}

// Adapter-owned blocks are accepted only when registered, and belong to the
// adapter: the loader keeps their bodies for it.
func TestLoadAdapterBlocks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "t.hcl"), `
database "main" {
  dsn = "sqlite::memory:"
}

tool "q" {
  description = "Queries."
  sql {
    query = "select 1"
  }
}

tool "two" {
  description = "Two adapters."
  sql {
    query = "select 1"
  }
  http {
    url = "http://example.com"
  }
}
`)
	cfg, diags := config.Load([]string{dir}, config.Blocks{Adapters: []string{"http", "sql"}, Backends: []string{"database"}})
	if len(cfg.Backends) != 1 || cfg.Backends[0].Type != "database" || cfg.Backends[0].Name != "main" {
		t.Errorf("Backends = %+v", cfg.Backends)
	}
	if a := cfg.Tools[0].Adapter; a == nil || a.Type != "sql" {
		t.Errorf("tool q: Adapter = %+v", a)
	}
	var found bool
	for _, d := range diags {
		if d.Summary == "More than one adapter block" && config.Pos(*d.Subject) == filepath.Join(dir, "t.hcl")+":18:3" &&
			strings.Contains(d.Detail, "follows the sql block at "+filepath.Join(dir, "t.hcl")+":15:3") {
			found = true
		}
	}
	if !found {
		t.Errorf("want a diagnostic on the second adapter block; got %v", diags)
	}

	// Without the adapters registered, the same blocks are unknown.
	_, diags = config.Load([]string{dir}, config.Blocks{})
	var all []string
	for _, d := range diags {
		all = append(all, config.Pos(*d.Subject)+" "+d.Detail)
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{
		filepath.Join(dir, "t.hcl") + `:2:1 Blocks of type "database" are not expected here.`,
		filepath.Join(dir, "t.hcl") + `:8:3 Blocks of type "sql" are not expected here.`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in:\n%s", want, text)
		}
	}
}

func TestLoadDuplicateNames(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")
	writeFile(t, a, `prompt "p" {
  message {
    text = "x"
  }
}
resource "r" {
  uri  = "x://one"
  text = "1"
}
`)
	writeFile(t, b, `prompt "p" {
  message {
    text = "y"
  }
}
resource "r2" {
  uri  = "x://one"
  text = "2"
}
tool "t" {
  description = "t"
  param "x" {
    type = "string"
  }
  param "x" {
    type = "number"
  }
}
`)
	_, diags := config.Load([]string{dir}, config.Blocks{})
	want := map[string]string{
		`Duplicate prompt "p"`:             b + ":1:1 " + a + ":1:1",
		`Duplicate resource URI "x://one"`: b + ":7:10 " + a + ":7:10",
		`Duplicate param "x"`:              b + ":15:3 " + b + ":12:3",
	}
	for summary, places := range want {
		here, first, _ := strings.Cut(places, " ")
		found := false
		for _, d := range diags {
			if d.Summary == summary && config.Pos(*d.Subject) == here && strings.Contains(d.Detail, first) {
				found = true
			}
		}
		if !found {
			t.Errorf("want %s at %s naming %s; got:\n%v", summary, here, first, diags)
		}
	}
}

func TestWriteDiagnostics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.hcl")
	writeFile(t, path, "tool \"greet\" {\n  description = \"Says hello.\"\n  colour      = \"red\"\n}\n\ntool \"tabbed\" {\n\tdescription = \"x\"\n\tshape = 1\n}\n")
	cfg, diags := config.Load([]string{path, filepath.Join(dir, "missing.hcl")}, config.Blocks{})
	if cfg != nil {
		t.Fatalf("want nil config when a path is missing")
	}
	// The missing file has no position; load the good file alone for the
	// positioned ones, then add a subject-less error and a warning.
	cfg, diags2 := config.Load([]string{path}, config.Blocks{})
	diags = append(diags2, diags...)
	diags = append(diags, &hcl.Diagnostic{
		Severity: hcl.DiagWarning, Summary: "Something to know", Detail: "detail",
		Subject: &hcl.Range{Filename: path, Start: hcl.Pos{Line: 2, Column: 3}, End: hcl.Pos{Line: 3, Column: 1}},
	})
	var buf bytes.Buffer
	config.WriteDiagnostics(&buf, diags, cfg.Sources)
	want := path + `:3:3: error: Unsupported argument: An argument named "colour" is not expected here.
    3 |   colour      = "red"
      |   ^^^^^^
` + path + `:8:2: error: Unsupported argument: An argument named "shape" is not expected here.
    8 | ` + "\tshape = 1" + `
      | ` + "\t^^^^^" + `
error: Cannot read config: stat ` + filepath.Join(dir, "missing.hcl") + `: no such file or directory
` + path + `:2:3: warning: Something to know: detail
    2 |   description = "Says hello."
      |   ^
`
	if got := buf.String(); got != want {
		t.Errorf("WriteDiagnostics:\n--- got ---\n%s--- want ---\n%s", got, want)
	}

	// Without the source, only the first line of each diagnostic.
	buf.Reset()
	config.WriteDiagnostics(&buf, diags[:1], nil)
	if got, want := buf.String(), path+":3:3: error: Unsupported argument: An argument named \"colour\" is not expected here.\n"; got != want {
		t.Errorf("without sources:\n got %q\nwant %q", got, want)
	}
}

func TestMarshalDiagnostics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.hcl")
	writeFile(t, path, "tool \"bad name\" {\n  description = \"x\"\n}\n")
	_, diags := config.Load([]string{path}, config.Blocks{})
	diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "No position"})

	var got struct {
		Valid       bool                    `json:"valid"`
		Diagnostics []config.JSONDiagnostic `json:"diagnostics"`
	}
	out := config.MarshalDiagnostics(diags)
	if !bytes.HasSuffix(out, []byte("}\n")) {
		t.Errorf("want one JSON document ending in a newline: %q", out)
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := []config.JSONDiagnostic{
		{Severity: "error", Summary: "Invalid tool name", Detail: `"bad name" is not a valid tool name: use 1 to 128 of the characters A-Z a-z 0-9 _ . -`,
			File: path, Line: 1, Column: 6, EndLine: 1, EndColumn: 16},
		{Severity: "warning", Summary: "No position"},
	}
	if got.Valid || !reflect.DeepEqual(got.Diagnostics, want) {
		t.Errorf("got valid=%v %+v\nwant valid=false %+v", got.Valid, got.Diagnostics, want)
	}
	// The raw keys are part of the CLI's contract.
	for _, key := range []string{`"valid": false`, `"severity": "error"`, `"file": `, `"line": 1`, `"column": 6`, `"end_line": 1`, `"end_column": 16`} {
		if !bytes.Contains(out, []byte(key)) {
			t.Errorf("output lacks %s:\n%s", key, out)
		}
	}

	// No diagnostics: valid, with an empty list rather than null.
	out = config.MarshalDiagnostics(nil)
	if !bytes.Contains(out, []byte(`"valid": true`)) || !bytes.Contains(out, []byte(`"diagnostics": []`)) {
		t.Errorf("got %s", out)
	}
	// Warnings alone are still valid.
	out = config.MarshalDiagnostics(hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "w"}})
	if !bytes.Contains(out, []byte(`"valid": true`)) {
		t.Errorf("got %s", out)
	}
}

func TestPos(t *testing.T) {
	r := hcl.Range{Filename: "dir/f.hcl", Start: hcl.Pos{Line: 12, Column: 7, Byte: 200}, End: hcl.Pos{Line: 13, Column: 1}}
	if got := config.Pos(r); got != "dir/f.hcl:12:7" {
		t.Errorf("Pos = %q", got)
	}
}
