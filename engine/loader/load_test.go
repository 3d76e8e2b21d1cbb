package loader_test

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// Each file (or directory) under testdata/broken is one mistake, paired
// here with the diagnostic it must produce: where (file:line:col of the
// diagnostic's subject) and a fragment of what it says.
func TestLoadBroken(t *testing.T) {
	tests := []struct {
		path string // under testdata/broken
		pos  string // file:line:col, the file relative to testdata/broken ("file:line:" for any column)
		want string // fragment of "Summary: Detail"
	}{
		{"unknown_attribute.hcl", "unknown_attribute.hcl:3:3", `Unsupported argument: An argument named "colour" is not expected here.`},
		{"wrong_type.hcl", "wrong_type.hcl:2:17", "Unsuitable value type: Unsuitable value: string required"},
		{"duplicate_tool", "duplicate_tool/b.hcl:3:1", `Duplicate tool "greet": tool "greet" is declared here and at testdata/broken/duplicate_tool/a.hcl:1:1.`},
		{"tool_name_spaces.hcl", "tool_name_spaces.hcl:1:6", `Invalid tool name: "say hello" is not a valid tool name`},
		{"tool_name_129.hcl", "tool_name_129.hcl:1:6", "Invalid tool name: \"" + strings.Repeat("a", 129) + "\" is not a valid tool name: use 1 to 128"},
		{"param_type.hcl", "param_type.hcl:4:12", `Invalid param type: param "name": type "text" is not one of string, integer, number, boolean, array, object.`},
		{"required_default.hcl", "required_default.hcl:6:5", `Required param with a default: param "name" has a default`},
		{"bad_pattern.hcl", "bad_pattern.hcl:4:15", `Invalid pattern: param "name": error parsing regexp: missing closing ]`},
		{"default_below_minimum.hcl", "default_below_minimum.hcl:6:15", `Invalid default: the default does not satisfy the param's own rules: argument "n" must be at least 1, got 0`},
		{"enum_wrong_type.hcl", "enum_wrong_type.hcl:5:12", `Invalid enum value: argument "colour" must be a string, got integer 2`},
		{"args_nope_content.hcl", "args_nope_content.hcl:8:24", "Reference to undeclared param: args.nope is not declared; declared params: name."},
		{"args_nope_result.hcl", "args_nope_result.hcl:7:", "nope"},
		{"expr_syntax.hcl", "expr_syntax.hcl:4:15", "Invalid result expression: text: unexpected token EOF (available: args)"},
		{"expr_unknown_name.hcl", "expr_unknown_name.hcl:4:13", "Invalid result expression: text: unknown name body (available: args)"},
		{"error_message_alone.hcl", "error_message_alone.hcl:4:5", "error_message without error_when"},
		{"two_servers.hcl", "two_servers.hcl:5:1", "Duplicate server block: Only one server block is allowed; the first is at testdata/broken/two_servers.hcl:1:1."},
		{"resource_no_source.hcl", "resource_no_source.hcl:1:1", `A resource needs exactly one source: resource "readme" has 0`},
		{"resource_two_sources.hcl", "resource_two_sources.hcl:1:1", `A resource needs exactly one source: resource "readme" has 2`},
		{"resource_uri_no_scheme.hcl", "resource_uri_no_scheme.hcl:2:10", `Invalid resource URI: "readme.txt" has no scheme`},
		{"bad_uri_template.hcl", "bad_uri_template.hcl:2:18", "Invalid URI template"},
		{"prompt_no_content.hcl", "prompt_no_content.hcl:2:3", "A message needs exactly one content: This message has 0"},
		{"prompt_two_contents.hcl", "prompt_two_contents.hcl:2:3", "A message needs exactly one content: This message has 2"},
		{"unknown_content_type.hcl", "unknown_content_type.hcl:4:13", `Unknown content type: "video" is not a content type`},
		{"input_schema_and_params.hcl", "input_schema_and_params.hcl:6:3", "Both input_schema and params"},
		{"input_schema_not_object.hcl", "input_schema_not_object.hcl:3:18", `Invalid input schema: the root of an input schema must have "type": "object"`},
		{"input_schema_ref_cycle.hcl", "input_schema_ref_cycle.hcl:3:18", "Invalid input schema: the schema refers to itself without descending into the value (#/$defs/a → #/$defs/a)"},
		{"output_schema_ref_cycle.hcl", "output_schema_ref_cycle.hcl:3:19", "Invalid output schema: the schema refers to itself without descending into the value (#/properties/x → #/properties/x/anyOf/0 → #/properties/x)"},
		{"input_schema_array.hcl", "input_schema_array.hcl:3:18", "Invalid schema: a JSON Schema must be an object"},
		{"template_param_not_variable.hcl", "template_param_not_variable.hcl:3:3", `Param is not a template variable: resource_template "note": param "nmae" is not a variable of "notes://{name}"; its variables are name.`},
		{"template_param_array.hcl", "template_param_array.hcl:4:12", `Invalid param type: param "name": a URI template variable is text; its type can be string, integer, number or boolean, not array.`},
		{"template_allow_dots_not_bool.hcl", "template_allow_dots_not_bool.hcl:4:26", "must be true or false"},
		{"template_bad_pattern.hcl", "template_bad_pattern.hcl:4:15", `Invalid pattern: param "name": error parsing regexp: missing closing ]`},
		{"ask_two_kinds.hcl", "ask_two_kinds.hcl:3:3", `Invalid ask: ask "ok" must set exactly one of confirm, elicit, sample or roots (it sets 2).`},
		{"ask_undeclared_input.hcl", "ask_undeclared_input.hcl:6:17", "Reference to an unavailable input: inputs.nope is not the answer of an ask block asked before this point; available: ok."},
		{"ask_later_round.hcl", "ask_later_round.hcl:4:23", "Reference to an unavailable input: inputs.second is not the answer of an ask block asked before this point; available: none."},
		{"ask_duplicate.hcl", "ask_duplicate.hcl:4:7", `Duplicate ask: ask "ok" is already declared at`},
		{"ask_optional_confirm.hcl", "ask_optional_confirm.hcl:3:3", "Optional confirmation: a confirmation cannot be optional"},
		{"ask_round_zero.hcl", "ask_round_zero.hcl:5:15", "Invalid round: round must be a whole number from 1 to 100"},
		{"log_level.hcl", "log_level.hcl:4:15", `Invalid level: level must be one of debug, info, notice, warning, error, critical, alert, emergency, not "verbose"`},
		{"log_when.hcl", "log_when.hcl:4:15", `Invalid when: when must be "before" or "after", not "during"`},
		{"log_unknown_name.hcl", "log_unknown_name.hcl:8:", "unknown name status (available: args)"},
		{"tool_param_allow_slash.hcl", "tool_param_allow_slash.hcl:4:5", `Unsupported argument: param "p": allow_slash applies to the variables of a resource_template, not to a tool's params.`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			l := loader.Load([]string{filepath.Join("testdata", "broken", tc.path)}, adapter.NewRegistry(), nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
				t.Errorf("a broken config produced a snapshot")
			}
			wantPos := filepath.Join("testdata", "broken", tc.pos)
			if !hasDiag(l.Diagnostics, wantPos, tc.want) {
				t.Errorf("want an error at %s containing %q; got:\n%s", wantPos, tc.want, render(l.Diagnostics))
			}
			// One mistake, one diagnostic: nothing else repeats it.
			errs := 0
			for _, d := range l.Diagnostics {
				if d.Severity == hcl.DiagError {
					errs++
				}
			}
			if errs != 1 {
				t.Errorf("want exactly one error, got %d:\n%s", errs, render(l.Diagnostics))
			}
		})
	}
}

func hasDiag(diags hcl.Diagnostics, pos, fragment string) bool {
	for _, d := range diags {
		if d.Severity != hcl.DiagError || d.Subject == nil {
			continue
		}
		at := config.Pos(*d.Subject)
		if (at == pos || strings.HasSuffix(pos, ":") && strings.HasPrefix(at, pos)) &&
			strings.Contains(d.Summary+": "+d.Detail, fragment) {
			return true
		}
	}
	return false
}

func render(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		pos := "-"
		if d.Subject != nil {
			pos = config.Pos(*d.Subject)
		}
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		b.WriteString("  " + pos + ": " + sev + ": " + d.Summary + ": " + d.Detail + "\n")
	}
	return b.String()
}

// One run reports every problem, across files, not just the first.
func TestLoadReportsEveryError(t *testing.T) {
	l := loader.Load([]string{
		filepath.Join("testdata", "broken", "bad_pattern.hcl"),
		filepath.Join("testdata", "broken", "two_servers.hcl"),
		filepath.Join("testdata", "broken", "prompt_no_content.hcl"),
	}, adapter.NewRegistry(), nil, "test")
	if l.Snapshot != nil {
		t.Fatal("want no snapshot")
	}
	for _, want := range []string{"Invalid pattern", "Duplicate server block", "A message needs exactly one content"} {
		found := false
		for _, d := range l.Diagnostics {
			found = found || d.Summary == want
		}
		if !found {
			t.Errorf("missing %q in:\n%s", want, render(l.Diagnostics))
		}
	}
}

// A valid config yields a snapshot, warnings only, and every file listed.
func TestLoadConformanceExample(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "conformance")
	reg := adapter.NewRegistry()
	reg.Register("shell", shell.New()) // the hook fixtures of hooks.hcl
	l := loader.Load([]string{dir}, reg, nil, "9.9.9")
	if l.Diagnostics.HasErrors() || l.Snapshot == nil {
		t.Fatalf("the conformance example does not load:\n%s", render(l.Diagnostics))
	}
	defer l.Snapshot.Close()
	s := l.Snapshot
	// The directory is one config, its files in sorted order.
	if len(l.Files) < 2 || !slices.IsSorted(l.Files) || !slices.Contains(l.Files, filepath.Join(dir, "conformance.hcl")) {
		t.Errorf("Files = %v", l.Files)
	}
	var src string // every file, in load order
	for _, f := range l.Files {
		if l.Sources[f] == nil {
			t.Errorf("Sources has no text for %s", f)
		}
		src += string(l.Sources[f]) + "\n"
	}
	if s.Server.Name != "mcpd-conformance" || s.Server.Version != "1.0.0" {
		t.Errorf("Server = %+v", s.Server)
	}
	// Everything declared is there, tools in declaration order.
	decl := func(kind string) []string {
		var names []string
		for _, m := range regexp.MustCompile(`(?m)^`+kind+` "([^"]+)"`).FindAllStringSubmatch(src, -1) {
			names = append(names, m[1])
		}
		return names
	}
	var names []string
	for _, tool := range s.Tools {
		names = append(names, tool.Def.Name)
	}
	if want := decl("tool"); len(want) < 7 || !reflect.DeepEqual(names, want) {
		t.Errorf("tools in declaration order:\n got %v\nwant %v", names, want)
	}
	if len(s.Resources) != len(decl("resource")) || len(s.Templates) != len(decl("resource_template")) || len(s.Prompts) != len(decl("prompt")) {
		t.Errorf("got %d resources, %d templates, %d prompts", len(s.Resources), len(s.Templates), len(s.Prompts))
	}
}

// Tool names may use 1 to 128 of A-Z a-z 0-9 _ . - (the 129-character and
// spaced ones are in TestLoadBroken).
func TestLoadToolNameLimits(t *testing.T) {
	dir := t.TempDir()
	names := []string{strings.Repeat("a", 128), "x", "ns.tool-name_2", "0starts-with-digit", "UPPER"}
	var src strings.Builder
	for _, n := range names {
		src.WriteString("tool \"" + n + "\" {\n  description = \"ok\"\n}\n")
	}
	writeFile(t, filepath.Join(dir, "t.hcl"), src.String())
	l := loader.Load([]string{dir}, adapter.NewRegistry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("valid names refused:\n%s", render(l.Diagnostics))
	}
	defer l.Snapshot.Close()
	for _, n := range names {
		if _, ok := l.Snapshot.Tool(n); !ok {
			t.Errorf("no tool %q", n)
		}
	}
}

// Without a server block, the server is named mcpd with the binary's version.
func TestLoadServerDefaults(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "t.hcl"), "tool \"a\" {\n  description = \"A.\"\n}\n")
	l := loader.Load([]string{dir}, adapter.NewRegistry(), nil, "1.2.3")
	if l.Snapshot == nil {
		t.Fatal(render(l.Diagnostics))
	}
	defer l.Snapshot.Close()
	if l.Snapshot.Server.Name != "mcpd" || l.Snapshot.Server.Version != "1.2.3" {
		t.Errorf("Server = %+v", l.Snapshot.Server)
	}
}

func TestLoadMissingPath(t *testing.T) {
	l := loader.Load([]string{filepath.Join(t.TempDir(), "nope.hcl")}, adapter.NewRegistry(), nil, "test")
	if l.Snapshot != nil || !l.Diagnostics.HasErrors() {
		t.Fatalf("want an error, got %s", render(l.Diagnostics))
	}
	if d := l.Diagnostics[0]; d.Summary != "Cannot read config" || !strings.Contains(d.Detail, "nope.hcl") {
		t.Errorf("got %s", render(l.Diagnostics))
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
