package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const testCmdConfig = `
http_backend "api" {
  base_url = "https://api.invalid"
}

tool "get_item" {
  description = "One item"
  param "id" {
    type = "integer"
  }
  http {
    backend = "api"
    path    = "/items/${args.id}"
  }
  result {
    structured = "{name: body.name}"
  }
}

tool "greet" {
  description = "Greet"
  param "name" {
    type = "string"
  }
  result {
    content "text" {
      text = "Hello, ${args.name}!"
    }
  }
}
`

const testCmdTests = `
test "greet" {
  tool          = "greet"
  args          = { name = "Ada" }
  text_contains = "Hello, Ada!"
}

test "get_item_mocked" {
  tool = "get_item"
  args = { id = 3 }
  mock "api" {
    path = "/items/3"
    json = { name = "widget" }
  }
  expect_request {
    method = "GET"
  }
  assert = "structured.name == 'widget'"
}
`

const testCmdFailing = `
test "greet_wrong" {
  tool          = "greet"
  args          = { name = "Ada" }
  text_contains = "Hello, Bob!"
}
`

// runBinary runs the built mcpd and returns its exit code and output.
func runBinary(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := mcpdCommand(args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

func TestTestCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tools.hcl", testCmdConfig)
	code, out, _ := runBinary(t, "test", "-c", dir)
	if code != 0 || !strings.Contains(out, "[no tests") {
		t.Fatalf("no tests: exit %d\n%s", code, out)
	}
	write("tools_test.hcl", testCmdTests)

	code, out, stderr := runBinary(t, "test", "-c", dir, "-v")
	if code != 0 || !regexp.MustCompile(`(?m)^--- PASS: greet \(\d+\.\d\ds\)$`).MatchString(out) ||
		!strings.Contains(out, "--- PASS: get_item_mocked") || !strings.Contains(out, "2 passed, 0 failed") ||
		!regexp.MustCompile(`(?m)^ok  \t`).MatchString(out) {
		t.Fatalf("passing run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}

	write("extra_test.hcl", testCmdFailing)
	code, out, _ = runBinary(t, "test", "-c", dir)
	if code != 1 || !strings.Contains(out, "--- FAIL: greet_wrong (") || !strings.Contains(out, `text does not contain "Hello, Bob!"`) ||
		!strings.Contains(out, "2 passed, 1 failed") || strings.Contains(out, "--- PASS") {
		t.Fatalf("failing run: exit %d\n%s", code, out)
	}

	code, out, _ = runBinary(t, "test", "-c", dir, "--run", "^get_", "--json")
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("--json line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if code != 0 || len(lines) != 1 || lines[0]["name"] != "get_item_mocked" || lines[0]["passed"] != true {
		t.Fatalf("--run --json: exit %d\n%s", code, out)
	}

	// serve never reads test files, but validate checks them.
	write("extra_test.hcl", `test "broken" {
  tool = "no_such_tool"
}`)
	code, _, stderr = runBinary(t, "validate", "-c", dir)
	if code != 1 || !strings.Contains(stderr, "extra_test.hcl:2:10") || !strings.Contains(stderr, "Unknown test target") {
		t.Fatalf("validate with a broken test: exit %d\n%s", code, stderr)
	}
	code, out, stderr = runBinary(t, "list", "-c", dir)
	if code != 0 || !strings.Contains(out, "tool greet") {
		t.Fatalf("list with a broken test file: exit %d\n%s%s", code, out, stderr)
	}
}
