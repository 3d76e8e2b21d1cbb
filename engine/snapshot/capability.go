package snapshot

// DryRuns reports whether the tool's adapter honours adapter.WithDryRun
// (adapter.Traits): `mcpd test`'s expect_argv is for those tools.
func (t *Tool) DryRuns() bool { return t.traits.DryRuns }
