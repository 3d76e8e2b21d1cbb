package telemetry

import "github.com/prometheus/client_golang/prometheus"

// DriftCount is how many definitions of one source and kind were found to
// differ from the lock file, by the policy applied (engine/snapshot's
// pins.go): each definition counts once per digest.
type DriftCount struct {
	Source, Kind, Policy string
	Count                int64
}

var definitionDrift = prometheus.NewDesc("mcpd_definition_drift_total",
	"Definitions an upstream listed that differed from the lock file (or that it did not hold), by source (mcp_server.NAME), kind and the policy applied: quarantine (hidden until approved), allow (served), refuse (the upstream hidden). Each definition counts once per new digest.",
	[]string{"source", "kind", "policy"}, nil)

// WatchDrift exports the drift counters, read at every scrape.
func (m *Metrics) WatchDrift(counts func() []DriftCount) {
	m.reg.MustRegister(&driftCollector{counts: counts})
}

type driftCollector struct{ counts func() []DriftCount }

func (c *driftCollector) Describe(ch chan<- *prometheus.Desc) { ch <- definitionDrift }

func (c *driftCollector) Collect(ch chan<- prometheus.Metric) {
	for _, d := range c.counts() {
		ch <- prometheus.MustNewConstMetric(definitionDrift, prometheus.CounterValue, float64(d.Count), d.Source, d.Kind, d.Policy)
	}
}
