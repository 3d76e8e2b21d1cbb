package main

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"time"
)

// result is one run's measurements. Latencies are in milliseconds, memory
// in bytes.
type result struct {
	Label      string  `json:"label"`
	Mode       string  `json:"mode"`
	Transport  string  `json:"transport"`
	Clients    int     `json:"clients"`
	Tool       string  `json:"tool,omitempty"`
	Seconds    float64 `json:"seconds"`
	Ops        int64   `json:"ops"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Rate       float64 `json:"ops_per_s"`
	P50        float64 `json:"p50_ms"`
	P90        float64 `json:"p90_ms"`
	P99        float64 `json:"p99_ms"`
	Max        float64 `json:"max_ms"`
	CPU        float64 `json:"server_cpu_s"`
	PerCPU     float64 `json:"ops_per_cpu_s"`
	RSSIdle    int64   `json:"rss_idle_bytes"`
	RSSPeak    int64   `json:"rss_peak_bytes"`
	Note       string  `json:"note,omitempty"`
	Time       string  `json:"time"`
}

func summarizeRun(o options, recs []recorder, wall, cpu time.Duration) *result {
	r := &result{Label: o.label, Mode: o.mode, Transport: o.transport, Clients: o.clients, Tool: o.tool, Time: time.Now().UTC().Format(time.RFC3339)}
	if o.mode == "startup" || o.mode == "reload" {
		r.Clients = 1
	}
	var lat []time.Duration
	for i := range recs {
		lat = append(lat, recs[i].lat...)
		if recs[i].errors > 0 && r.Errors == 0 {
			r.FirstError = recs[i].firstError
		}
		r.Errors += recs[i].errors
	}
	slices.Sort(lat)
	r.Ops = int64(len(lat))
	r.Seconds = wall.Seconds()
	if wall > 0 {
		r.Rate = float64(len(lat)) / wall.Seconds()
	}
	r.CPU = cpu.Seconds()
	if cpu > 0 {
		r.PerCPU = float64(len(lat)) / cpu.Seconds()
	}
	r.P50, r.P90, r.P99 = quantile(lat, 0.50), quantile(lat, 0.90), quantile(lat, 0.99)
	if len(lat) > 0 {
		r.Max = ms(lat[len(lat)-1])
	}
	return r
}

func quantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return ms(sorted[i])
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median[T int64 | float64](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func printHeader(mode string) {
	switch mode {
	case "startup", "reload":
		fmt.Printf("%-10s %-8s %-12s %5s %9s %9s %9s %9s %9s %10s  %s\n", "server", "mode", "transport", "n", "p50 ms", "p90 ms", "p99 ms", "min/max", "errors", "RSS MiB", "note")
	default:
		fmt.Printf("%-10s %-8s %-12s %4s %10s %8s %8s %8s %7s %8s %11s %9s %9s\n", "server", "mode", "transport", "C", "ops/s", "p50 ms", "p90 ms", "p99 ms", "errors", "CPU s", "ops/CPU-s", "RSS idle", "RSS peak")
	}
}

func printResult(r *result) {
	switch r.Mode {
	case "startup", "reload":
		rss := "-"
		if r.RSSIdle > 0 {
			rss = fmt.Sprintf("%.1f", mib(r.RSSIdle))
		}
		fmt.Printf("%-10s %-8s %-12s %5d %9.2f %9.2f %9.2f %9.2f %9d %10s  %s\n", r.Label, r.Mode, r.Transport, r.Ops, r.P50, r.P90, r.P99, r.Max, r.Errors, rss, r.Note)
	default:
		fmt.Printf("%-10s %-8s %-12s %4d %10.0f %8.3f %8.3f %8.3f %7d %8.2f %11.0f %9.1f %9.1f\n", r.Label, r.Mode, r.Transport, r.Clients, r.Rate, r.P50, r.P90, r.P99, r.Errors, r.CPU, r.PerCPU, mib(r.RSSIdle), mib(r.RSSPeak))
	}
}

type metric struct {
	name string
	get  func(*result) float64
}

func metricsFor(mode string) []metric {
	if mode == "startup" || mode == "reload" {
		return []metric{
			{"p50 ms", func(r *result) float64 { return r.P50 }},
			{"p90 ms", func(r *result) float64 { return r.P90 }},
			{"server CPU ms", func(r *result) float64 { return r.CPU * 1000 }},
			{"RSS MiB", func(r *result) float64 { return mib(r.RSSIdle) }},
		}
	}
	return []metric{
		{"ops/CPU-s", func(r *result) float64 { return r.PerCPU }},
		{"ops/s", func(r *result) float64 { return r.Rate }},
		{"p50 ms", func(r *result) float64 { return r.P50 }},
		{"p90 ms", func(r *result) float64 { return r.P90 }},
		{"p99 ms", func(r *result) float64 { return r.P99 }},
		{"RSS idle MiB", func(r *result) float64 { return mib(r.RSSIdle) }},
		{"RSS peak MiB", func(r *result) float64 { return mib(r.RSSPeak) }},
	}
}

// summarize prints the medians of each server's runs and the median of the
// per-pair ratios B/A.
func summarize(mode, labelA string, ra []*result, labelB string, rb []*result) {
	metrics := metricsFor(mode)
	fmt.Printf("\nsummary over %d interleaved pairs (medians; ratio = median of the per-pair ratios %s/%s)\n", len(ra), labelB, labelA)
	fmt.Printf("%-14s %12s %12s %10s\n", "metric", labelA, labelB, "ratio")
	for _, m := range metrics {
		var va, vb, ratios []float64
		for i := range ra {
			a, b := m.get(ra[i]), m.get(rb[i])
			va, vb = append(va, a), append(vb, b)
			if a > 0 {
				ratios = append(ratios, b/a)
			}
		}
		fmt.Printf("%-14s %12.3f %12.3f %9.3fx\n", m.name, median(va), median(vb), median(ratios))
	}
	var ratios []float64
	for i := range ra {
		if ra[i].PerCPU > 0 {
			ratios = append(ratios, rb[i].PerCPU/ra[i].PerCPU)
		}
	}
	sort.Float64s(ratios)
	if len(ratios) > 0 && mode != "startup" && mode != "reload" {
		fmt.Printf("per-pair ops/CPU-s ratios: %v\n", fmtFloats(ratios))
	}
}

// summarizeRuns prints the medians of one server's runs.
func summarizeRuns(mode, label string, rs []*result) {
	fmt.Printf("\nsummary over %d runs of %s (medians)\n", len(rs), label)
	for _, m := range metricsFor(mode) {
		var v []float64
		for _, r := range rs {
			v = append(v, m.get(r))
		}
		fmt.Printf("%-14s %12.3f\n", m.name, median(v))
	}
}

func fmtFloats(v []float64) string {
	s := ""
	for i, f := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.3f", f)
	}
	return s
}

func dialTCP(addr string) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, 100*time.Millisecond)
}
