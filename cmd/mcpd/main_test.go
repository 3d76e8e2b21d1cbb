package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A small config used by the CLI tests: declarative tools only, so it does
// not depend on which adapters are registered.
const cliConfig = `
server {
  name    = "cli-test"
  version = "0.1.0"
}

tool "lookup" {
  description = "Looks an id up.\nSecond line of the description."
  param "id" {
    type = "string"
  }
  param "limit" {
    type    = "integer"
    default = 10
  }
  param "verbose" {
    type     = "boolean"
    required = false
  }
  param "tags" {
    type     = "array"
    required = false
    items = {
      type = "string"
    }
  }
  result {
    structured = "{id: args.id, limit: args.limit, verbose: args.verbose, tags: args.tags}"
  }
}

tool "fail" {
  description = "Always fails."
  result {
    error_when    = "true"
    error_message = "'it failed on purpose'"
  }
}

tool "steps" {
  description = "Reports progress."
  progress {
    steps    = [1, 2]
    total    = 2
    interval = "1ms"
    message  = "step"
  }
  result {
    content "text" {
      text = "stepped"
    }
    content "image" {
      data      = base64encode("fake png")
      mime_type = "image/png"
    }
    content "resource" {
      uri       = "notes://1"
      mime_type = "text/plain"
      text      = "embedded note"
    }
    content "resource_link" {
      uri  = "notes://2"
      name = "second"
    }
  }
}

resource "readme" {
  uri       = "docs://readme"
  mime_type = "text/plain"
  text      = "Read me."
}

resource_template "user" {
  uri_template = "users://{id}"
  mime_type    = "application/json"
  text         = jsonencode({ id = args.id })
}

prompt "trip" {
  argument "city" {
    required = true
  }
  argument "days" {
  }
  message {
    text = "Plan ${args.city}"
  }
}
`

const brokenConfig = `tool "bad name" {
  description = "x"
}
`

// configDir writes files (name → text) into a new directory.
func configDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// clearEnv unsets every MCPD_* variable for the test, so that the
// environment the tests run in cannot change their outcome.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		// MCPD_IMPORT (TestMain) says where mcpd-import is, not how to serve.
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "MCPD_") && name != "MCPD_IMPORT" {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

func TestVersionAndHelp(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		r := runCLI(t, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "mcpd ") || strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
	r := runCLI(t, "help")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
		t.Errorf("help: %+v", r)
	}
	r = runCLI(t)
	if r.code != 2 || !strings.Contains(r.stderr, "Usage:") || r.stdout != "" {
		t.Errorf("no command: %+v", r)
	}
	r = runCLI(t, "frobnicate")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %+v", r)
	}
	r = runCLI(t, "validate", "--no-such-flag")
	if r.code != 1 || !strings.Contains(r.stderr, "flag provided but not defined: -no-such-flag") {
		t.Errorf("unknown flag: %+v", r)
	}
	r = runCLI(t, "validate", "-h")
	if r.code != 0 || !strings.Contains(r.stderr, "-format") {
		t.Errorf("validate -h: %+v", r)
	}
}

func TestValidate(t *testing.T) {
	clearEnv(t)
	good := configDir(t, map[string]string{"tools.hcl": cliConfig})
	bad := configDir(t, map[string]string{"tools.hcl": brokenConfig})
	badFile := filepath.Join(bad, "tools.hcl")

	t.Run("valid", func(t *testing.T) {
		r := runCLI(t, "validate", "-c", good)
		want := filepath.Join(good, "tools.hcl") + ": valid (3 tools, 1 resource, 1 resource template, 1 prompt)\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("got %+v\nwant stdout %q", r, want)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		r := runCLI(t, "validate", "--config", bad)
		if r.code != 1 || r.stdout != "" {
			t.Errorf("got %+v", r)
		}
		want := badFile + `:1:6: error: Invalid tool name: "bad name" is not a valid tool name: use 1 to 128 of the characters A-Z a-z 0-9 _ . -
    1 | tool "bad name" {
      |      ^^^^^^^^^^
`
		if r.stderr != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
		}
	})
	t.Run("json valid", func(t *testing.T) {
		r := runCLI(t, "validate", "-c", good, "--format", "json")
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if r.code != 0 || got["valid"] != true || !reflect.DeepEqual(got["diagnostics"], []any{}) {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("json invalid", func(t *testing.T) {
		r := runCLI(t, "validate", "-c", bad, "--format=json")
		var got struct {
			Valid       bool
			Diagnostics []map[string]any
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
		}
		if r.code != 1 || got.Valid || len(got.Diagnostics) != 1 {
			t.Fatalf("got %+v", r)
		}
		d := got.Diagnostics[0]
		if d["file"] != badFile || d["line"] != float64(1) || d["column"] != float64(6) || d["severity"] != "error" || d["summary"] != "Invalid tool name" {
			t.Errorf("diagnostic = %v", d)
		}
		if r.stderr != "" {
			t.Errorf("with --format json, stderr should be empty: %q", r.stderr)
		}
	})
	t.Run("missing config", func(t *testing.T) {
		r := runCLI(t, "validate", "-c", filepath.Join(good, "nope.hcl"))
		if r.code != 1 || !strings.Contains(r.stderr, "error: Cannot read config: stat "+filepath.Join(good, "nope.hcl")) {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		r := runCLI(t, "validate", "-c", good, "--format", "yaml")
		if r.code != 1 || !strings.Contains(r.stderr, `unknown --format "yaml"`) {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("several -c", func(t *testing.T) {
		other := configDir(t, map[string]string{"more.hcl": "tool \"extra\" {\n  description = \"More.\"\n}\n"})
		r := runCLI(t, "validate", "-c", good, "-c", other)
		if r.code != 0 || !strings.Contains(r.stdout, "valid (4 tools,") {
			t.Errorf("got %+v", r)
		}
		// Or one -c with a path list.
		r = runCLI(t, "validate", "-c", good+string(os.PathListSeparator)+other)
		if r.code != 0 || !strings.Contains(r.stdout, "valid (4 tools,") {
			t.Errorf("path list: got %+v", r)
		}
	})
	t.Run("default ./tools.hcl", func(t *testing.T) {
		t.Chdir(good)
		r := runCLI(t, "validate")
		if r.code != 0 || r.stdout != "tools.hcl: valid (3 tools, 1 resource, 1 resource template, 1 prompt)\n" {
			t.Errorf("got %+v", r)
		}
	})
}

func TestEnvironment(t *testing.T) {
	clearEnv(t)
	good := configDir(t, map[string]string{"tools.hcl": cliConfig})
	bad := configDir(t, map[string]string{"tools.hcl": brokenConfig})

	t.Setenv("MCPD_CONFIG", good)
	if r := runCLI(t, "validate"); r.code != 0 || !strings.HasPrefix(r.stdout, filepath.Join(good, "tools.hcl")+": valid") {
		t.Errorf("MCPD_CONFIG: %+v", r)
	}
	// A flag on the command line wins over the environment.
	if r := runCLI(t, "validate", "-c", bad); r.code != 1 {
		t.Errorf("-c over MCPD_CONFIG: %+v", r)
	}
	// Several paths, separated as in PATH.
	other := configDir(t, map[string]string{"more.hcl": "tool \"extra\" {\n  description = \"More.\"\n}\n"})
	t.Setenv("MCPD_CONFIG", good+string(os.PathListSeparator)+other)
	if r := runCLI(t, "validate"); r.code != 0 || !strings.Contains(r.stdout, "valid (4 tools,") {
		t.Errorf("MCPD_CONFIG with two paths: %+v", r)
	}
	t.Setenv("MCPD_CONFIG", good)
	t.Setenv("MCPD_FORMAT", "json")
	if r := runCLI(t, "validate"); r.code != 0 || !strings.Contains(r.stdout, `"valid": true`) {
		t.Errorf("MCPD_FORMAT: %+v", r)
	}
	t.Setenv("MCPD_JSON", "true")
	if r := runCLI(t, "list"); r.code != 0 || !json.Valid([]byte(r.stdout)) {
		t.Errorf("MCPD_JSON for list: %+v", r)
	}
	t.Setenv("MCPD_JSON", "not-a-bool")
	if r := runCLI(t, "list"); r.code != 1 || !strings.Contains(r.stderr, "MCPD_JSON") {
		t.Errorf("a bad MCPD_JSON must be reported by name: %+v", r)
	}
}

func TestList(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": cliConfig})
	r := runCLI(t, "list", "-c", dir)
	want := `tool lookup(id: string, limit?: integer, tags?: array, verbose?: boolean)
    Looks an id up.
tool fail()
    Always fails.
tool steps()
    Reports progress.
resource docs://readme  text/plain
resource_template users://{id}  application/json
prompt trip(city, days)
`
	if r.code != 0 || r.stdout != want {
		t.Errorf("got code %d\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}

	r = runCLI(t, "list", "-c", dir, "--json")
	if r.code != 0 {
		t.Fatalf("got %+v", r)
	}
	var got struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
		Resources         []struct{ URI string }         `json:"resources"`
		ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
		Prompts           []struct{ Name string }        `json:"prompts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	var names []string
	for _, tl := range got.Tools {
		names = append(names, tl.Name)
	}
	if !reflect.DeepEqual(names, []string{"lookup", "fail", "steps"}) {
		t.Errorf("tools = %v", names)
	}
	if got.Tools[0].InputSchema["type"] != "object" {
		t.Errorf("inputSchema = %v", got.Tools[0].InputSchema)
	}
	if len(got.Resources) != 1 || got.Resources[0].URI != "docs://readme" || len(got.ResourceTemplates) != 1 || len(got.Prompts) != 1 {
		t.Errorf("got %+v", got)
	}

	// An empty config lists empty arrays, not nulls.
	empty := configDir(t, map[string]string{"tools.hcl": "server {\n  name = \"empty\"\n}\n"})
	r = runCLI(t, "list", "-c", empty, "--json")
	for _, key := range []string{"tools", "resources", "resourceTemplates", "prompts"} {
		if !strings.Contains(r.stdout, `"`+key+`": []`) {
			t.Errorf("want an empty %s array: %s", key, r.stdout)
		}
	}

	r = runCLI(t, "list", "-c", configDir(t, map[string]string{"tools.hcl": brokenConfig}))
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "Invalid tool name") {
		t.Errorf("broken config: %+v", r)
	}
}

func TestCall(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": cliConfig})
	structured := func(t *testing.T, r result) map[string]any {
		t.Helper()
		var got map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &got); err != nil {
			t.Fatalf("stdout is not the structured JSON: %v\n%+v", err, r)
		}
		return got
	}
	tests := []struct {
		name string
		args []string
		want map[string]any
	}{
		// A string param keeps its value as typed: no JSON decoding.
		{"string stays a string", []string{"lookup", "id=007"}, map[string]any{"id": "007", "limit": float64(10), "verbose": nil, "tags": nil}},
		{"string that looks like JSON", []string{"lookup", "id=true"}, map[string]any{"id": "true", "limit": float64(10), "verbose": nil, "tags": nil}},
		{"string with =", []string{"lookup", "id=a=b"}, map[string]any{"id": "a=b", "limit": float64(10), "verbose": nil, "tags": nil}},
		{"typed values are JSON", []string{"lookup", "id=x", "limit=3", "verbose=true", `tags=["a","b"]`}, map[string]any{"id": "x", "limit": float64(3), "verbose": true, "tags": []any{"a", "b"}}},
		{"--args", []string{"lookup", "--args", `{"id": "007", "limit": 2}`}, map[string]any{"id": "007", "limit": float64(2), "verbose": nil, "tags": nil}},
		{"flags before the tool", []string{"-c", dir, "lookup", "id=1"}, map[string]any{"id": "1", "limit": float64(10), "verbose": nil, "tags": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"call"}, tc.args...)
			if tc.args[0] != "-c" {
				args = append(args, "-c", dir) // flags after the tool name
			}
			r := runCLI(t, args...)
			if r.code != 0 {
				t.Fatalf("got %+v", r)
			}
			if got := structured(t, r); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("structured = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("integers stay exact", func(t *testing.T) {
		r := runCLI(t, "call", "-c", dir, "lookup", "id=x", "limit=9007199254740993")
		if r.code != 0 || !strings.Contains(r.stdout, `"limit":9007199254740993`) {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("isError exits 1", func(t *testing.T) {
		r := runCLI(t, "call", "-c", dir, "fail")
		if r.code != 1 || r.stdout != "it failed on purpose\n" {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("bad arguments exit 1 naming the param", func(t *testing.T) {
		r := runCLI(t, "call", "-c", dir, "lookup", "id=1", "limit=many")
		if r.code != 1 || r.stdout != "invalid arguments for tool lookup: argument \"limit\" must be an integer, got string \"many\"\n" {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("--json prints the whole result", func(t *testing.T) {
		r := runCLI(t, "call", "-c", dir, "fail", "--json")
		var got map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		if r.code != 1 || got["isError"] != true {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("contents and progress", func(t *testing.T) {
		r := runCLI(t, "call", "-c", dir, "steps")
		want := "stepped\n[image image/png, 8 bytes]\n[resource notes://1 text/plain]\nembedded note\n[link notes://2 second]\n"
		if r.code != 0 || r.stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
		}
		if !strings.Contains(r.stderr, "progress: 1/2 step\nprogress: 2/2 step\n") {
			t.Errorf("stderr = %q", r.stderr)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown tool", []string{"nope"}, `no tool "nope"; the config declares: lookup, fail, steps`},
		{"not name=value", []string{"lookup", "id"}, `argument "id" is not name=value`},
		{"both --args and pairs", []string{"lookup", "--args", `{}`, "id=1"}, "give arguments either with --args or as name=value, not both"},
		{"--args not JSON", []string{"lookup", "--args", `{id: 1}`}, "--args is not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, append([]string{"call", "-c", dir}, tc.args...)...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got %+v, want stderr containing %q", r, tc.want)
			}
		})
	}
	t.Run("no tool", func(t *testing.T) {
		r := runCLI(t, "call", "-c", dir)
		if r.code != 2 || !strings.Contains(r.stderr, "usage: mcpd call") {
			t.Errorf("got %+v", r)
		}
	})
}
