package telemetry

import "github.com/prometheus/client_golang/prometheus"

// WatchAuditDropped exports the number of audit lines dropped because the
// audit log's destination did not keep up, read at every scrape.
func (m *Metrics) WatchAuditDropped(dropped func() uint64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mcpd_audit_dropped_total",
		Help: "Audit log lines dropped because the writer fell behind (its queue was full) or a write failed.",
	}, func() float64 { return float64(dropped()) }))
}
