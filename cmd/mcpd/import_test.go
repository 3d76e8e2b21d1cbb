package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportCommand runs mcpd import as a user would: the written
// configuration is formatted and validates, the report goes to stderr, an
// existing file is never overwritten.
func TestImportCommand(t *testing.T) {
	openapiDoc := filepath.Join("..", "..", "authoring", "importer", "openapi", "testdata", "petstore-3.1.yaml")
	toolboxDoc := filepath.Join("..", "..", "authoring", "importer", "toolbox", "testdata", "tools-v1.yaml")
	tests := []struct {
		name       string
		args       []string
		tools      int
		wantStderr []string
	}{
		{"openapi", []string{"import", "openapi", openapiDoc}, 8, []string{
			"(#/paths/~1pets~1{id}~1photo/post/requestBody): not converted: a request body of multipart/form-data",
			"7 parts not converted, 5 notes",
		}},
		{"openapi selected", []string{"import", "openapi", "--tags", "vet", openapiDoc, "--name", "pets"}, 1, []string{"$PETS_BASIC_USERNAME"}},
		{"toolbox", []string{"import", "toolbox", toolboxDoc}, 9, []string{
			"set $HOTELS_MYSQL_PASSWORD",
			"line 116 (tools.run-any-sql): not converted",
			"9 parts not converted, 5 notes",
		}},
	}
	// What the Toolbox config reads from the environment, so that validate
	// checks everything.
	for k, v := range map[string]string{
		"HOTELS_SQLITE": filepath.Join(t.TempDir(), "h.db"), "PG_DATABASE": "test", "PG_USER": "postgres",
		"BOOKING_URL": "https://booking.example.com", "BOOKING_API_AUTHORIZATION": "Bearer x", "GOOGLE_CLIENT_ID": "c",
		"HOTELS_MYSQL_PASSWORD": "p",
	} {
		t.Setenv(k, v)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			if code := run(append(tt.args, "-o", dir), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			out := filepath.Join(dir, "tools.hcl")
			if code := run([]string{"fmt", "--check", out}, &stdout, &stderr); code != 0 {
				t.Errorf("fmt --check: exit %d: %s", code, stdout.String())
			}
			stdout.Reset()
			if code := run([]string{"validate", "-c", out}, &stdout, &stderr); code != 0 {
				t.Errorf("validate: exit %d: %s", code, stderr.String())
			}
			if want := "(" + count(tt.tools, "tool") + ","; !strings.Contains(stdout.String(), want) {
				t.Errorf("validate says %q, want %s", stdout.String(), want)
			}
			// A second import does not overwrite the first.
			before, _ := os.ReadFile(out)
			stderr.Reset()
			if code := run(append(tt.args, "-o", dir), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "not overwriting") {
				t.Errorf("second import: exit %d: %s", code, stderr.String())
			}
			if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
				t.Error("the second import changed the file")
			}
		})
	}
}

func TestImportUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"import"}, {"import", "openapi"}, {"import", "openapi", "a", "b"}} {
		stderr.Reset()
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr.String())
		}
	}
	if code := run([]string{"import", "swagger", "x"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `unknown format "swagger"`) {
		t.Errorf("unknown format: exit %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"import", "openapi", "no-such-file.yaml"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "no-such-file.yaml") {
		t.Errorf("missing file: exit %d: %s", code, stderr.String())
	}
}

// TestImportPrunes: a tool the converter lets through but mcpd refuses is
// left out and reported; the rest is written.
func TestImportPrunes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "tools.yaml")
	os.WriteFile(src, []byte(`sources:
  db:
    kind: sqlite
    database: /tmp/x.db
tools:
  good:
    kind: sqlite-sql
    source: db
    description: A good tool.
    statement: SELECT 1
  bad:
    kind: sqlite-sql
    source: db
    description: Uses SQLite's own named parameters.
    statement: SELECT @name
`), 0o644)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import", "toolbox", src}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `not converted: tool "bad" left out: mcpd refused it: `) {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), `tool "good"`) || strings.Contains(stdout.String(), `tool "bad"`) {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// TestImportFindsItsProgram: the mcpd binary runs the mcpd-import beside
// it, and says how to install it when there is none.
func TestImportFindsItsProgram(t *testing.T) {
	src := filepath.Join("..", "..", "authoring", "importer", "toolbox", "testdata", "tools-v1.yaml")
	cmd := exec.Command(mcpdBin, "import", "toolbox", src)
	cmd.Env = append(withoutEnv(os.Environ(), "MCPD_IMPORT"), "PATH=/nonexistent")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpd import beside mcpd-import: %v", err)
	}
	if !strings.Contains(string(out), `tool "search-hotels-by-name"`) {
		t.Errorf("stdout:\n%s", out)
	}

	t.Setenv("MCPD_IMPORT", "")
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import", "toolbox", src}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "mcpd-import, the program that converts documents for mcpd import, is neither beside mcpd nor on PATH; install it") {
		t.Errorf("without mcpd-import: exit %d: %s", code, stderr.String())
	}
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
