package telemetry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/event"
)

// Health answers by state: alive always, ready until a drain begins or a
// backend check fails, with the config report in both bodies.
func TestHealth(t *testing.T) {
	report := ConfigReport{Generation: 2}
	report.LastReload.Result = "failure"
	report.LastReload.Diagnostics = "tools.hcl:3,3-7: Unsupported argument"
	for _, tc := range []struct {
		name            string
		ready           bool
		backends        map[string]string
		healthz, readyz int
		status          string
	}{
		{"serving", true, nil, 200, 200, "ok"},
		{"draining", false, nil, 200, 503, "draining"},
		{"backend down", true, map[string]string{"database main": "refused"}, 200, 503, "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Health{Ready: func() bool { return tc.ready }, Config: func() ConfigReport { return report }}
			if tc.backends != nil {
				h.CheckBackends = func(ctx context.Context) map[string]string {
					if _, ok := ctx.Deadline(); !ok {
						t.Error("backend check without a deadline")
					}
					return tc.backends
				}
			}
			for _, ep := range []struct {
				handler http.HandlerFunc
				want    int
			}{{h.Healthz, tc.healthz}, {h.Readyz, tc.readyz}} {
				rec := httptest.NewRecorder()
				ep.handler(rec, httptest.NewRequest("GET", "/", nil))
				var body healthBody
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatal(err)
				}
				if rec.Code != ep.want || body.Config.LastReload.Diagnostics != report.LastReload.Diagnostics {
					t.Errorf("%d %s", rec.Code, rec.Body)
				}
				if rec.Header().Get("Content-Type") != "application/json" {
					t.Errorf("content type %q", rec.Header().Get("Content-Type"))
				}
			}
			rec := httptest.NewRecorder()
			h.Readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
			if !strings.Contains(rec.Body.String(), `"status": "`+tc.status+`"`) {
				t.Errorf("readyz body %s, want status %s", rec.Body, tc.status)
			}
		})
	}
}

// Label values never come from a request: unknown methods and HTTP
// methods collapse to one value.
func TestBoundedLabels(t *testing.T) {
	for in, want := range map[string]string{"tools/call": "tools/call", "subscriptions/listen": "subscriptions/listen", "x/evil-" + strings.Repeat("a", 100): "other"} {
		if got := MethodLabel(in); got != want {
			t.Errorf("MethodLabel(%q) = %q", in, got)
		}
	}
	for in, want := range map[string]string{"GET": "GET", "POST": "POST", "BREW": "_OTHER"} {
		if got := httpMethod(in); got != want {
			t.Errorf("httpMethod(%q) = %q", in, got)
		}
	}
	// An unknown tool's calls are all one series.
	m := NewMetrics("test")
	m.CallStarted()
	m.CallDone(UnknownTool, event.OutcomeProtocolError, time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `mcpd_tool_calls_total{gen_ai_tool_name="unknown",outcome="protocol_error"} 1`) {
		t.Errorf("scrape:\n%s", rec.Body)
	}
}

// The W3C trace context round-trips through a request's _meta.
func TestMetaCarrier(t *testing.T) {
	meta := MetaCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "other": 5}
	ctx := propagation.TraceContext{}.Extract(context.Background(), meta)
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() {
		t.Fatalf("extracted %+v", sc)
	}
	out := MetaCarrier{}
	propagation.TraceContext{}.Inject(ctx, out)
	if out.Get("traceparent") != meta.Get("traceparent") {
		t.Errorf("injected %v", out)
	}
	if meta.Get("other") != "" {
		t.Error("a non-string _meta value read as a header")
	}
}

// A stdio upstream's dropped stderr lines and skipped stdout lines are
// exported; an HTTP upstream has none.
func TestUpstreamOutputCounters(t *testing.T) {
	m := NewMetrics("test")
	m.WatchServices(func() []adapter.ServiceStatus {
		return []adapter.ServiceStatus{
			{Name: "local", Transport: "stdio", State: "up", StderrDropped: 7, StrayLines: 3},
			{Name: "remote", Transport: "http", State: "up"},
		}
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`mcpd_upstream_stderr_dropped_lines_total{transport="stdio",upstream="local"} 7`,
		`mcpd_upstream_stdout_skipped_lines_total{transport="stdio",upstream="local"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in the scrape", want)
		}
	}
	if strings.Contains(body, `_lines_total{transport="http"`) {
		t.Errorf("an HTTP upstream has output counters:\n%s", body)
	}
}
