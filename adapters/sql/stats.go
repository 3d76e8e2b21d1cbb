package sqladapter

import (
	"context"
	"database/sql"
	"fmt"
)

// The methods here let mcpd's operations side see a database backend
// without importing this package: cmd/mcpd finds them through small
// interfaces on the snapshot's backends.

// DatabaseName is the name of the database block.
func (b *backend) DatabaseName() string { return b.cfg.name }

// PoolStats returns the statistics of the backend's pools: "rw", and "ro"
// for the read-only pool of SQLite and MySQL.
func (b *backend) PoolStats() map[string]sql.DBStats {
	if b.db == nil {
		return map[string]sql.DBStats{}
	}
	out := map[string]sql.DBStats{"rw": b.db.Stats()}
	if b.ro != nil {
		out["ro"] = b.ro.Stats()
	}
	return out
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
