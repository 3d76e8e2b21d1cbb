package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/sharedstate"
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

// WatchSharedState exports the shared state's health and its fallbacks,
// read at every scrape; status returns nil when the running config has no
// state block (the metrics are then absent). The counters are the Store's:
// a reload that changes the state block starts them again (a counter
// reset).
func (m *Metrics) WatchSharedState(status func() *sharedstate.Status) {
	m.reg.MustRegister(&stateCollector{status: status})
}

var (
	stateUp = prometheus.NewDesc("mcpd_shared_state_up",
		"1 while the shared state (Redis of the state block) answers, 0 while the tools' limits fall back (on_state_failure).", nil, nil)
	stateFailures = prometheus.NewDesc("mcpd_shared_state_failures_total",
		"Operations on the shared state that failed because it did not answer.", nil, nil)
	stateFallbacks = prometheus.NewDesc("mcpd_shared_state_fallbacks_total",
		"Calls of fail-open tools admitted by this replica's own limits while the shared state was down.", nil, nil)
	stateRefusals = prometheus.NewDesc("mcpd_shared_state_refusals_total",
		"Calls of fail-closed tools refused while the shared state was down.", nil, nil)
	stateChecks = prometheus.NewDesc("mcpd_shared_state_limit_checks_total",
		"Rate-limit checks sent to the shared state (one script run decides a batch of them).", nil, nil)
	stateLocal = prometheus.NewDesc("mcpd_shared_state_local_admits_total",
		"Rate-limited calls admitted from tokens this replica reserved, without a round trip (local_reserve).", nil, nil)
	stateMismatches = prometheus.NewDesc("mcpd_shared_state_cache_mismatches_total",
		"Cached results the shared state answered that were bound to another key or altered (each was a miss: the tool ran).", nil, nil)
)

type stateCollector struct{ status func() *sharedstate.Status }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- stateUp
	ch <- stateFailures
	ch <- stateFallbacks
	ch <- stateRefusals
	ch <- stateChecks
	ch <- stateLocal
	ch <- stateMismatches
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	if st == nil {
		return
	}
	up := 0.0
	if st.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(stateUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(stateFailures, prometheus.CounterValue, float64(st.Failures))
	ch <- prometheus.MustNewConstMetric(stateFallbacks, prometheus.CounterValue, float64(st.Fallbacks))
	ch <- prometheus.MustNewConstMetric(stateRefusals, prometheus.CounterValue, float64(st.Refusals))
	ch <- prometheus.MustNewConstMetric(stateChecks, prometheus.CounterValue, float64(st.LimitChecks))
	ch <- prometheus.MustNewConstMetric(stateLocal, prometheus.CounterValue, float64(st.LocalAdmits))
	ch <- prometheus.MustNewConstMetric(stateMismatches, prometheus.CounterValue, float64(st.CacheMismatches))
}

// WatchPools exports the statistics of the connection pools of the running
// config's backends (adapter.PoolReporter), read at every scrape.
func (m *Metrics) WatchPools(pools func() []adapter.PoolStats) {
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

type poolCollector struct{ pools func() []adapter.PoolStats }

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- poolConns
	ch <- poolMax
	ch <- poolWaits
	ch <- poolWaitTime
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.pools() {
		ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(p.Idle), p.Name, p.Mode, "idle")
		ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(p.InUse), p.Name, p.Mode, "used")
		ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(p.MaxOpen), p.Name, p.Mode)
		ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(p.WaitCount), p.Name, p.Mode)
		ch <- prometheus.MustNewConstMetric(poolWaitTime, prometheus.CounterValue, p.WaitDuration.Seconds(), p.Name, p.Mode)
	}
}

// WatchServices exports the state of the supervised services of the
// running config's backends (adapter.ServiceReporter: MCP upstreams), read
// at every scrape.
func (m *Metrics) WatchServices(services func() []adapter.ServiceStatus) {
	m.reg.MustRegister(&serviceCollector{services: services})
}

var (
	upstreamLabels = []string{"upstream", "transport"}
	upstreamUp     = prometheus.NewDesc("mcpd_upstream_up",
		"1 when an MCP upstream is connected, 0 otherwise (starting, down, not started yet).", append(upstreamLabels, "state"), nil)
	upstreamRestarts = prometheus.NewDesc("mcpd_upstream_restarts_total",
		"Times an MCP upstream's connection (or process) was lost and made again.", upstreamLabels, nil)
	upstreamCalls = prometheus.NewDesc("mcpd_upstream_calls_total",
		"Calls sent to an MCP upstream.", upstreamLabels, nil)
	upstreamFailures = prometheus.NewDesc("mcpd_upstream_call_failures_total",
		"Calls that could not reach an MCP upstream or that it refused with a protocol error.", upstreamLabels, nil)
	upstreamTools = prometheus.NewDesc("mcpd_upstream_tools",
		"Tools an MCP upstream listed last (0 when it is not listed: no expose block).", upstreamLabels, nil)
	upstreamSessions = prometheus.NewDesc("mcpd_upstream_pool_sessions",
		"Sessions of an HTTP MCP upstream's pool (calls whose client can be asked), idle or in use by a call.", append(upstreamLabels, "state"), nil)
	upstreamConnects = prometheus.NewDesc("mcpd_upstream_pool_connects_total",
		"Sessions an HTTP MCP upstream's pool connected (one handshake each).", upstreamLabels, nil)
	upstreamUnattributed = prometheus.NewDesc("mcpd_upstream_unattributed_messages_total",
		"Messages an MCP upstream sent that could not be attributed to a live call of their caller, and were dropped, by kind: request (elicitation, sampling, roots), log (a record), progress.", append(upstreamLabels, "kind"), nil)
	upstreamStderrDropped = prometheus.NewDesc("mcpd_upstream_stderr_dropped_lines_total",
		"Lines of a stdio MCP upstream's stderr left out of the log: over its rate.", upstreamLabels, nil)
	upstreamStrayLines = prometheus.NewDesc("mcpd_upstream_stdout_skipped_lines_total",
		"Lines of a stdio MCP upstream's stdout skipped because they were not JSON-RPC messages.", upstreamLabels, nil)
	upstreamDropped = prometheus.NewDesc("mcpd_upstream_dropped_total",
		"Definitions (tools, prompts, resources) and messages of an MCP upstream left out, by reason: schema (validating against it could be unbounded), depth (nested deeper than mcpd decodes), identifier (control characters, terminal escapes, invisible or bidi characters in a name, URI or other identifier: entries of its listings, counted at every listing, completion values, resource links and contents of its results).", append(upstreamLabels, "reason"), nil)
)

type serviceCollector struct {
	services func() []adapter.ServiceStatus
}

func (c *serviceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{upstreamUp, upstreamRestarts, upstreamCalls, upstreamFailures, upstreamTools, upstreamDropped, upstreamSessions, upstreamConnects, upstreamUnattributed, upstreamStderrDropped, upstreamStrayLines} {
		ch <- d
	}
}

func (c *serviceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.services() {
		up := 0.0
		if s.State == "up" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upstreamUp, prometheus.GaugeValue, up, s.Name, s.Transport, s.State)
		ch <- prometheus.MustNewConstMetric(upstreamRestarts, prometheus.CounterValue, float64(s.Restarts), s.Name, s.Transport)
		ch <- prometheus.MustNewConstMetric(upstreamCalls, prometheus.CounterValue, float64(s.Calls), s.Name, s.Transport)
		ch <- prometheus.MustNewConstMetric(upstreamFailures, prometheus.CounterValue, float64(s.Failures), s.Name, s.Transport)
		ch <- prometheus.MustNewConstMetric(upstreamTools, prometheus.GaugeValue, float64(s.Tools), s.Name, s.Transport)
		ch <- prometheus.MustNewConstMetric(upstreamUnattributed, prometheus.CounterValue, float64(s.UnattributedRequests), s.Name, s.Transport, "request")
		ch <- prometheus.MustNewConstMetric(upstreamUnattributed, prometheus.CounterValue, float64(s.UnattributedRecords), s.Name, s.Transport, "log")
		ch <- prometheus.MustNewConstMetric(upstreamUnattributed, prometheus.CounterValue, float64(s.UnattributedProgress), s.Name, s.Transport, "progress")
		for _, reason := range []string{"schema", "depth", "identifier"} {
			ch <- prometheus.MustNewConstMetric(upstreamDropped, prometheus.CounterValue, float64(s.Dropped[reason]), s.Name, s.Transport, reason)
		}
		if s.Transport == "http" {
			ch <- prometheus.MustNewConstMetric(upstreamSessions, prometheus.GaugeValue, float64(s.IdleSessions), s.Name, s.Transport, "idle")
			ch <- prometheus.MustNewConstMetric(upstreamSessions, prometheus.GaugeValue, float64(s.BusySessions), s.Name, s.Transport, "in_use")
			ch <- prometheus.MustNewConstMetric(upstreamConnects, prometheus.CounterValue, float64(s.SessionConnects), s.Name, s.Transport)
		}
		if s.Transport == "stdio" {
			ch <- prometheus.MustNewConstMetric(upstreamStderrDropped, prometheus.CounterValue, float64(s.StderrDropped), s.Name, s.Transport)
			ch <- prometheus.MustNewConstMetric(upstreamStrayLines, prometheus.CounterValue, float64(s.StrayLines), s.Name, s.Transport)
		}
	}
}
