package serve_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// Tools for TestTasksCountAgainstLimits: "hold" runs as a task until its
// release file exists and reserves 1.2 MiB of output budget (three times
// two streams of 200 KiB); "small" is a plain call reserving 0.2 MiB.
const taskLimitsConfig = `
tool "hold" {
  param "marker" {
    type = "string"
  }
  param "release" {
    type = "string"
  }
  task {}
  shell {
    command          = ["sh", "-c", "echo > \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.02; done; echo held", "sh", args.marker, args.release]
    max_output_bytes = 204800
    timeout          = "60s"
  }
}

tool "small" {
  shell {
    command          = ["echo", "small"]
    max_output_bytes = 34133
  }
}
`

// A task counts against --max-inflight and the output budget as a plain
// call does: with 2 slots (so one for tasks) and a budget of 1.25 MiB, a
// running task refuses a second task's creation at once with the busy
// error, while plain calls still run; its reservation makes a plain call
// that does not fit beside it wait for budget; once it has ended, the
// waiting call runs and a new task is created.
func TestTasksCountAgainstLimits(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(taskLimitsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("shell", shell.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, MaxInflight: 2, OutputBudget: 1280 << 10, OutputBudgetWait: 60 * time.Second})
	ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{JSONResponse: true}))
	t.Cleanup(ts.Close)
	client := &http.Client{Timeout: 90 * time.Second}

	post := func(method, name string, params map[string]any) map[string]any {
		t.Helper()
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": modern,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", modern)
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("%s: %v", method, err)
			return nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Errorf("%s: %s", method, body)
		}
		return out
	}
	tmp := t.TempDir()
	release := filepath.Join(tmp, "release")
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	hold := func(marker string) map[string]any {
		return post("tools/call", "hold", map[string]any{"name": "hold", "arguments": map[string]any{"marker": filepath.Join(tmp, marker), "release": release}})
	}
	taskID := func(m map[string]any) string {
		r, _ := m["result"].(map[string]any)
		id, _ := r["taskId"].(string)
		return id
	}

	first := taskID(hold("first"))
	if first == "" {
		t.Fatal("the first hold call made no task")
	}
	wait.Until(t, "the first task to run", func() bool { _, err := os.Stat(filepath.Join(tmp, "first")); return err == nil })

	// The tasks' share of the slots is full: refused at once.
	got := hold("second")
	e, _ := got["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32000) || !strings.Contains(e["message"].(string), "tasks are running, as many as --max-inflight (2) lets tasks hold") {
		t.Fatalf("second task while the first runs: %v, want the busy error naming --max-inflight", got)
	}
	if _, err := os.Stat(filepath.Join(tmp, "second")); err == nil {
		t.Fatal("the refused task's program ran")
	}

	// The running task holds 1.2 MiB of the 1.25 MiB budget: a plain call
	// reserving 0.2 MiB waits for it.
	small := make(chan map[string]any, 1)
	go func() {
		small <- post("tools/call", "small", map[string]any{"name": "small", "arguments": map[string]any{}})
	}()
	wait.Until(t, "the plain call to wait for the task's budget", func() bool { return srv.BudgetWaiters() == 1 })

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := <-small; r == nil || !strings.Contains(toJSON(r), "small") || strings.Contains(toJSON(r), `"isError":true`) {
		t.Fatalf("plain call once the task ended: %v", r)
	}
	wait.Until(t, "the first task to complete", func() bool {
		g := post("tasks/get", first, map[string]any{"taskId": first})
		r, _ := g["result"].(map[string]any)
		return r != nil && r["status"] == "completed"
	})
	// Its slots are back: another task runs.
	third := taskID(hold("third"))
	if third == "" {
		t.Fatal("no task created once the first ended")
	}
	wait.Until(t, "the third task to complete", func() bool {
		g := post("tasks/get", third, map[string]any{"taskId": third})
		r, _ := g["result"].(map[string]any)
		return r != nil && r["status"] == "completed"
	})
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
