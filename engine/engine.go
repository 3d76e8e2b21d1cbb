// Package engine ties mcpd's load path together: config files in, one
// compiled snapshot out. The serve and reload packages build on it; the CLI
// calls it for validate, list and call.
package engine

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/auth"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Loaded is the outcome of one load: the snapshot (nil when there were
// errors), every diagnostic, and the sources for printing them.
type Loaded struct {
	Snapshot    *snapshot.Snapshot
	Diagnostics hcl.Diagnostics
	Sources     map[string][]byte
	// Files are the config files read; Referenced the files they read
	// through file() and friends. Together, what a reload watches.
	Files, Referenced []string
	// Config is the loaded config (nil when nothing could be read), for
	// what reads it beside the snapshot: `mcpd test`'s test blocks.
	Config *config.Config
}

// Load reads the config at paths and compiles it. prev, when not nil, is the
// snapshot being served, whose unchanged backends are carried over.
func Load(paths []string, reg *adapter.Registry, prev *snapshot.Snapshot, version string) *Loaded {
	cfg, diags := config.Load(paths, config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()})
	out := &Loaded{Diagnostics: diags}
	if cfg == nil {
		return out
	}
	out.Sources, out.Files, out.Referenced = cfg.Sources, cfg.Files, cfg.Referenced
	out.Config = cfg
	// Compile even when loading found errors, so that one run reports every
	// problem it can; the result is only kept when there were none.
	snap, d := snapshot.Build(cfg, reg, prev, version)
	out.Diagnostics = append(out.Diagnostics, d...)
	var prevAuth *auth.Config
	if prev != nil {
		prevAuth = prev.Auth
	}
	authCfg, d := auth.Compile(cfg.Auth, prevAuth, auth.Options{})
	diags = append(diags, d...)
	out.Diagnostics = append(out.Diagnostics, d...)
	if snap != nil {
		snap.Auth = authCfg
	}
	if snap != nil && diags.HasErrors() {
		snap.Discard(prev)
		snap = nil
	}
	out.Snapshot = snap
	return out
}
