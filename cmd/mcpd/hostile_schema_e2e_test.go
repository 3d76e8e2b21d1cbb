package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

// hostileUpstreamEnv names the mode of the test binary run as a stdio MCP
// upstream (TestMain): its value is "SET:FILE", the tools it lists
// (hostileServer) and a file where it writes the time of its first
// tools/list answer.
const hostileUpstreamEnv = "HOSTILE_SCHEMA_UPSTREAM"

// Schemas an upstream mcpd does not control may send.
var (
	// Validating against it recurses without end: a Go stack overflow,
	// which no recover catches, ended mcpd on the first call.
	cyclicSchema = `{"type":"object","$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`
	// Bounded by the depth of the arguments.
	recursiveSchema = `{"type":"object","properties":{"x":{"$ref":"#"}}}`
)

// tooDeepSchema is nested past the SDK's JSON decoding depth (1000): the
// SDK's client failed the whole tools/list, and the session with it. (A
// *jsonschema.Schema, which the SDK's server sends without decoding it.)
func tooDeepSchema() *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for range 600 {
		s = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": s}}
	}
	return s
}

// hostileServer is an MCP server listing a good tool beside tools with
// hostile schemas: set "cycles" (cyclic, cyclic_output, and recursive,
// which is fine) or "deep"; listed is called once it has answered a
// tools/list.
func hostileServer(set string, listed func()) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	echo := func(name string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + string(req.Params.Arguments)}}}, nil
		}
	}
	for _, t := range []struct {
		name   string
		schema any
		set    string
	}{
		{"good", json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`), ""},
		{"cyclic", json.RawMessage(cyclicSchema), "cycles"},
		{"recursive", json.RawMessage(recursiveSchema), "cycles"},
		{"cyclic_output", json.RawMessage(`{"type":"object"}`), "cycles"},
		{"deep", tooDeepSchema(), "deep"},
	} {
		if t.set != "" && t.set != set {
			continue
		}
		tool := &mcp.Tool{Name: t.name, InputSchema: t.schema}
		if t.name == "cyclic_output" {
			tool.OutputSchema = json.RawMessage(cyclicSchema)
		}
		s.AddTool(tool, echo(t.name))
	}
	if set == "cycles" {
		// Asks with a cyclic form: the SDK checks the client's answer
		// against it.
		var form map[string]any
		_ = json.Unmarshal([]byte(cyclicSchema), &form)
		s.AddTool(&mcp.Tool{Name: "ask_cyclic", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Which?", RequestedSchema: form})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered: " + res.Action}}}, nil
		})
	}
	var once sync.Once
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				once.Do(listed)
			}
			return res, err
		}
	})
	return s
}

// runHostileUpstream serves hostileServer on stdio (the test binary as a
// stdio upstream of mcpd).
func runHostileUpstream(mode string) int {
	set, stampFile, _ := strings.Cut(mode, ":")
	s := hostileServer(set, func() {
		_ = os.WriteFile(stampFile, []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644)
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// An upstream that lists tools with hostile schemas beside a good one,
// over stdio and HTTP, in both eras: mcpd drops what it cannot validate
// within bounds (a $ref cycle in an input or output schema: its
// validation overflowed the stack and ended mcpd; a schema deeper than
// the SDK decodes: it failed the whole listing and ended the session)
// with a logged, counted reason; a call to a dropped tool is an unknown
// tool, never a crash; arguments nested too deep for a recursive schema
// are a tool error; the good tool keeps serving.
func TestGatewayHostileUpstreamSchemas(t *testing.T) {
	for _, set := range []string{"cycles", "deep"} {
		for _, transport := range []string{"stdio", "http"} {
			for _, era := range []string{"2025-11-25", "2026-07-28"} {
				t.Run(set+"/"+transport+"/"+era, func(t *testing.T) {
					testHostileUpstream(t, set, transport, era)
				})
			}
		}
	}
}

func testHostileUpstream(t *testing.T, set, transport, era string) {
	var listedAt func() time.Time
	var block string
	switch transport {
	case "stdio":
		stamp := filepath.Join(t.TempDir(), "listed")
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		block = fmt.Sprintf(`command = [%q]
  env = { %s = %q }`, exe, hostileUpstreamEnv, set+":"+stamp)
		listedAt = func() time.Time {
			b, err := os.ReadFile(stamp)
			if err != nil {
				return time.Time{}
			}
			n, _ := strconv.ParseInt(string(b), 10, 64)
			return time.Unix(0, n)
		}
	case "http":
		var mu sync.Mutex
		var at time.Time
		s := hostileServer(set, func() {})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: era >= "2026-07-28"})
		// The listing's time is when its answer is written whole.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			if bytes.Contains(body, []byte(`"tools/list"`)) {
				mu.Lock()
				if at.IsZero() {
					at = time.Now()
				}
				mu.Unlock()
			}
		}))
		t.Cleanup(srv.Close)
		block = fmt.Sprintf("url = %q", srv.URL)
		listedAt = func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	}
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "hostile" {
  %s
  protocol_version = %q
  expose {
    prefix = "up_"
  }
}
`, block, era)})
	endpoint, logs := startHTTPLogs(t, mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir))
	base := strings.TrimSuffix(endpoint, "/mcp")

	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"x": "y"}}, nil
		},
	})
	// The client answers before the SDK's client checks its answer
	// against the form: that check would overflow this test's stack on
	// a cyclic form that mcpd relayed, where the point is mcpd's.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "elicitation/create" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"x": "y"}}, nil
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	// Polled by calling it: a client of the 2026 protocol may keep a
	// listing for its ttlMs.
	var served time.Time
	wait.Until(t, "up_good serves", func() bool {
		r, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_good", Arguments: map[string]any{"x": "hi"}})
		if err != nil || r.IsError {
			return false
		}
		served = time.Now()
		return true
	})
	if at := listedAt(); !at.IsZero() {
		t.Logf("the good tool served %s after the upstream's listing", served.Sub(at).Round(time.Millisecond))
	}

	dropped, kept := []string{"up_deep"}, []string{"up_good"}
	wantDrops := map[string]int{"schema": 0, "depth": 1}
	wantLog := []string{`upstream tool dropped: nested deeper than mcpd decodes" upstream=hostile name=deep`}
	if set == "cycles" {
		dropped, kept = []string{"up_cyclic", "up_cyclic_output"}, []string{"up_good", "up_recursive"}
		wantDrops = map[string]int{"schema": 2, "depth": 0}
		wantLog = []string{`upstream tool dropped: its schema is refused" upstream=hostile tool=cyclic `, `tool=cyclic_output`}

		// The call that ended mcpd: now an unknown tool.
		if r, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_cyclic", Arguments: map[string]any{}}); err == nil && !r.IsError {
			t.Errorf("up_cyclic: %q; want an error", textOf(r))
		}
		if r, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_cyclic_output", Arguments: map[string]any{}}); err == nil && !r.IsError {
			t.Errorf("up_cyclic_output: %q; want an error", textOf(r))
		}
		// Arguments deeper than the bound, for a schema that recurses
		// with them: a tool error the model can act on.
		var deep any = "leaf"
		for range 100 {
			deep = map[string]any{"x": deep}
		}
		r, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_recursive", Arguments: deep})
		if err != nil {
			t.Fatalf("up_recursive: %v (mcpd's log:\n%s)", err, logs.String())
		}
		if !r.IsError || !strings.Contains(textOf(r), "nested more than 64 levels deep") {
			t.Errorf("up_recursive, 100 levels: %v %q; want the depth tool error", r.IsError, textOf(r))
		}
		r, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_recursive", Arguments: map[string]any{"x": map[string]any{"x": map[string]any{}}}})
		if err != nil || r.IsError {
			t.Errorf("up_recursive, 3 levels: %v %v", err, r)
		}
		// A question with a cyclic form (relayed in the 2025 era: the
		// SDK's server checked the answer against the form, and ended
		// mcpd): refused, and the upstream hears so.
		if era == "2025-11-25" {
			r, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_ask_cyclic", Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("up_ask_cyclic: %v (mcpd's log:\n%s)", err, logs.String())
			}
			if !strings.Contains(textOf(r), "elicitation failed") || !strings.Contains(textOf(r), "form mcpd refuses") {
				t.Errorf("up_ask_cyclic: %v %q; want the upstream told its form is refused", r.IsError, textOf(r))
			}
			wantDrops["schema"]++
			wantLog = append(wantLog, "upstream elicitation refused: its form's schema is refused")
		}
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	r, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_good", Arguments: map[string]any{"x": "again"}})
	if err != nil || r.IsError || !strings.Contains(textOf(r), "good:") {
		t.Fatalf("up_good after the rest: %v %v (mcpd's log:\n%s)", err, r, logs.String())
	}
	lc := mcp.NewClient(&mcp.Implementation{Name: "lister", Version: "1"}, nil)
	ls, err := lc.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	names := toolNames(t, ls)
	for _, n := range dropped {
		if names[n] {
			t.Errorf("%s is listed; want it dropped", n)
		}
	}
	for _, n := range kept {
		if !names[n] {
			t.Errorf("%s is not listed: %v", n, names)
		}
	}

	// Counted and logged, and the session was never lost.
	_, metrics := httpGet(t, base+"/metrics")
	for reason, n := range wantDrops {
		want := fmt.Sprintf(`mcpd_upstream_dropped_total{reason=%q,transport=%q,upstream="hostile"} %d`, reason, transport, n)
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s:\n%s", want, grepLines(metrics, "mcpd_upstream"))
		}
	}
	if want := `mcpd_upstream_restarts_total{transport="` + transport + `",upstream="hostile"} 0`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics has no %s:\n%s", want, grepLines(metrics, "mcpd_upstream"))
	}
	log := logs.String()
	for _, want := range wantLog {
		if !strings.Contains(log, want) {
			t.Errorf("mcpd's log has no %s:\n%s", want, grepLines(log, "dropped"))
		}
	}
	if strings.Contains(log, "upstream connection ended") {
		t.Errorf("the upstream's session was lost:\n%s", grepLines(log, "upstream"))
	}
}
