package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes the protobuf
// ExportTraceServiceRequest the exporter posts to /v1/traces.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (rcv *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "unexpected "+r.URL.Path+" "+r.Header.Get("Content-Type"), http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rcv.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rcv.spans = append(rcv.spans, ss.Spans...)
		}
	}
	rcv.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (rcv *otlpReceiver) find(name string) *tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, s := range rcv.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// With an OTLP endpoint, a tool call is a SERVER span "tools/call {tool}"
// parented on the traceparent the client put in params._meta, with the MCP
// attributes, and the adapter's work is its child span; the spans reach a
// real OTLP/HTTP receiver when mcpd shuts down. Health and metrics move to
// --admin-http.
func TestTracesOverOTLP(t *testing.T) {
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()

	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir, "--admin-http", "127.0.0.1:0")
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	endpoint, logs := startHTTPLogs(t, cmd)
	m := adminRE.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no admin address in the log:\n%s", logs.String())
	}
	admin := "http://" + m[1]
	if code, _ := httpGet(t, admin+"/readyz"); code != 200 {
		t.Errorf("admin /readyz: %d", code)
	}
	if code, _ := httpGet(t, strings.TrimSuffix(endpoint, "/mcp")+"/metrics"); code != 404 {
		t.Errorf("/metrics on the MCP listener with --admin-http: %d", code)
	}

	cs := connectHTTP(t, endpoint, "2025-11-25", nil)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{
		Name:      "sleep",
		Arguments: map[string]any{"seconds": "0"},
		Meta:      mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
	})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	if code, body := httpGet(t, admin+"/metrics"); code != 200 || !strings.Contains(body, `mcpd_tool_calls_total{gen_ai_tool_name="sleep",outcome="ok"} 1`) {
		t.Errorf("admin /metrics: %d\n%s", code, grepLines(body, "mcpd_tool_calls_total"))
	}
	cmd.Process.Signal(syscall.SIGTERM) // flushes the spans
	if code, _ := waitExit(t, cmd, 15e9); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, logs.String())
	}

	server := rcv.find("tools/call sleep")
	if server == nil {
		t.Fatalf("no span \"tools/call sleep\"; got %d spans", len(rcv.spans))
	}
	if hex.EncodeToString(server.TraceId) != traceID || hex.EncodeToString(server.ParentSpanId) != parentID {
		t.Errorf("server span trace %x parent %x, want the client's %s %s", server.TraceId, server.ParentSpanId, traceID, parentID)
	}
	if server.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span kind %v", server.Kind)
	}
	for key, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "sleep", "mcp.protocol.version": "2025-11-25"} {
		if got := spanAttr(server, key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if spanAttr(server, "mcp.session.id") == "" {
		t.Error("no mcp.session.id")
	}
	child := rcv.find("shell sleep")
	if child == nil {
		t.Fatal("no adapter span \"shell sleep\"")
	}
	if !bytes.Equal(child.ParentSpanId, server.SpanId) || !bytes.Equal(child.TraceId, server.TraceId) {
		t.Errorf("adapter span parent %x, want %x", child.ParentSpanId, server.SpanId)
	}
	if child.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("adapter span kind %v", child.Kind)
	}
}

// spanAttrValue is the value of an attribute as text, whatever its type.
func spanAttrValue(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if _, isInt := kv.Value.Value.(*commonpb.AnyValue_IntValue); isInt {
				return strconv.FormatInt(kv.Value.GetIntValue(), 10), true
			}
			return kv.Value.GetStringValue(), true
		}
	}
	return "", false
}

// The spans of adapters that call a remote service are CLIENT spans with
// the attributes of OpenTelemetry's semantic conventions: HTTP client
// attributes for the http adapter (the query's values never in url.full),
// database attributes for the sql adapter. They come from the adapters'
// capability (adapter.Remote), not from the engine knowing their names.
func TestAdapterSpanAttributesOverOTLP(t *testing.T) {
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id": 7}`))
	}))
	defer api.Close()
	u, _ := url.Parse(api.URL)
	const secret = "k3y-s3cret-in-the-query"

	config := `
http_backend "api" {
  base_url = "` + api.URL + `/v1"
  query    = { api_key = "` + secret + `" }
}
tool "get_item" {
  description = "Fetches an item."
  param "id" { type = "string" }
  http {
    backend = "api"
    path    = "/items/${args.id}"
  }
}
database "local" {
  driver = "sqlite"
  dsn    = "file:spans.db"
}
tool "count" {
  description = "Counts."
  sql {
    database = "local"
    query    = "SELECT 1 AS n"
  }
}
`
	pg := os.Getenv("MCPD_TEST_POSTGRES_DSN")
	if pg != "" {
		config += `
database "pg" {
  driver = "postgres"
  dsn    = "` + pg + `"
}
tool "pg_now" {
  description = "Asks PostgreSQL the time."
  sql {
    database = "pg"
    query    = "SELECT now() AS t"
  }
}
`
	}
	dir := configDir(t, map[string]string{"tools.hcl": config})
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir)
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL)
	endpoint, logs := startHTTPLogs(t, cmd)
	cs := connectHTTP(t, endpoint, "2025-11-25", nil)
	calls := map[string]map[string]any{"get_item": {"id": "42"}, "count": {}}
	if pg != "" {
		calls["pg_now"] = map[string]any{}
	}
	for name, args := range calls {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{
			Name: name, Arguments: args,
			Meta: mcp.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, res)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM) // flushes the spans
	if code, _ := waitExit(t, cmd, 15e9); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, logs.String())
	}

	check := func(name string, want map[string]string) {
		t.Helper()
		s := rcv.find(name)
		if s == nil {
			t.Errorf("no span %q", name)
			return
		}
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("%s: kind %v, want CLIENT", name, s.Kind)
		}
		for key, w := range want {
			if got, ok := spanAttrValue(s, key); !ok || got != w {
				t.Errorf("%s: %s = %q (set: %v), want %q", name, key, got, ok, w)
			}
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.GetStringValue(), secret) {
				t.Errorf("%s: %s holds the query's secret: %q", name, kv.Key, kv.Value.GetStringValue())
			}
		}
	}
	check("http get_item", map[string]string{
		"http.request.method":       "GET",
		"server.address":            u.Hostname(),
		"server.port":               u.Port(),
		"url.full":                  api.URL + "/v1/items/42?api_key=REDACTED",
		"http.response.status_code": "200",
	})
	check("sql count", map[string]string{
		"db.system.name":    "sqlite",
		"db.operation.name": "SELECT",
		"db.query.text":     "SELECT 1 AS n",
	})
	if pg != "" {
		pu, err := url.Parse(pg)
		if err != nil {
			t.Fatal(err)
		}
		check("sql pg_now", map[string]string{
			"db.system.name":    "postgresql",
			"db.namespace":      strings.TrimPrefix(pu.Path, "/"),
			"server.address":    pu.Hostname(),
			"server.port":       pu.Port(),
			"db.operation.name": "SELECT",
		})
	}
}
