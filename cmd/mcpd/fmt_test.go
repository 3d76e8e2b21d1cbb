package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const unformatted = `tool "t" {
description = "A tool that is not formatted."
  result {
      text="'ok'"
  }
}
`

const formatted = `tool "t" {
  description = "A tool that is not formatted."
  result {
    text = "'ok'"
  }
}
`

func TestFmt(t *testing.T) {
	clearEnv(t)
	type file struct{ name, text string }
	tests := []struct {
		name       string
		files      []file
		args       []string // paths relative to the directory
		code       int
		listed     []string // files printed on stdout
		wantStderr string
		after      map[string]string // file → content expected afterwards
	}{
		{
			name: "check passes on formatted files", files: []file{{"a.hcl", formatted}},
			args: []string{"--check", "a.hcl"}, code: 0, after: map[string]string{"a.hcl": formatted},
		},
		{
			name: "check lists unformatted files and changes nothing", files: []file{{"a.hcl", formatted}, {"b.hcl", unformatted}},
			args: []string{"--check", "a.hcl", "b.hcl"}, code: 1, listed: []string{"b.hcl"},
			after: map[string]string{"b.hcl": unformatted},
		},
		{
			name: "rewrites in place", files: []file{{"b.hcl", unformatted}},
			args: []string{"b.hcl"}, code: 0, listed: []string{"b.hcl"}, after: map[string]string{"b.hcl": formatted},
		},
		{
			name:  "directories recurse over *.hcl, skipping hidden ones and other files",
			files: []file{{"x/a.hcl", unformatted}, {"x/sub/b.hcl", unformatted}, {"x/.git/c.hcl", unformatted}, {"x/notes.txt", unformatted}},
			args:  []string{"--check", "x"}, code: 1, listed: []string{"x/a.hcl", "x/sub/b.hcl"},
		},
		{
			name:  "walking skips testdata directories, broken files in them included",
			files: []file{{"x/a.hcl", formatted}, {"x/testdata/bad.hcl", "tool {\n"}, {"x/sub/testdata/u.hcl", unformatted}, {"x/.hidden/u.hcl", unformatted}},
			args:  []string{"--check", "x"}, code: 0,
		},
		{
			name:  "a file in testdata named explicitly is checked",
			files: []file{{"x/testdata/u.hcl", unformatted}},
			args:  []string{"--check", "x/testdata/u.hcl"}, code: 1, listed: []string{"x/testdata/u.hcl"},
		},
		{
			name:  "a testdata directory named explicitly is walked",
			files: []file{{"testdata/u.hcl", unformatted}},
			args:  []string{"--check", "testdata"}, code: 1, listed: []string{"testdata/u.hcl"},
		},
		{
			name: "a file that does not parse is reported and left alone", files: []file{{"bad.hcl", "tool \"t\" {\n  description = \n"}},
			args: []string{"bad.hcl"}, code: 1, wantStderr: "bad.hcl:", after: map[string]string{"bad.hcl": "tool \"t\" {\n  description = \n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(dir, f.name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Chdir(dir)
			r := runCLI(t, append([]string{"fmt"}, tc.args...)...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%+v", r.code, tc.code, r)
			}
			var listed []string
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if l != "" {
					listed = append(listed, filepath.ToSlash(l))
				}
			}
			if strings.Join(listed, ",") != strings.Join(tc.listed, ",") {
				t.Errorf("listed %q, want %q", listed, tc.listed)
			}
			if !strings.Contains(r.stderr, tc.wantStderr) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tc.wantStderr)
			}
			for name, want := range tc.after {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q (%v), want %q", name, got, err, want)
				}
			}
			// Formatting is idempotent: a second run finds nothing to do.
			if tc.code == 0 {
				if r := runCLI(t, append([]string{"fmt", "--check"}, tc.args[len(tc.args)-1])...); r.code != 0 || r.stdout != "" {
					t.Errorf("second run: %+v", r)
				}
			}
		})
	}
}

func TestFmtStdin(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		name, in string
		args     []string
		code     int
		out      string
	}{
		{"formats stdin to stdout", unformatted, []string{"-"}, 0, formatted},
		{"formatted input comes back unchanged", formatted, []string{"-"}, 0, formatted},
		{"check on stdin", unformatted, []string{"--check", "-"}, 1, "<stdin>\n"},
		{"syntax error", "tool {", []string{"-"}, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := runIO(append([]string{"fmt"}, tc.args...), strings.NewReader(tc.in), &out, &errOut)
			if code != tc.code || out.String() != tc.out {
				t.Errorf("exit %d, stdout %q (stderr %q); want %d, %q", code, out.String(), errOut.String(), tc.code, tc.out)
			}
		})
	}
}

// The repository's own configs are formatted, as CI checks.
func TestRepoConfigsFormatted(t *testing.T) {
	clearEnv(t)
	t.Chdir("../..")
	if r := runCLI(t, "fmt", "--check", "tools.hcl", "examples"); r.code != 0 {
		t.Errorf("not formatted (run mcpd fmt tools.hcl examples): %+v", r)
	}
}
