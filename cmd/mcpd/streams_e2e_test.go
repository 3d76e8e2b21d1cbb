package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpd serve bounds every kind of long-lived stream together: with
// --max-streams-per-caller 2, a caller (here the loopback address, auth
// being off) holding a console event stream and a subscriptions/listen is
// refused a third of either kind with 429 and a JSON-RPC error naming the
// flag, and its calls are still answered.
func TestServeStreamLimits(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	s := startOps(t, dir, "--ui", "--max-streams-per-caller", "2")
	open := func(method, path, body string, hdr map[string]string) *http.Response {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, method, s.base+path, rd)
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	listen := func() *http.Response {
		return open("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`,
			map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
	}
	events := func() *http.Response { return open("GET", "/ui/events", "", nil) }

	if r := events(); r.StatusCode != 200 {
		t.Fatalf("console events: %d", r.StatusCode)
	}
	if r := listen(); r.StatusCode != 200 {
		t.Fatalf("listen: %d", r.StatusCode)
	}
	for name, r := range map[string]*http.Response{"console events": events(), "listen": listen()} {
		body, _ := io.ReadAll(r.Body)
		var msg struct{ Error struct{ Message string } }
		json.Unmarshal(body, &msg)
		if r.StatusCode != 429 || !strings.Contains(msg.Error.Message, "--max-streams-per-caller") {
			t.Errorf("third stream (%s): %d %s", name, r.StatusCode, body)
		}
	}
	cs := connectHTTP(t, s.endpoint, "2026-07-28", nil)
	if res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "count_books"}); err != nil || res.IsError {
		t.Errorf("a call while the caller holds its streams: %v %v", res, err)
	}
}
