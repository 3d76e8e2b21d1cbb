package telemetry

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TaskStats are the tasks this replica runs, read at every scrape.
type TaskStats struct {
	// Running is how many tasks it runs (working or waiting for answers);
	// Oldest is the age of the oldest of them.
	Running int
	Oldest  time.Duration
}

// Tasks registers the metrics of tools run as tasks and returns the
// function that records a task's event: kind is "created", or the status
// it ended in ("completed", "failed", "cancelled"), and age how long it had
// run then. stats is read at every scrape. On a nil Metrics it registers
// nothing and the function does nothing.
func (m *Metrics) Tasks(stats func() TaskStats) func(kind string, age time.Duration) {
	if m == nil {
		return func(string, time.Duration) {}
	}
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpd_tasks_total",
		Help: "Tasks created (event=\"created\") and ended, by the status they ended in, on this replica (a task cancelled on another replica is counted there).",
	}, []string{"event"})
	ages := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpd_task_duration_seconds",
		Help:    "How long tasks ran, from creation to their end, by the status they ended in.",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600},
	}, []string{"status"})
	// A second server on the same Metrics (tests) keeps the first's
	// series.
	events = registerOnce(m.reg, events)
	ages = registerOnce(m.reg, ages)
	registerOnce(m.reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpd_tasks_running", Help: "Tasks this replica runs (working, or waiting for their user's answers)."},
		func() float64 { return float64(stats().Running) }))
	registerOnce(m.reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpd_task_oldest_running_seconds", Help: "The age of the oldest task this replica runs (0: none)."},
		func() float64 { return stats().Oldest.Seconds() }))
	for _, k := range []string{"created", "completed", "failed", "cancelled"} {
		events.WithLabelValues(k)
	}
	return func(kind string, age time.Duration) {
		switch kind {
		case "created":
		case "completed", "failed", "cancelled":
			ages.WithLabelValues(kind).Observe(age.Seconds())
		default:
			return
		}
		events.WithLabelValues(kind).Inc()
	}
}

// registerOnce registers c, or returns the collector registered already
// with its descriptions.
func registerOnce[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if prev, ok := are.ExistingCollector.(C); ok {
				return prev
			}
		}
		panic(err)
	}
	return c
}
