package main

import (
	"context"
	"flag"
	"log/slog"
	"time"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// auditCloseWait bounds how long an exit waits for the audit log's last
// lines to be written: a destination that blocks must not hold it up.
const auditCloseWait = 5 * time.Second

func addAuditFlag(fs *flag.FlagSet) *string {
	return fs.String("audit-log", "", "write an audit line (JSON) per tool call, resource read and prompt get to this file, reopened on SIGHUP; - for stderr (default: off)")
}

// openAudit opens the audit log at path, or returns nil when path is empty
// (the audit log is off). Its dropped-lines counter is exported either way.
func openAudit(path string, logger *slog.Logger, m *telemetry.Metrics) (*audit.Logger, error) {
	var l *audit.Logger
	if path != "" {
		var err error
		if l, err = audit.Open(path, audit.Options{Logger: logger}); err != nil {
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
