package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/tasks"
)

// quickTaskConfig is a tool that answers at once and may run as a task.
const quickTaskConfig = `
tool "quick" {
  description = "Answers at once."
  task {}
  result {
    content "text" {
      text = "done"
    }
  }
}
`

// BenchmarkTaskOverhead is what running a short call as a task costs over
// a plain call, over HTTP (2026-07-28, one keep-alive connection):
// "plain" is one tools/call from a client that does not use tasks; "task"
// is the tools/call that creates the task plus the tasks/get requests
// until it has completed (polls/op says how many); "get" is one tasks/get
// of a completed task, in memory.
func BenchmarkTaskOverhead(b *testing.B) {
	cur := benchCurrent(b, quickTaskConfig)
	// Bounds large enough for every task of the run.
	m := tasks.NewManager(tasks.NewMemory(1<<22), tasks.Options{MaxKeptPerCaller: 1 << 22})
	srv := serve.New(cur, serve.Options{Logger: quiet, Tasks: m})
	ts := benchServer(b, srv.HTTPHandler(serve.HTTPOptions{JSONResponse: true}))
	const ext = `,"extensions":{"io.modelcontextprotocol/tasks":{}}`
	post := func(b *testing.B, method, name, params string, tasks bool) map[string]any {
		caps := `{}`
		if tasks {
			caps = `{` + ext[1:] + `}`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":%s}}}`, method, params, caps)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var msg struct {
			Result map[string]any
			Error  any
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &msg); err != nil || msg.Result == nil {
			b.Fatalf("%s: %s", method, out)
		}
		return msg.Result
	}
	call := `"name":"quick","arguments":{}`
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if r := post(b, "tools/call", "quick", call, false); r["content"] == nil {
				b.Fatalf("not a plain result: %v", r)
			}
		}
	})
	b.Run("task", func(b *testing.B) {
		polls := 0
		for b.Loop() {
			r := post(b, "tools/call", "quick", call, true)
			id, _ := r["taskId"].(string)
			for {
				polls++
				if g := post(b, "tasks/get", id, fmt.Sprintf(`"taskId":%q`, id), true); g["status"] == "completed" {
					break
				}
			}
		}
		b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
	})
	b.Run("get", func(b *testing.B) {
		r := post(b, "tools/call", "quick", call, true)
		id, _ := r["taskId"].(string)
		for post(b, "tasks/get", id, fmt.Sprintf(`"taskId":%q`, id), true)["status"] != "completed" {
		}
		for b.Loop() {
			post(b, "tasks/get", id, fmt.Sprintf(`"taskId":%q`, id), true)
		}
	})
}
