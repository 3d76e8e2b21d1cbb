package main

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
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
