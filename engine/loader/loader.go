// Package loader loads a config into a snapshot: config.Load reads and
// decodes the files, snapshot.Build compiles them (carrying the running
// snapshot's unchanged backends over) and auth.Compile the auth block, and
// the outcome is one Loaded: the snapshot when there were no errors, and
// every diagnostic in one list, in file order, with the sources to print
// them. It is the one way in for everything that loads a config: mcpd serve
// and each reload (engine/reload), validate, list, call and test.
package loader

import (
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/auth"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Loaded is the outcome of one load: the snapshot (nil when there were
// errors), every diagnostic (in file order), and the sources for printing
// them.
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
	// Registry holds the adapters the config was compiled with, for what
	// asks them for capabilities (`mcpd test`'s mocks: adapter.Mocker).
	Registry *adapter.Registry
}

// Load reads the config at paths and compiles it. prev, when not nil, is the
// snapshot being served, whose unchanged backends are carried over.
func Load(paths []string, reg *adapter.Registry, prev *snapshot.Snapshot, version string) *Loaded {
	return LoadWith(paths, reg, prev, version, Options{})
}

// Options change how a config is loaded.
type Options struct {
	// UnsetEnvWarning is for checking a config without its secrets (`mcpd
	// validate`): an unset variable is a warning instead of an error, and
	// the snapshot is kept. It must not be served: env() of an unset
	// variable is an unknown value there, and the checks that need it were
	// skipped.
	UnsetEnvWarning bool
	// CheckOnly loads a config to check it, never to serve it (`mcpd
	// validate`, the editor's diagnostics): nothing shared is dialed (see
	// snapshot.BuildOptions).
	CheckOnly bool
	// Overlay replaces the contents of config files by name, for an
	// editor's unsaved buffers (see config.Options.Overlay).
	Overlay map[string][]byte
	// NoPinning loads the config without checking what backends contribute
	// against the lock file (`mcpd lock`, which writes it).
	NoPinning bool
}

// LoadWith is Load with options. Either way, a variable that env() reads
// without a default and that is not set is one diagnostic naming it, at its
// first use: env() returns an unknown value for it, the checks that need the
// value are skipped, and errors that only repeat it are dropped.
func LoadWith(paths []string, reg *adapter.Registry, prev *snapshot.Snapshot, version string, opts Options) *Loaded {
	cfg, diags := config.LoadWith(paths, config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()},
		config.Options{UnsetEnvUnknown: true, Overlay: opts.Overlay})
	out := &Loaded{Diagnostics: diags, Registry: reg}
	if cfg == nil {
		config.SortDiagnostics(out.Diagnostics)
		return out
	}
	defer func() {
		out.Diagnostics = config.SortDiagnostics(unsetEnvDiagnostics(out.Diagnostics, cfg.UnsetEnv, opts.UnsetEnvWarning))
	}()
	out.Sources, out.Files, out.Referenced = cfg.Sources, cfg.Files, cfg.Referenced
	out.Config = cfg
	// Compile even when loading found errors, so that one run reports every
	// problem it can; the result is only kept when there were none.
	// The lock file beside the config pins what upstreams contribute
	// (engine/lock); a reload watches it, so that an approval takes effect.
	lockPath := lock.PathFor(paths)
	lockFile, err := lock.Read(lockPath)
	if err != nil {
		out.Diagnostics = append(out.Diagnostics, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unreadable lock file",
			Detail: err.Error() + " The lock file pins what upstream MCP servers declare; see docs/gateway.md."})
		diags = append(diags, out.Diagnostics[len(out.Diagnostics)-1])
	}
	out.Referenced = append(slices.Clone(out.Referenced), lockPath)
	snap, d := snapshot.BuildWith(cfg, reg, prev, version, snapshot.BuildOptions{CheckOnly: opts.CheckOnly,
		Lock: lockFile, LockPath: lockPath, NoPinning: opts.NoPinning})
	out.Diagnostics = append(out.Diagnostics, notRepeated(d, diags)...)
	var prevAuth *auth.Config
	if prev != nil {
		prevAuth = prev.Auth
	}
	authCfg, d := auth.Compile(cfg.Auth, prevAuth, auth.Options{UnsetEnvUnknown: cfg.UnsetEnvUnknown})
	diags = append(diags, d...)
	out.Diagnostics = append(out.Diagnostics, d...)
	if snap != nil {
		snap.Auth = authCfg
	}
	if snap != nil && (diags.HasErrors() || (len(cfg.UnsetEnv) > 0 && !opts.UnsetEnvWarning)) {
		snap.Discard(prev)
		snap = nil
	}
	out.Snapshot = snap
	return out
}

// unsetEnvDiagnostics replaces what the unset variables caused with one
// diagnostic per variable, at its first env() call: an error, or a warning
// when warn. Errors whose subject contains one of the calls (the failed call
// itself, or an attribute that needed its value) are the same mistake again.
func unsetEnvDiagnostics(diags hcl.Diagnostics, calls []funcs.UnsetEnvCall, warn bool) hcl.Diagnostics {
	if len(calls) == 0 {
		return diags
	}
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil && containsCall(*d.Subject, calls) {
			continue
		}
		out = append(out, d)
	}
	uses := map[string]int{}
	for _, c := range calls {
		uses[c.Name]++
	}
	severity, consequence := hcl.DiagError, "It must be set to serve this config."
	if warn {
		severity, consequence = hcl.DiagWarning, "The checks that need its value were skipped; it must be set to serve this config (--strict makes this an error)."
	}
	var unset hcl.Diagnostics
	for _, c := range calls {
		n, ok := uses[c.Name]
		if !ok {
			continue
		}
		delete(uses, c.Name)
		more := ""
		if n > 1 {
			more = fmt.Sprintf(" It is read in %d places; this is the first.", n)
		}
		rng := c.Range
		unset = append(unset, &hcl.Diagnostic{
			Severity: severity,
			Summary:  "Environment variable not set",
			Detail: fmt.Sprintf("env(%q) has no default and %s is not set. %s%s Set it, or give a default: env(%q, \"...\").",
				c.Name, c.Name, consequence, more, c.Name),
			Subject: &rng,
		})
	}
	return append(unset, out...)
}

func containsCall(r hcl.Range, calls []funcs.UnsetEnvCall) bool {
	for _, c := range calls {
		if c.Range.Filename == r.Filename && r.Start.Byte < c.Range.End.Byte && c.Range.Start.Byte < r.End.Byte {
			return true
		}
	}
	return false
}

// notRepeated drops the errors of compiling that blame exactly what an error
// of loading already blames: compiling checks some things again on its own
// terms (a param's type, when its schema is built), and one mistake is one
// diagnostic.
func notRepeated(compiled, loaded hcl.Diagnostics) hcl.Diagnostics {
	blamed := map[hcl.Range]bool{}
	for _, d := range loaded {
		if d.Severity == hcl.DiagError && d.Subject != nil {
			blamed[*d.Subject] = true
		}
	}
	if len(blamed) == 0 {
		return compiled
	}
	var out hcl.Diagnostics
	for _, d := range compiled {
		if d.Severity == hcl.DiagError && d.Subject != nil && blamed[*d.Subject] {
			continue
		}
		out = append(out, d)
	}
	return out
}
