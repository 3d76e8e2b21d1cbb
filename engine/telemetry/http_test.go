package telemetry

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/buildinfo"
	dto "github.com/prometheus/client_model/go"
)

// Requests are counted by method label and status code, through the cached
// series for the usual codes and the labelled vector for the others.
func TestHTTPMiddlewareCounts(t *testing.T) {
	m := NewMetrics("test")
	h := m.HTTPMiddleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/teapot":
			w.WriteHeader(http.StatusTeapot)
		case "/busy":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/body":
			w.Write([]byte("ok"))
		}
	}))
	for _, req := range []struct{ method, path string }{
		{"POST", "/body"}, {"POST", "/body"}, {"GET", "/"}, {"POST", "/teapot"},
		{"BREW", "/teapot"}, {"BREW", "/"}, {"DELETE", "/busy"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	for _, tt := range []struct {
		method, code string
		want         float64
	}{
		{"POST", "200", 2}, {"GET", "200", 1}, {"POST", "418", 1}, {"_OTHER", "418", 1},
		{"_OTHER", "200", 1}, {"DELETE", "503", 1}, {"GET", "404", 0},
	} {
		if got := httpCount(t, m, tt.method, tt.code); got != tt.want {
			t.Errorf("%s %s: %v requests, want %v", tt.method, tt.code, got, tt.want)
		}
	}
}

// httpCount reads mcpd_http_requests_total for a method and code from the
// registry, as a scrape would.
func httpCount(t *testing.T, m *Metrics, method, code string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mcpd_http_requests_total" {
			continue
		}
		for _, metric := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["http_request_method"] == method && labels["http_response_status_code"] == code {
				return metric.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// Every request counted is also timed, in the histogram of its method and
// status code, and the time covers the handler's.
func TestHTTPMiddlewareDurations(t *testing.T) {
	m := NewMetrics("test")
	h := m.HTTPMiddleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(30 * time.Millisecond)
		}
		if r.Method == "DELETE" {
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	for _, req := range []struct{ method, path string }{{"POST", "/"}, {"POST", "/slow"}, {"DELETE", "/"}} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, req.path, nil))
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.Histogram{}
	for _, mf := range mfs {
		if mf.GetName() != "mcpd_http_server_request_duration_seconds" {
			continue
		}
		for _, metric := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["http_request_method"]+" "+labels["http_response_status_code"]] = metric.GetHistogram()
		}
	}
	if h := got["POST 200"]; h.GetSampleCount() != 2 || h.GetSampleSum() < 0.03 {
		t.Errorf("POST 200: %d requests taking %vs, want 2 taking at least 0.03s", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := got["DELETE 418"]; h.GetSampleCount() != 1 {
		t.Errorf("DELETE 418: %d requests, want 1", h.GetSampleCount())
	}
}

// mcpd_build_info names the version, and the commit and Go version of the
// binary (the test binary has no commit).
func TestBuildInfoLabels(t *testing.T) {
	mfs, err := NewMetrics("v9.9.9").Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mcpd_build_info" {
			continue
		}
		labels := map[string]string{}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		want := map[string]string{"version": "v9.9.9", "revision": "", "goversion": runtime.Version()}
		if !maps.Equal(labels, want) {
			t.Errorf("mcpd_build_info labels %v, want %v", labels, want)
		}
		return
	}
	t.Fatal("no mcpd_build_info")
}

// The middleware's cost per request: counting and timing one.
func BenchmarkHTTPMiddleware(b *testing.B) {
	m := NewMetrics("bench")
	h := m.HTTPMiddleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	req := httptest.NewRequest("POST", "/mcp", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, req)
	}
}

// NewMetrics is NewMetricsFor the running binary with this version.
func NewMetrics(version string) *Metrics { return NewMetricsFor(buildinfo.Read(version, "")) }
