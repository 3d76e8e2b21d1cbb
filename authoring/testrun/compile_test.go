package testrun_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/authoring/testrun"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// Every mistake in a test block is a load-time diagnostic that points at
// it, as a mistake in a tool is.
func TestCompileDiagnostics(t *testing.T) {
	tests := []struct {
		name, hcl string
		want      string // "line:col: summary"
	}{
		{"no target", `test "t" {
  args = {}
}`, "1:1: A test needs one target"},
		{"two targets", `test "t" {
  tool = "greet"
  prompt = "ask"
}`, "1:1: A test needs one target"},
		{"unknown tool", `test "t" {
  tool = "gret"
}`, "2:10: Unknown test target"},
		{"unknown resource", `test "t" {
  resource = "test://nothing"
}`, "2:14: Unknown test target"},
		{"bad regexp", `test "t" {
  tool = "greet"
  text_matches = "("
}`, "3:18: Invalid text_matches"},
		{"assert not boolean", `test "t" {
  tool = "greet"
  assert = "text + 'x'"
}`, "3:12: Invalid assert"},
		{"assert unknown variable", `test "t" {
  tool = "greet"
  assert = "structurd.x == 1"
}`, "3:12: Invalid assert"},
		{"the failing element of an assert list", `test "t" {
  tool = "greet"
  assert = [
    "text != ''",
    "txt == 'x'",
  ]
}`, "5:5: Invalid assert"},
		{"expect_argv on a tool that is not a shell tool", `test "t" {
  tool = "greet"
  expect_argv = ["x"]
}`, "3:3: Not a shell tool"},
		{"expect_argv with a result check", `test "t" {
  tool = "upper"
  expect_argv = ["tr"]
  text_contains = "X"
}`, "4:3: Result check in a dry run"},
		{"args not an object", `test "t" {
  tool = "greet"
  args = ["Ada"]
}`, "3:10: Invalid args"},
		{"mock of an unknown backend", `test "t" {
  tool = "get_item"
  mock "apii" {
    json = {}
  }
}`, "3:8: Unknown mocked backend"},
		{"mock with two bodies", `test "t" {
  tool = "get_item"
  mock "api" {
    body = "x"
    json = {}
  }
}`, "5:5: More than one body"},
		{"mock status out of range", `test "t" {
  tool = "get_item"
  mock "api" {
    status = 42
  }
}`, "4:14: Invalid status"},
		{"missing body_file", `test "t" {
  tool = "get_item"
  mock "api" {
    body_file = "nope.json"
  }
}`, "4:17: Cannot read body_file"},
		{"expect_request without mock", `test "t" {
  tool = "get_item"
  expect_request {
    path = "/x"
  }
}`, "3:3: expect_request without mock"},
		{"unknown attribute", `test "t" {
  tool = "greet"
  text_contain = "x"
}`, "3:3: Unsupported argument"},
		{"duplicate name", `test "t" {
  tool = "greet"
}
test "t" {
  tool = "greet"
}`, `4:6: Duplicate test "t"`},
		{"syntax error", `test "t" {
  tool = 
}`, "2:10: Invalid expression"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(toolsHCL), 0o644)
			os.WriteFile(filepath.Join(dir, "tools_test.hcl"), []byte(tc.hcl), 0o644)
			paths := []string{filepath.Join(dir, "tools.hcl")}
			l := loader.Load(paths, registry(), nil, "test")
			if l.Snapshot == nil {
				t.Fatalf("config: %v", l.Diagnostics)
			}
			defer l.Snapshot.Close()
			_, _, diags := testrun.Load(paths, l)
			var got []string
			for _, d := range diags {
				if d.Subject != nil {
					got = append(got, strings.TrimPrefix(config.Pos(*d.Subject), filepath.Join(dir, "tools_test.hcl")+":")+": "+d.Summary)
				}
			}
			if !diags.HasErrors() || len(got) == 0 || got[0] != tc.want {
				t.Fatalf("diagnostics %q, want first %q (all: %v)", got, tc.want, diags)
			}
		})
	}
}

// Test blocks may also sit in the config itself; a directory's *_test.hcl
// files are tests only, never part of the served config.
func TestTestFilesAreNotServed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(toolsHCL+`
test "inline" {
  tool = "greet"
  args = { name = "Ada" }
}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "more_test.hcl"), []byte(`test "from_file" {
  prompt = "ask"
  args = { topic = "x" }
}`), 0o644)
	l := loader.Load([]string{dir}, registry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config: %v", l.Diagnostics)
	}
	defer l.Snapshot.Close()
	if len(l.Files) != 1 || filepath.Base(l.Files[0]) != "tools.hcl" {
		t.Fatalf("served files %v, want only tools.hcl", l.Files)
	}
	cases, tests, diags := testrun.Load([]string{dir}, l)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(cases) != 2 || cases[0].Name != "inline" || cases[1].Name != "from_file" || len(tests.Files) != 1 {
		t.Fatalf("cases %v, test files %v", cases, tests.Files)
	}
	// A test file may hold only tests.
	os.WriteFile(filepath.Join(dir, "more_test.hcl"), []byte(`tool "sneaky" {}`), 0o644)
	_, _, diags = testrun.Load([]string{dir}, l)
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Unsupported block type") {
		t.Fatalf("a tool in a test file: %v", diags)
	}
}
