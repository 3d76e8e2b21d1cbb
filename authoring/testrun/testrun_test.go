package testrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/authoring/testrun"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

// toolsHCL is the config every test below runs against: an HTTP tool whose
// backend the tests mock (its real host does not exist), a static tool, a
// shell tool, a resource and a prompt.
const toolsHCL = `
http_backend "api" {
  base_url = "https://api.invalid/v1"
  headers  = { Authorization = "Bearer ${env("TESTRUN_TOKEN", "tok-123")}" }
}

tool "get_item" {
  description = "One item"
  param "id" {
    type = "integer"
  }
  http {
    backend = "api"
    path    = "/items/${args.id}"
    query   = { verbose = "1" }
  }
  result {
    structured = "{name: body.name, price: body.price}"
  }
}

tool "create_item" {
  description = "Create an item"
  param "name" {
    type = "string"
  }
  http {
    backend = "api"
    method  = "POST"
    path    = "/items"
    body    = { name = args.name }
  }
}

tool "greet" {
  description = "Greet"
  param "name" {
    type       = "string"
    min_length = 1
  }
  result {
    content "text" {
      text = "Hello, ${args.name}!"
    }
  }
}

tool "upper" {
  description = "Upper-case stdin"
  param "text" {
    type = "string"
  }
  shell {
    command = ["tr", "a-z", "A-Z"]
    stdin   = args.text
  }
}

resource "motd" {
  uri  = "test://motd"
  text = "message of the day"
}

prompt "ask" {
  argument "topic" {
    required = true
  }
  message {
    text = "Tell me about ${args.topic}."
  }
}
`

func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	return reg
}

// runTests writes the config and testsHCL (as tools_test.hcl beside it),
// loads, compiles and runs the tests whose names match filter.
func runTests(t *testing.T, testsHCL string, filter *regexp.Regexp) []*testrun.Result {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(toolsHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools_test.hcl"), []byte(testsHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "item.json"), []byte(`{"name":"from file","price":3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(dir, "tools.hcl")}
	l := loader.Load(paths, registry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config: %v", l.Diagnostics)
	}
	t.Cleanup(l.Snapshot.Close)
	cases, _, diags := testrun.Load(paths, l)
	if diags.HasErrors() {
		t.Fatalf("tests: %v", diags)
	}
	var results []*testrun.Result
	testrun.NewSuite(l.Config, registry(), l.Snapshot, "test").Run(context.Background(), cases, filter, func(r *testrun.Result) {
		results = append(results, r)
	})
	return results
}

func TestRun(t *testing.T) {
	tests := []struct {
		name string
		hcl  string
		pass bool
		// failures must each appear in the failure report, in order.
		failures []string
	}{
		{"text_contains passes", `test "t" {
  tool = "greet"
  args = { name = "Ada" }
  text_contains = ["Hello", "Ada!"]
}`, true, nil},
		{"text_contains fails with the text", `test "t" {
  tool = "greet"
  args = { name = "Ada" }
  text_contains = "Bob"
}`, false, []string{`text does not contain "Bob"`, "Hello, Ada!"}},
		{"text_matches", `test "t" {
  tool = "greet"
  args = { name = "Ada" }
  text_matches = "^Hello, [A-Z][a-z]+!$"
}`, true, nil},
		{"an unexpected tool error fails and shows it", `test "t" {
  tool = "greet"
  args = { name = "" }
}`, false, []string{"is_error = true, want false", `"name"`}},
		{"an expected tool error", `test "t" {
  tool = "greet"
  args = { name = "" }
  is_error = true
  text_contains = "at least 1"
}`, true, nil},
		{"a missing error", `test "t" {
  tool = "greet"
  args = { name = "Ada" }
  is_error = true
}`, false, []string{"is_error = false, want true"}},
		{"shell tool run for real", `test "t" {
  tool = "upper"
  args = { text = "shout" }
  text_contains = "SHOUT"
}`, true, nil},
		{"resource", `test "t" {
  resource = "test://motd"
  assert = "text == 'message of the day' && content[0].uri == 'test://motd'"
}`, true, nil},
		{"prompt", `test "t" {
  prompt = "ask"
  args = { topic = "HCL" }
  text_contains = "Tell me about HCL."
}`, true, nil},
		{"prompt error is an is_error outcome", `test "t" {
  prompt = "ask"
  is_error = true
  text_contains = "topic"
}`, true, nil},
		{"mock served and request asserted", `test "t" {
  tool = "get_item"
  args = { id = 7 }
  mock "api" {
    method = "GET"
    path = "/v1/items/7"
    json = { name = "widget", price = 2.5 }
  }
  expect_request {
    method = "GET"
    path = "/v1/items/7"
    query = { verbose = "1" }
    headers = { Authorization = "Bearer tok-123" }
  }
  assert = ["structured.name == 'widget'", "structured.price == 2.5"]
}`, true, nil},
		{"assert failure names the values", `test "t" {
  tool = "get_item"
  args = { id = 7 }
  mock "api" {
    body_file = "item.json"
    headers = { Content-Type = "application/json" }
  }
  assert = ["structured.price == 3", "structured.name == 'widget' && structured.price > 1"]
}`, false, []string{"assert structured.name == 'widget' && structured.price > 1 is false", `structured.name = "from file"`, "structured.price = 3"}},
		{"request mismatch", `test "t" {
  tool = "create_item"
  args = { name = "gizmo" }
  mock "api" {
    method = "POST"
    status = 201
    body = "{}"
  }
  expect_request {
    method = "PUT"
    path = "/v1/items"
    body_contains = "\"name\":\"gadget\""
    headers = { X-Missing = "yes" }
  }
}`, false, []string{"method POST, want PUT", `header X-Missing = [], want "yes"`, `body does not contain "\"name\":\"gadget\""`, `{"name":"gizmo"}`}},
		{"unmatched request", `test "t" {
  tool = "get_item"
  args = { id = 8 }
  mock "api" {
    path = "/v1/items/7"
    json = {}
  }
}`, false, []string{"is_error = true, want false", "501"}},
		{"mocks in order, the last one repeats", `test "t" {
  tool = "get_item"
  args = { id = 7 }
  mock "api" {
    status = 503
    body = "busy"
  }
  mock "api" {
    json = { name = "second" }
  }
  is_error = true
  text_contains = "503"
}`, true, nil},
		{"dry run: argv and stdin", `test "t" {
  tool = "upper"
  args = { text = "shout" }
  expect_argv = ["tr", "a-z", "A-Z"]
  expect_stdin = "shout"
}`, true, nil},
		{"dry run: argv and stdin differ", `test "t" {
  tool = "upper"
  args = { text = "shout" }
  expect_argv = ["tr", "A-Z", "a-z"]
  expect_stdin = "whisper"
}`, false, []string{`argv = ["tr","a-z","A-Z"]`, `want ["tr","A-Z","a-z"]`, `stdin = "shout", want "whisper"`}},
		{"dry run: invalid arguments start nothing", `test "t" {
  tool = "upper"
  args = {}
  expect_argv = ["tr", "a-z", "A-Z"]
}`, false, []string{"the tool would not start a process", `"text"`}},
		{"expected request never sent", `test "t" {
  tool = "greet"
  args = { name = "Ada" }
  mock "api" {
    json = {}
  }
  expect_request {
    path = "/v1/items"
  }
}`, false, []string{"expect_request #1: the tool sent only 0 request(s)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runTests(t, tc.hcl, nil)
			if len(res) != 1 {
				t.Fatalf("%d results, want 1", len(res))
			}
			r := res[0]
			report := strings.Join(r.Failures, "\n")
			if r.Passed != tc.pass {
				t.Fatalf("passed = %v, want %v; failures:\n%s", r.Passed, tc.pass, report)
			}
			at := 0
			for _, want := range tc.failures {
				i := strings.Index(report[at:], want)
				if i < 0 {
					t.Fatalf("failures lack %q (after offset %d):\n%s", want, at, report)
				}
				at += i + len(want)
			}
		})
	}
}

// A real secret the backend sends must not reach the test output: the
// mocked server echoes the Authorization header into the result, which the
// snapshot redacts as it does for a real client.
func TestMockedResultIsRedacted(t *testing.T) {
	t.Setenv("TESTRUN_TOKEN", "s3cret-token-value")
	res := runTests(t, `test "t" {
  tool = "get_item"
  args = { id = 1 }
  mock "api" {
    json = { name = "Bearer s3cret-token-value", price = 1 }
  }
  assert = "structured.name == 'x'"
}`, nil)
	out := strings.Join(res[0].Failures, "\n") + res[0].Text
	if strings.Contains(out, "s3cret-token-value") || !strings.Contains(out, "[redacted]") {
		t.Fatalf("secret in test output, or nothing redacted:\n%s", out)
	}
}

func TestRunFilter(t *testing.T) {
	hcl := `
test "greet_ada" {
  tool = "greet"
  args = { name = "Ada" }
}
test "greet_bob" {
  tool = "greet"
  args = { name = "Bob" }
}
test "motd" {
  resource = "test://motd"
}`
	var names []string
	for _, r := range runTests(t, hcl, regexp.MustCompile("^greet_")) {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "greet_ada,greet_bob" {
		t.Fatalf("ran %s, want greet_ada,greet_bob", got)
	}
}

func TestPrinter(t *testing.T) {
	hcl := `
test "good" {
  tool = "greet"
  args = { name = "Ada" }
}
test "bad" {
  tool = "greet"
  args = { name = "Ada" }
  text_contains = "Bob"
}`
	results := runTests(t, hcl, nil)

	var text bytes.Buffer
	p := &testrun.Printer{W: &text, Verbose: true}
	for _, r := range results {
		p.Report(r)
	}
	p.Finish("tools.hcl")
	for _, re := range []string{
		`(?m)^=== RUN   good\n--- PASS: good \(\d+\.\d\ds\)$`,
		`(?m)^--- FAIL: bad \(\d+\.\d\ds\)\n    .*tools_test.hcl:6:1\n    text does not contain "Bob"`,
		`(?m)^FAIL\nFAIL\ttools.hcl\t\d+\.\d+s\n1 passed, 1 failed\n\z`,
	} {
		if !regexp.MustCompile(re).MatchString(text.String()) {
			t.Errorf("output does not match %s:\n%s", re, text.String())
		}
	}

	var js bytes.Buffer
	p = &testrun.Printer{W: &js, JSON: true}
	for _, r := range results {
		p.Report(r)
	}
	p.Finish("tools.hcl")
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines, want 2:\n%s", len(lines), js.String())
	}
	var bad struct {
		Name     string   `json:"name"`
		Passed   bool     `json:"passed"`
		Failures []string `json:"failures"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &bad); err != nil {
		t.Fatal(err)
	}
	if bad.Name != "bad" || bad.Passed || len(bad.Failures) != 1 {
		t.Fatalf("second line = %+v", bad)
	}
}
