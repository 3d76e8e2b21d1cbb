package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
)

// BenchmarkLegacyTaskOverhead is BenchmarkTaskOverhead for a 2025-11-25
// session over HTTP (one keep-alive connection, JSON answers): "plain" is
// one tools/call without params.task (the legacy fast path); "task" is the
// tools/call with params.task plus one tasks/result, which waits for the
// end; "get" is one tasks/get of a completed task, in memory.
func BenchmarkLegacyTaskOverhead(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(quickTaskConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	l := loader.Load([]string{dir}, newFake().registry(), nil, "test")
	if l.Snapshot == nil {
		b.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	defer cur.Load().Close()
	m := tasks.NewManager(tasks.NewMemory(1<<22), tasks.Options{MaxKeptPerCaller: 1 << 22})
	srv := serve.New(cur, serve.Options{Logger: quiet, Tasks: m})
	ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{JSONResponse: true}))
	defer ts.Close()
	sid := ""
	post := func(b *testing.B, method, params string) map[string]any {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s}}`, method, params)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if sid == "" {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
		if method == "notifications/initialized" {
			return nil
		}
		var msg struct {
			Result map[string]any
			Error  any
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &msg); err != nil || msg.Result == nil {
			b.Fatalf("%s: %s", method, out)
		}
		return msg.Result
	}
	post(b, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}`)
	body := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		b.Fatal(err)
	} else {
		resp.Body.Close()
	}
	call := `"name":"quick","arguments":{}`
	start := func(b *testing.B) string {
		r := post(b, "tools/call", call+`,"task":{"ttl":60000}`)
		task, _ := r["task"].(map[string]any)
		id, _ := task["taskId"].(string)
		if id == "" {
			b.Fatalf("no task: %v", r)
		}
		return id
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if r := post(b, "tools/call", call); r["content"] == nil {
				b.Fatalf("not a plain result: %v", r)
			}
		}
	})
	b.Run("task", func(b *testing.B) {
		for b.Loop() {
			id := start(b)
			if r := post(b, "tasks/result", fmt.Sprintf(`"taskId":%q`, id)); r["content"] == nil {
				b.Fatalf("tasks/result: %v", r)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		id := start(b)
		post(b, "tasks/result", fmt.Sprintf(`"taskId":%q`, id))
		for b.Loop() {
			post(b, "tasks/get", fmt.Sprintf(`"taskId":%q`, id))
		}
	})
}
