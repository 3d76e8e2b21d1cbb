package mcpadapter

import (
	"context"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Pinning (engine/lock): what an expose block contributes is checked
// against the lock file by the engine, which asks the block for its
// policy (on_drift) and for each definition as the upstream listed it
// (ContributedTool.Declared). The adapter only declares; hiding, refusing
// and approving are the engine's.

// driftPolicy is a decoded on_drift.
type driftPolicy struct {
	policy   string // "quarantine" (default), "allow", "refuse"
	declared bool
}

func decodeOnDrift(d *adapter.Decoder, a *hcl.Attribute) driftPolicy {
	p := driftPolicy{policy: "quarantine"}
	if a == nil {
		return p
	}
	s, ok := d.String(a, "on_drift")
	if !ok {
		return p
	}
	switch s {
	case "quarantine", "allow", "refuse":
		p.policy, p.declared = s, true
	default:
		d.Errorf(a.Expr.Range(), "Invalid on_drift", `on_drift is "quarantine" (the default: a definition that differs from mcpd.lock, or that it does not hold, is hidden and refused until approved), "allow" (it is served, logged and audited) or "refuse" (nothing of the upstream is served until the lock is updated).`)
	}
	return p
}

// OnDrift is the block's on_drift (adapter.DriftPolicy).
func (c *serverConfig) OnDrift() (string, bool) { return c.drift.policy, c.drift.declared }

// Sync connects to the upstream and lists what its expose block
// contributes, waiting for both (adapter.Syncer: `mcpd lock`).
func (u *upstream) Sync(ctx context.Context) error {
	if u.cfg.expose == nil {
		return nil
	}
	if _, err := u.session(ctx); err != nil {
		return err
	}
	return u.catalog.list(listAll)
}
