package config

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// TestFileSuffix ends the name of a file that holds only test blocks. Such
// files are never served: a directory's *_test.hcl files are left out of
// Load and read by LoadTests.
const TestFileSuffix = "_test.hcl"

// Test is one `test "name" { ... }` block: a call to one tool, resource or
// prompt and what its result must be. Every value is kept as an attribute
// (an expression that may use env() and file()); the test runner evaluates
// and checks them, as the snapshot does for tools.
type Test struct {
	Name         string           `hcl:"name,label"`
	NameRange    hcl.Range        `hcl:"name,label_range"`
	Tool         *hcl.Attribute   `hcl:"tool,optional"`
	Resource     *hcl.Attribute   `hcl:"resource,optional"`
	Prompt       *hcl.Attribute   `hcl:"prompt,optional"`
	Args         *hcl.Attribute   `hcl:"args,optional"`
	IsError      *hcl.Attribute   `hcl:"is_error,optional"`
	TextContains *hcl.Attribute   `hcl:"text_contains,optional"`
	TextMatches  *hcl.Attribute   `hcl:"text_matches,optional"`
	Assert       *hcl.Attribute   `hcl:"assert,optional"`
	Mocks        []*Mock          `hcl:"mock,block"`
	Expects      []*ExpectRequest `hcl:"expect_request,block"`
	ExpectArgv   *hcl.Attribute   `hcl:"expect_argv,optional"`
	ExpectStdin  *hcl.Attribute   `hcl:"expect_stdin,optional"`
	DeclRange    hcl.Range        `hcl:",def_range"`

	// Dir is the directory of the file the test is declared in.
	Dir string
}

// Mock is one `mock "backend" { ... }` block of a test: a canned response
// that the named http_backend answers with while the test runs.
type Mock struct {
	Backend      string         `hcl:"backend,label"`
	BackendRange hcl.Range      `hcl:"backend,label_range"`
	Method       *hcl.Attribute `hcl:"method,optional"`
	Path         *hcl.Attribute `hcl:"path,optional"`
	Status       *hcl.Attribute `hcl:"status,optional"`
	Headers      *hcl.Attribute `hcl:"headers,optional"`
	Body         *hcl.Attribute `hcl:"body,optional"`
	BodyFile     *hcl.Attribute `hcl:"body_file,optional"`
	JSON         *hcl.Attribute `hcl:"json,optional"`
	DeclRange    hcl.Range      `hcl:",def_range"`
}

// ExpectRequest is one `expect_request { ... }` block of a test: what the
// n-th request the tool sent to a mocked backend must look like.
type ExpectRequest struct {
	Method       *hcl.Attribute `hcl:"method,optional"`
	Path         *hcl.Attribute `hcl:"path,optional"`
	Query        *hcl.Attribute `hcl:"query,optional"`
	Headers      *hcl.Attribute `hcl:"headers,optional"`
	BodyContains *hcl.Attribute `hcl:"body_contains,optional"`
	DeclRange    hcl.Range      `hcl:",def_range"`
}

// testFile is the top level of a *_test.hcl file: test blocks only.
type testFile struct {
	Tests []*Test `hcl:"test,block"`
}

// Tests are the test blocks of a config and of its test files.
type Tests struct {
	Tests []*Test
	// Files are the *_test.hcl files read.
	Files []string
	// Sources maps each test file to its text, for printing diagnostics.
	Sources map[string][]byte
}

// IsTestFile reports whether name is a test file (*_test.hcl).
func IsTestFile(name string) bool {
	return strings.HasSuffix(filepath.Base(name), TestFileSuffix)
}

// TestFiles lists the test files that belong to the config paths: every
// *_test.hcl file of a directory, and NAME_test.hcl beside a file NAME.hcl.
func TestFiles(paths []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(f string) {
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		if info.IsDir() {
			matches, _ := filepath.Glob(filepath.Join(p, "*"+TestFileSuffix))
			sort.Strings(matches)
			for _, m := range matches {
				if !strings.HasPrefix(filepath.Base(m), ".") {
					add(m)
				}
			}
			continue
		}
		if IsTestFile(p) {
			continue // given on the command line: Load reads it
		}
		add(strings.TrimSuffix(p, ".hcl") + TestFileSuffix)
	}
	return out
}

// LoadTests reads the test blocks of cfg (declared among its tools) and of
// the test files that belong to paths (see TestFiles), and checks that no
// two tests share a name.
func LoadTests(paths []string, cfg *Config) (*Tests, hcl.Diagnostics) {
	out := &Tests{Sources: map[string][]byte{}}
	if cfg != nil {
		out.Tests = append(out.Tests, cfg.Tests...)
	}
	var diags hcl.Diagnostics
	for _, name := range TestFiles(paths) {
		body, src, d := parseFile(name)
		if src != nil {
			out.Sources[name] = src
		}
		out.Files = append(out.Files, name)
		diags = append(diags, d...)
		if body == nil || d.HasErrors() {
			continue
		}
		var tf testFile
		diags = append(diags, decodeChecked(body, nil, &tf, nil)...)
		for _, t := range tf.Tests {
			t.Dir = filepath.Dir(name)
			out.Tests = append(out.Tests, t)
		}
	}
	seen := map[string]*Test{}
	for _, t := range out.Tests {
		if prev, dup := seen[t.Name]; dup {
			diags = append(diags, duplicate("test", t.Name, t.NameRange, prev.NameRange))
			continue
		}
		seen[t.Name] = t
	}
	return out, diags
}
