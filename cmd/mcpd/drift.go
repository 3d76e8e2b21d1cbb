package main

import (
	"time"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// watchDrift records each upstream definition found to differ from the
// lock file (engine/snapshot's pins.go) in the audit log, whatever the
// policy did with it, and exports the counts as
// mcpd_definition_drift_total. The observer is carried over by every
// reload.
func watchDrift(current *snapshot.Current, auditLog *audit.Logger, metrics *telemetry.Metrics, generation func() int) {
	if auditLog != nil {
		current.Load().OnDrift(func(d snapshot.Drift) {
			var paths []string
			for _, f := range d.Fields {
				paths = append(paths, f.Path)
			}
			args := map[string]any{"source": d.Key.Source, "kind": d.Key.Kind, "name": d.Key.Name, "status": d.Status, "changed": paths}
			if d.Now != nil {
				args["digest"] = d.Now.Digest
			}
			if d.Locked != nil {
				args["locked_digest"] = d.Locked.Digest
			}
			auditLog.Record(&audit.Entry{Time: time.Now(), Principal: "mcpd", AuthMethod: "none", Kind: "definition_drift",
				Name: d.Served, Arguments: args, Outcome: d.Policy, Generation: generation()})
		})
	}
	metrics.WatchDrift(func() []telemetry.DriftCount {
		var out []telemetry.DriftCount
		for _, c := range current.Load().DriftCounts() {
			out = append(out, telemetry.DriftCount{Source: c.Source, Kind: c.Kind, Policy: c.Policy, Count: c.Count})
		}
		return out
	})
}
