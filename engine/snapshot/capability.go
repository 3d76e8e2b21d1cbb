package snapshot

import "github.com/mcpd/mcpd/engine/adapter"

// DryRuns reports whether the tool's adapter honours adapter.WithDryRun
// (adapter.DryRunner): `mcpd test`'s expect_argv is for those tools.
func (t *Tool) DryRuns() bool {
	d, ok := t.handler.(adapter.DryRunner)
	return ok && d.DryRuns()
}
