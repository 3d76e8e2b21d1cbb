// Package telemetry is what mcpd tells operators about itself: Prometheus
// metrics on a private registry and OpenTelemetry traces exported over
// OTLP/HTTP. It knows nothing of MCP's transports; engine/serve reports to it
// and cmd/mcpd wires it.
//
// Label names follow the OpenTelemetry semantic conventions for MCP and HTTP
// where they exist, with dots turned into underscores (Prometheus label names
// cannot contain dots): gen_ai_tool_name, mcp_method_name, error_type,
// http_request_method, http_response_status_code. No label value comes from
// user input other than declared tool names.
package telemetry

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/event"
)

// UnknownTool is the tool label of calls to tools that are not declared.
const UnknownTool = "unknown"

// Metrics holds mcpd's collectors on a private registry. A nil *Metrics is
// valid and records nothing.
type Metrics struct {
	reg *prometheus.Registry

	calls      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	requests   *prometheus.HistogramVec
	streams    *prometheus.GaugeVec
	httpReqs   *prometheus.CounterVec
	httpTime   *prometheus.HistogramVec
	toolsets   *prometheus.CounterVec
	cache      *prometheus.CounterVec
	toolsCache sync.Map // tool name -> *toolSeries
	// okRequests are the requests histogram's children for success, by
	// method label, built once: the common case hashes no labels.
	okRequests map[string]prometheus.Observer
	// httpCounts caches the HTTP counter's children for the usual status
	// codes, by method and code index, each made on first use (a series
	// appears once it counts something): counting a request then neither
	// formats its code nor hashes its labels.
	httpCounts [len(httpMethods)][len(httpCodes)]atomic.Pointer[httpSeries]
}

// httpSeries are one method's and status code's children of the HTTP
// counter and histogram.
type httpSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// httpMethods are the values of the http_request_method label.
var httpMethods = [...]string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodPatch, "_OTHER"}

// httpCodes are the status codes whose series exist from the start.
var httpCodes = [...]int{200, 202, 204, 400, 401, 403, 404, 405, 406, 413, 415, 429, 500, 503}

// toolSeries caches one tool's children, so that a call does not hash its
// labels on every observation.
type toolSeries struct {
	outcomes map[string]prometheus.Counter
	duration prometheus.Observer
	// cache are the result cache's lookups by result, made on first use:
	// only cached tools have the series.
	cache [len(CacheResults)]atomic.Pointer[prometheus.Counter]
}

// CacheResults are the values of mcpd_tool_cache_lookups_total's result
// label: the snapshot's cache statuses.
var CacheResults = [...]string{"hit", "miss", "error"}

// NewMetricsFor returns the collectors, registered on a new registry
// together with the Go runtime and process collectors and mcpd_build_info,
// whose labels are bi's version, revision and Go version.
func NewMetricsFor(bi buildinfo.Info) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpd_tool_calls_total",
		Help: "Tool calls answered, by tool and outcome (ok, tool_error, protocol_error, cancelled).",
	}, []string{"gen_ai_tool_name", "outcome"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpd_tool_call_duration_seconds",
		Help:    "Time from receiving a tool call to its result, by tool.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"gen_ai_tool_name"})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "mcpd_tool_calls_in_flight",
		Help: "Tool calls being run now.",
	})
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpd_mcp_server_operation_duration_seconds",
		Help:    "MCP requests handled by mcpd, by method and error type (empty when none); mcp.server.operation.duration in the OpenTelemetry conventions.",
		Buckets: []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30},
	}, []string{"mcp_method_name", "error_type"})
	m.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcpd_streams_open",
		Help: "Long-lived notification streams open: kind=get (2025 sessions' GET /mcp) or kind=listen (2026 subscriptions/listen).",
	}, []string{"kind"})
	m.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpd_http_requests_total",
		Help: "HTTP requests served, by method and status code.",
	}, []string{"http_request_method", "http_response_status_code"})
	// http.server.request.duration, with the buckets the OpenTelemetry
	// conventions recommend. Long-lived streams (GET /mcp,
	// subscriptions/listen) end in the top buckets when they close.
	m.httpTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpd_http_server_request_duration_seconds",
		Help:    "Time from reading an HTTP request's header to the end of its answer, by method and status code; http.server.request.duration in the OpenTelemetry conventions.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10},
	}, []string{"http_request_method", "http_response_status_code"})
	m.toolsets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpd_toolset_calls_total",
		Help: "Calls (kind: tool, resource, prompt) answered through a toolset's endpoint (/mcp/<toolset>, stdio --toolset, or /mcp serving server.default_toolset), by toolset, kind and outcome.",
	}, []string{"toolset", "kind", "outcome"})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpd_tool_cache_lookups_total",
		Help: "Result cache lookups of cached tools, by tool and result: hit (answered from the cache), miss (the tool ran; its result was stored unless an error), error (the shared store failed: the tool ran without the cache).",
	}, []string{"gen_ai_tool_name", "result"})
	m.okRequests = map[string]prometheus.Observer{"other": m.requests.WithLabelValues("other", "")}
	for method := range mcpMethods {
		m.okRequests[method] = m.requests.WithLabelValues(method, "")
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "mcpd_build_info",
		Help:        "Always 1; the labels say which mcpd is running: version, revision (the commit; empty when the binary has no VCS stamp) and goversion.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.GoVersion},
	})
	build.Set(1)
	m.reg.MustRegister(m.cache, m.calls, m.duration, m.inFlight, m.requests, m.streams, m.httpReqs, m.httpTime, m.toolsets, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the private registry, for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) tool(name string) *toolSeries {
	if ts, ok := m.toolsCache.Load(name); ok {
		return ts.(*toolSeries)
	}
	ts := &toolSeries{outcomes: map[string]prometheus.Counter{}, duration: m.duration.WithLabelValues(name)}
	for _, o := range event.Outcomes {
		ts.outcomes[o] = m.calls.WithLabelValues(name, o)
	}
	actual, _ := m.toolsCache.LoadOrStore(name, ts)
	return actual.(*toolSeries)
}

// CallStarted counts a tool call as in flight; call CallDone when answered.
func (m *Metrics) CallStarted() {
	if m != nil {
		m.inFlight.Inc()
	}
}

// CallDone records an answered tool call. tool must be a declared tool's
// name or UnknownTool; outcome one of event.Outcomes.
func (m *Metrics) CallDone(tool, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.inFlight.Dec()
	ts := m.tool(tool)
	ts.outcomes[outcome].Inc()
	ts.duration.Observe(took.Seconds())
}

// ToolsetCallDone records a call (of an event kind) answered through the
// endpoint of toolset, a declared toolset's name.
func (m *Metrics) ToolsetCallDone(toolset, kind, outcome string) {
	if m != nil {
		m.toolsets.WithLabelValues(toolset, kind, outcome).Inc()
	}
}

// CacheLookup records a cached tool's lookup: result is one of
// CacheResults ("hit", "miss", "error"); any other value is ignored.
func (m *Metrics) CacheLookup(tool, result string) {
	if m == nil {
		return
	}
	for i, r := range CacheResults {
		if r != result {
			continue
		}
		slot := &m.tool(tool).cache[i]
		c := slot.Load()
		if c == nil {
			n := m.cache.WithLabelValues(tool, r)
			slot.CompareAndSwap(nil, &n)
			c = slot.Load()
		}
		(*c).Inc()
		return
	}
}

// CacheStats are the in-memory result cache's size.
type CacheStats struct {
	Entries   int
	Bytes     int64
	MaxBytes  int64
	Evictions uint64
}

// WatchCache exports the in-memory result cache's size, read at every
// scrape; stats returns false when the running config caches nothing in
// memory.
func (m *Metrics) WatchCache(stats func() (CacheStats, bool)) {
	get := func(f func(CacheStats) float64) func() float64 {
		return func() float64 {
			st, ok := stats()
			if !ok {
				return 0
			}
			return f(st)
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpd_tool_cache_entries", Help: "Results held by the in-memory result cache."},
			get(func(s CacheStats) float64 { return float64(s.Entries) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpd_tool_cache_bytes", Help: "Bytes held by the in-memory result cache (results' JSON size plus a fixed overhead per entry)."},
			get(func(s CacheStats) float64 { return float64(s.Bytes) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "mcpd_tool_cache_max_bytes", Help: "The in-memory result cache's bound (server cache block's max_bytes)."},
			get(func(s CacheStats) float64 { return float64(s.MaxBytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mcpd_tool_cache_evictions_total", Help: "Results the in-memory result cache evicted to stay within its bound."},
			get(func(s CacheStats) float64 { return float64(s.Evictions) })),
	)
}

// WatchReplays exports the requestStates refused because they had
// already run their tool (one run per confirmation), read at every
// scrape.
func (m *Metrics) WatchReplays(refused func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mcpd_requeststate_replays_refused_total",
		Help: "requestStates refused because they had already run their tool (one run per confirmation), on this replica or, with a state block, on another.",
	}, func() float64 { return float64(refused()) }))
}

// mcpMethods are the methods recorded under their own name; anything else
// (a method only a future client sends) is "other", so that no request can
// add a series.
var mcpMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true, "resources/subscribe": true,
	"resources/unsubscribe": true, "completion/complete": true, "logging/setLevel": true, "server/discover": true,
	"subscriptions/listen": true, "notifications/initialized": true, "notifications/cancelled": true,
	"notifications/roots/list_changed": true, "notifications/progress": true,
	"tasks/get": true, "tasks/update": true, "tasks/cancel": true,
}

// MethodLabel is the mcp_method_name value recorded for method.
func MethodLabel(method string) string {
	if mcpMethods[method] {
		return method
	}
	return "other"
}

// RequestDone records one MCP request by method; errorType is "" when it
// succeeded.
func (m *Metrics) RequestDone(method, errorType string, took time.Duration) {
	if m == nil {
		return
	}
	if errorType == "" {
		m.okRequests[MethodLabel(method)].Observe(took.Seconds())
		return
	}
	m.requests.WithLabelValues(MethodLabel(method), errorType).Observe(took.Seconds())
}

// StreamOpened counts a notification stream of a kind ("get", "listen") as
// open; the returned func closes it.
func (m *Metrics) StreamOpened(kind string) (closed func()) {
	if m == nil {
		return func() {}
	}
	g := m.streams.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// HTTPMiddleware counts next's requests and records their durations by
// method and status code.
func (m *Metrics) HTTPMiddleware(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			code := sw.code
			if code == 0 {
				code = http.StatusOK
			}
			s := m.httpSeries(r.Method, code)
			s.count.Inc()
			s.duration.Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}

// httpSeries returns the series of an HTTP request's method and status
// code.
func (m *Metrics) httpSeries(method string, code int) *httpSeries {
	label := httpMethod(method)
	mi, ci := len(httpMethods)-1, -1
	for i, hm := range httpMethods {
		if hm == label {
			mi = i
			break
		}
	}
	for i, hc := range httpCodes {
		if hc == code {
			ci = i
			break
		}
	}
	if ci < 0 {
		return m.newHTTPSeries(httpMethods[mi], code)
	}
	slot := &m.httpCounts[mi][ci]
	if s := slot.Load(); s != nil {
		return s
	}
	s := m.newHTTPSeries(httpMethods[mi], code)
	slot.Store(s)
	return s
}

func (m *Metrics) newHTTPSeries(method string, code int) *httpSeries {
	c := strconv.Itoa(code)
	return &httpSeries{count: m.httpReqs.WithLabelValues(method, c), duration: m.httpTime.WithLabelValues(method, c)}
}

// httpMethod bounds the method label, as the HTTP conventions do.
func httpMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodPatch:
		return m
	}
	return "_OTHER"
}

// statusWriter records the status code. It forwards Flush (SSE needs it)
// and unwraps for http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
