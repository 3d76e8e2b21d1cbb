package sqladapter

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/mcpd/mcpd/engine/adapter"
)

// The methods here let mcpd's operations side see a database backend
// without importing this package: cmd/mcpd asks the snapshot's backends
// for the capabilities adapter.PoolReporter and adapter.Pinger.

var (
	_ adapter.PoolReporter = (*backend)(nil)
	_ adapter.Pinger       = (*backend)(nil)
)

// PoolStats returns the statistics of the backend's pools: "rw", and "ro"
// for the read-only pool of SQLite and MySQL.
func (b *backend) PoolStats() []adapter.PoolStats {
	if b.db == nil {
		return nil
	}
	out := []adapter.PoolStats{poolStats(b.cfg.name, "rw", b.db.Stats())}
	if b.ro != nil {
		out = append(out, poolStats(b.cfg.name, "ro", b.ro.Stats()))
	}
	return out
}

func poolStats(name, mode string, s sql.DBStats) adapter.PoolStats {
	return adapter.PoolStats{Name: name, Mode: mode, Idle: s.Idle, InUse: s.InUse, MaxOpen: s.MaxOpenConnections, WaitCount: s.WaitCount, WaitDuration: s.WaitDuration}
}

// Ping checks that the database answers, for readiness checks. Its error
// never contains the DSN's secrets.
func (b *backend) Ping(ctx context.Context) error {
	if b.db == nil {
		return b.errNoDSN()
	}
	if err := b.db.PingContext(ctx); err != nil {
		return fmt.Errorf("database %q: %s", b.cfg.name, b.cfg.redact.String(err.Error()))
	}
	return nil
}
