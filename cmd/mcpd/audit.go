package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// auditCloseWait bounds how long an exit waits for the audit log's last
// lines to be written: a destination that blocks must not hold it up.
const auditCloseWait = 5 * time.Second

type auditFlags struct {
	path  string
	queue int
}

func addAuditFlags(fs *flag.FlagSet) *auditFlags {
	a := &auditFlags{}
	fs.StringVar(&a.path, "audit-log", "", "write an audit line (JSON) per tool call, resource read and prompt get to this file, reopened on SIGHUP; - for stderr (default: off)")
	fs.IntVar(&a.queue, "audit-log-queue", 4096, "audit lines that may wait for a slow audit log before new ones are dropped (and counted in mcpd_audit_dropped_total)")
	return a
}

// openAudit opens the audit log, or returns nil when no path is set (the
// audit log is off). Its dropped-lines counter is exported either way.
func openAudit(a *auditFlags, logger *slog.Logger, m *telemetry.Metrics) (*audit.Logger, error) {
	var l *audit.Logger
	if path := a.path; path != "" {
		if a.queue < 1 {
			return nil, fmt.Errorf("--audit-log-queue must be at least 1, got %d", a.queue)
		}
		var err error
		if l, err = audit.Open(path, audit.Options{Logger: logger, QueueSize: a.queue}); err != nil {
			return nil, err
		}
		logger.Info("writing the audit log", "path", path)
	}
	m.WatchAuditDropped(l.Dropped)
	return l, nil
}

// closeAudit writes the audit lines still queued, those of the calls
// answered during a drain included.
func closeAudit(l *audit.Logger, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), auditCloseWait)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		logger.Warn("closing the audit log", "err", err)
	}
}
