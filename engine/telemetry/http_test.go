package telemetry

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
