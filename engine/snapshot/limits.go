package snapshot

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/limits"
	"github.com/mcpd/mcpd/engine/sharedstate"
)

// Compiling a tool's limits (the stage itself, which a call runs, is
// engine/limits; docs/security.md, "Limits").

// serverLimits are the server block's defaults for every tool.
type serverLimits struct {
	defaultTimeout time.Duration
	maxTimeout     time.Duration // 0: no cap

	// hasState is true when the server declares a state block; state is
	// its Store (nil when the block's URL is unknown at load: validating
	// without the secrets).
	hasState bool
	state    *sharedstate.Store
}

func compileServerLimits(sv *config.Server) (serverLimits, hcl.Diagnostics) {
	// No engine timeout by default: every adapter already bounds its calls
	// (shell and SQL 30s, HTTP 30s per attempt), and a default here would
	// cut short the tools configured with a longer adapter timeout.
	out := serverLimits{}
	if sv == nil {
		return out, nil
	}
	var diags hcl.Diagnostics
	if sv.MaxTimeout != nil {
		d, dd := staticDuration(sv.MaxTimeout, nil)
		diags = append(diags, dd...)
		if !dd.HasErrors() && d == 0 {
			diags = append(diags, attrDiag(sv.MaxTimeout, "max_timeout must be more than 0s; leave it out for no cap"))
		}
		out.maxTimeout = d
	}
	if sv.DefaultTimeout != nil {
		d, dd := staticDuration(sv.DefaultTimeout, nil)
		diags = append(diags, dd...)
		out.defaultTimeout = d
		if !dd.HasErrors() && d == 0 {
			diags = append(diags, attrDiag(sv.DefaultTimeout, "default_timeout must be more than 0s; leave it out for none"))
		}
		if !dd.HasErrors() && out.maxTimeout > 0 && d > out.maxTimeout {
			diags = append(diags, attrDiag(sv.DefaultTimeout, fmt.Sprintf("default_timeout %s exceeds max_timeout %s", d, out.maxTimeout)))
		}
	} else {
		// A cap with no default is also the default: a tool that sets no
		// timeout must not run longer than one that does.
		out.defaultTimeout = out.maxTimeout
	}
	return out, diags
}

func compileLimits(tc *config.Tool, sl serverLimits) (*limits.Limits, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	spec := limits.Spec{Timeout: sl.defaultTimeout, QueueTimeout: limits.DefaultQueueTimeout}
	if tc.Timeout != nil {
		d, dd := staticDuration(tc.Timeout, nil)
		diags = append(diags, dd...)
		switch {
		case dd.HasErrors():
		case d == 0:
			diags = append(diags, attrDiag(tc.Timeout, "timeout must be more than 0s"))
		case sl.maxTimeout > 0 && d > sl.maxTimeout:
			diags = append(diags, attrDiag(tc.Timeout, fmt.Sprintf("timeout %s exceeds the server's max_timeout %s", d, sl.maxTimeout)))
		default:
			spec.Timeout = d
		}
	}
	if tc.MaxConcurrency != nil {
		n, d := staticCount(tc.MaxConcurrency, 1, 1<<16)
		diags = append(diags, d...)
		spec.MaxConc = n
	}
	if tc.QueueTimeout != nil {
		d, dd := staticDuration(tc.QueueTimeout, nil)
		diags = append(diags, dd...)
		if !dd.HasErrors() && tc.MaxConcurrency == nil {
			diags = append(diags, attrDiag(tc.QueueTimeout, "queue_timeout is how long a call waits for one of max_concurrency slots; set max_concurrency too"))
		}
		spec.QueueTimeout = d
	}
	if rl := tc.RateLimit; rl != nil {
		if rl.PerTool == nil && rl.PerCaller == nil {
			rng := rl.DeclRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty rate_limit", Detail: "A rate_limit block sets per_tool, per_caller or both, such as per_caller = \"60/m\".", Subject: &rng})
		}
		for _, e := range []struct {
			attr *hcl.Attribute
			dst  **limits.Rate
		}{{rl.PerTool, &spec.PerTool}, {rl.PerCaller, &spec.PerCaller}} {
			if e.attr == nil {
				continue
			}
			r, d := staticRate(e.attr)
			diags = append(diags, d...)
			*e.dst = r
		}
		if rl.Burst != nil {
			n, d := staticCount(rl.Burst, 1, 1<<20)
			diags = append(diags, d...)
			spec.Burst = n
		}
		// With a state block, rates are global unless the author keeps
		// them per replica: a limit that changes with the replica count
		// is not the limit the author wrote.
		spec.RateGlobal = sl.hasState
		if rl.Scope != nil {
			global, d := staticScope(rl.Scope, sl.hasState)
			diags = append(diags, d...)
			spec.RateGlobal = global
		}
	}
	if tc.ConcurrencyScope != nil {
		// Per replica by default: max_concurrency is mostly there to
		// protect what a replica holds (its connection pool, its CPU, a
		// backend's per-client quota), and a global count costs two round
		// trips and a renewal per call.
		global, d := staticScope(tc.ConcurrencyScope, sl.hasState)
		diags = append(diags, d...)
		if !d.HasErrors() && tc.MaxConcurrency == nil {
			diags = append(diags, attrDiag(tc.ConcurrencyScope, "concurrency_scope says where max_concurrency is counted; set max_concurrency too"))
		}
		spec.ConcGlobal = global
	}
	spec.FailMode = sl.state.OnFailure()
	if tc.OnStateFailure != nil {
		if !sl.hasState {
			diags = append(diags, attrDiag(tc.OnStateFailure, "on_state_failure is what the tool's shared limits do while the shared state does not answer; the server has no state block"))
		} else {
			m, d := sharedstate.ParseFailMode(tc.OnStateFailure, nil)
			diags = append(diags, d...)
			spec.FailMode = m
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return limits.New(spec, sl.state), nil
}

// staticScope decodes "global" or "replica". "global" needs the state
// block.
func staticScope(a *hcl.Attribute, hasState bool) (global bool, diags hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return false, d
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return false, hcl.Diagnostics{attrDiag(a, a.Name+" is \"global\" or \"replica\"")}
	}
	switch v.AsString() {
	case "replica":
		return false, nil
	case "global":
		if !hasState {
			return false, hcl.Diagnostics{attrDiag(a, a.Name+" = \"global\" counts across replicas in the shared state, and the server has no state block: add server { state { redis = env(\"MCPD_REDIS_URL\") } } or use \"replica\"")}
		}
		return true, nil
	}
	return false, hcl.Diagnostics{attrDiag(a, fmt.Sprintf("%s is \"global\" (across replicas, in the shared state) or \"replica\" (each process alone), not %q", a.Name, v.AsString()))}
}

// staticCount decodes a whole number in [lo, hi], with the messages every
// adapter gives (adapter.IntValue).
func staticCount(a *hcl.Attribute, lo, hi int) (int, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return 0, d
	}
	n, d := adapter.IntValue(v, a.Expr.Range(), a.Name, int64(lo), int64(hi))
	return int(n), d
}

// staticRate parses "N/s", "N/m", "N/h" or "N/<duration>" ("100/10s").
func staticRate(a *hcl.Attribute) (*limits.Rate, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return nil, d
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return nil, hcl.Diagnostics{attrDiag(a, "a rate is a string such as \"10/s\", \"60/m\", \"1000/h\" or \"100/10s\"")}
	}
	r, err := limits.ParseRate(v.AsString())
	if err != nil {
		return nil, hcl.Diagnostics{attrDiag(a, err.Error())}
	}
	return r, nil
}
