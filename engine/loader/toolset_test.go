package loader_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// Each file (or directory) under testdata/toolsets is one mistake in a
// toolset block, paired with the one error it must produce: where, and a
// fragment of what it says.
func TestLoadToolsetErrors(t *testing.T) {
	tests := []struct {
		path, pos, want string
	}{
		{"unknown_tool.hcl", "unknown_tool.hcl:27:12", `Unknown tool in toolset: toolset "support": no tool is named "get_tiket". Did you mean "get_ticket"?`},
		{"unknown_prompt.hcl", "unknown_prompt.hcl:28:14", `Unknown prompt in toolset: toolset "support": no prompt is named "replly". Did you mean "reply"?`},
		{"unknown_resource.hcl", "unknown_resource.hcl:27:16", `Unknown resource in toolset: toolset "support": no resource is named "docs://faqs". Did you mean "docs://faq"?`},
		{"unknown_exclusion.hcl", "unknown_exclusion.hcl:27:17", `no tool is named "close_tiket". Did you mean "close_ticket"?`},
		{"duplicate", "duplicate/b.hcl:1:1", `Duplicate toolset "support": toolset "support" is declared here and at testdata/toolsets/duplicate/a.hcl:26:1.`},
		{"bad_name.hcl", "bad_name.hcl:26:9", `Invalid toolset name: "1support" must start with a letter`},
		{"empty.hcl", "empty.hcl:26:1", `Empty toolset: toolset "support" selects nothing`},
		{"not_a_list.hcl", "not_a_list.hcl:27:11", "Invalid list: tools must be a list of names or patterns"},
		{"empty_entry.hcl", "empty_entry.hcl:27:26", `Invalid pattern: "" is not a name or a pattern`},
		{"not_a_string.hcl", "not_a_string.hcl:27:26", "Invalid pattern: each entry of tools must be a string"},
		{"default_unknown.hcl", "default_unknown.hcl:2:21", `Unknown toolset: default_toolset: no toolset is named "suport". Did you mean "support"? Declared toolsets: support.`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			l := loader.Load([]string{filepath.Join("testdata", "toolsets", tc.path)}, adapter.NewRegistry(), nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
				t.Errorf("a broken config produced a snapshot")
			}
			wantPos := filepath.Join("testdata", "toolsets", tc.pos)
			if !hasDiag(l.Diagnostics, wantPos, tc.want) {
				t.Errorf("want an error at %s containing %q; got:\n%s", wantPos, tc.want, render(l.Diagnostics))
			}
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

// A pattern that matches nothing is a warning, not an error: the config is
// served, and the toolset holds what its other entries match.
func TestLoadToolsetPatternMatchesNothing(t *testing.T) {
	l := loader.Load([]string{filepath.Join("testdata", "toolsets", "pattern_matches_nothing.hcl")}, adapter.NewRegistry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("no snapshot:\n%s", render(l.Diagnostics))
	}
	defer l.Snapshot.Close()
	var warnings []string
	for _, d := range l.Diagnostics {
		if d.Severity == hcl.DiagWarning && d.Subject != nil {
			warnings = append(warnings, config.Pos(*d.Subject)+" "+d.Summary+": "+d.Detail)
		}
	}
	want := []string{filepath.Join("testdata", "toolsets", "pattern_matches_nothing.hcl") + `:27:21 Pattern matches nothing: toolset "support": no tool matches "search_*" (yet).`}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings %q, want %q", warnings, want)
	}
	ts, ok := l.Snapshot.Toolset("support")
	if !ok {
		t.Fatal("no toolset support")
	}
	var names []string
	for _, tl := range ts.All().Tools {
		names = append(names, tl.Def.Name)
	}
	if !slices.Equal(names, []string{"get_ticket"}) {
		t.Errorf("members %v, want [get_ticket]", names)
	}
}
