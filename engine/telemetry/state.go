package telemetry

import (
	"database/sql"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ConfigState is what the reloader knows about the running config.
type ConfigState struct {
	Generation  int       // configs loaded since start: 1 for the first
	Successes   int       // successful reloads
	Failures    int       // reloads refused for errors
	LastSuccess time.Time // when the running config was loaded
}

// WatchConfig exports the reloader's state, read at every scrape.
func (m *Metrics) WatchConfig(state func() ConfigState) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpd_config_generation",
			Help: "Configs loaded since start (1 for the first); it grows by one with every successful reload.",
		}, func() float64 { return float64(state().Generation) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mcpd_config_last_success_timestamp_seconds",
			Help: "When the running config was loaded (Unix time).",
		}, func() float64 { return float64(state().LastSuccess.UnixNano()) / 1e9 }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "mcpd_config_reloads_total",
			Help:        "Config reloads by result.",
			ConstLabels: prometheus.Labels{"result": "success"},
		}, func() float64 { return float64(state().Successes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "mcpd_config_reloads_total",
			Help:        "Config reloads by result.",
			ConstLabels: prometheus.Labels{"result": "failure"},
		}, func() float64 { return float64(state().Failures) }),
	)
}

// WatchSessions exports the number of MCP sessions open, read at every
// scrape.
func (m *Metrics) WatchSessions(count func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcpd_sessions_open",
		Help: "MCP sessions open: the stdio client, 2025 HTTP sessions, and 2026 requests being served.",
	}, func() float64 { return float64(count()) }))
}

// PoolStats are the statistics of one database/sql pool.
type PoolStats struct {
	Database string // the database block's name
	Mode     string // "rw" or "ro"
	Stats    sql.DBStats
}

// WatchPools exports the SQL connection pools' statistics, read at every
// scrape from the running config's backends.
func (m *Metrics) WatchPools(pools func() []PoolStats) {
	m.reg.MustRegister(&poolCollector{pools: pools})
}

var (
	poolLabels = []string{"db_client_connection_pool_name", "mode"}
	poolConns  = prometheus.NewDesc("mcpd_db_client_connections",
		"Connections of a SQL pool by state (idle, used).", append(poolLabels, "db_client_connection_state"), nil)
	poolMax = prometheus.NewDesc("mcpd_db_client_connections_max",
		"Most connections a SQL pool opens (0: no limit).", poolLabels, nil)
	poolWaits = prometheus.NewDesc("mcpd_db_client_connection_waits_total",
		"Times a call waited for a free connection of a SQL pool.", poolLabels, nil)
	poolWaitTime = prometheus.NewDesc("mcpd_db_client_connection_wait_seconds_total",
		"Time calls spent waiting for a free connection of a SQL pool.", poolLabels, nil)
)

type poolCollector struct{ pools func() []PoolStats }

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolConns
	ch <- poolMax
	ch <- poolWaits
	ch <- poolWaitTime
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.pools() {
		s := p.Stats
		ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.Idle), p.Database, p.Mode, "idle")
		ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.InUse), p.Database, p.Mode, "used")
		ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxOpenConnections), p.Database, p.Mode)
		ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(s.WaitCount), p.Database, p.Mode)
		ch <- prometheus.MustNewConstMetric(poolWaitTime, prometheus.CounterValue, s.WaitDuration.Seconds(), p.Database, p.Mode)
	}
}
