package testrun

import (
	"maps"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
)

// Load reads the tests of a loaded config: its own test blocks and those of
// the *_test.hcl files that belong to paths (see config.TestFiles), and
// compiles them against its snapshot. It adds the test files' sources to
// l.Sources, so that diagnostics can quote them. With no snapshot (the
// config has errors) only the test files' syntax and structure are checked.
func Load(paths []string, l *loader.Loaded) ([]*Case, *config.Tests, hcl.Diagnostics) {
	tests, diags := config.LoadTests(paths, l.Config)
	if l.Sources == nil {
		l.Sources = map[string][]byte{}
	}
	maps.Copy(l.Sources, tests.Sources)
	if l.Snapshot == nil || l.Config == nil || diags.HasErrors() {
		return nil, tests, config.SortDiagnostics(diags)
	}
	cases, d := Compile(tests.Tests, l.Config, l.Snapshot, l.Registry)
	return cases, tests, config.SortDiagnostics(append(diags, d...))
}
