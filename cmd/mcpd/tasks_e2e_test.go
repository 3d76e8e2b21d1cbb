package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// tasksConfig has tools that run as tasks: one that runs a program for a
// while, one whose program starts a grandchild and waits (to see
// cancellation kill the process group), one that asks before it runs,
// and one that runs only as a task. Two API keys are two callers.
const tasksConfig = `
auth {
  header = "X-Api-Key"
  api_key "alice" {
    value = "alice-key-0123456789"
  }
  api_key "bob" {
    value = "bob-key-0123456789"
  }
}

tool "build" {
  description = "Runs for a few seconds"
  param "seconds" {
    type = "integer"
  }
  task {
    ttl            = "1m"
    max_per_caller = 3
  }
  shell {
    command = ["sh", "-c", "sleep \"$1\"; echo built", "sh", args.seconds]
  }
}

tool "spawn" {
  description = "Starts a grandchild and waits for it"
  param "pidfile" {
    type = "string"
  }
  task {}
  shell {
    command = ["sh", "-c", "sleep 300 & echo $! > \"$1\"; wait", "sh", args.pidfile]
    timeout = "10m"
  }
}

tool "deploy" {
  description = "Asks before it runs"
  task {}
  ask "go" {
    elicit = "Deploy now?"
    field "ok" { type = "boolean" }
  }
  shell {
    command = ["echo", "deployed"]
  }
}

tool "only_task" {
  description = "Runs only as a task"
  task {
    mode = "required"
  }
  result {
    content "text" {
      text = "ran"
    }
  }
}
`

// taskParams and the results of the extension's methods, for the go-sdk
// client's custom requests (the SDK does not implement tasks).
type taskParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses map[string]any `json:"inputResponses,omitempty"`
}

type taskResult struct {
	mcp.ResultBase
	ResultType    string                     `json:"resultType"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	StatusMessage string                     `json:"statusMessage"`
	TTLMs         int64                      `json:"ttlMs"`
	Result        *mcp.CallToolResult        `json:"result"`
	Error         *struct{ Code int64 }      `json:"error"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
}

// connectTasks connects a 2026-07-28 go-sdk client that declares the tasks
// extension, as the caller whose API key is key.
func connectTasks(t *testing.T, endpoint, key string, declare bool) *mcp.ClientSession {
	t.Helper()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	if declare {
		caps.Extensions = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "tasks-test", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if err := mcp.AddSendingCustomMethod[*taskParams, *taskResult](client, m); err != nil {
			t.Fatal(err)
		}
	}
	hc := &http.Client{Transport: keyTransport{header: "X-Api-Key", value: key, base: http.DefaultTransport}}
	cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func taskCall(t *testing.T, cs *mcp.ClientSession, method, id string, answers map[string]any) (*taskResult, error) {
	t.Helper()
	return mcp.CallCustomMethod[*taskParams, *taskResult](bounded(t), cs, method, &taskParams{TaskID: id, InputResponses: answers})
}

// startTask calls a tool and returns the id of the task it answered with,
// which the Go SDK's CallToolResult keeps in _meta.
func startTask(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	id, _ := rel["taskId"].(string)
	if id == "" {
		t.Fatalf("calling %s answered no task: %+v", name, res)
	}
	return id
}

func awaitStatus(t *testing.T, cs *mcp.ClientSession, id string, want ...string) *taskResult {
	t.Helper()
	var last *taskResult
	wait.Until(t, "task "+id+" to be "+strings.Join(want, " or "), func() bool {
		r, err := taskCall(t, cs, "tasks/get", id, nil)
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		last = r
		for _, w := range want {
			if r.Status == w {
				return true
			}
		}
		return false
	})
	return last
}

// A real go-sdk client of the 2026-07-28 protocol runs a shell task for a
// few seconds and polls it, answers the question a task asks through
// tasks/update, and cancels a task whose program started a grandchild:
// the process group is gone after. Another caller is told of the tasks
// exactly what an unknown id gets, and can neither see nor cancel them.
func TestTasksE2E(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, tasksConfig)
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	s := startOps(t, dir, "--audit-log", auditPath)
	alice := connectTasks(t, s.endpoint, "alice-key-0123456789", true)
	bob := connectTasks(t, s.endpoint, "bob-key-0123456789", true)

	t.Run("poll a running task", func(t *testing.T) {
		id := startTask(t, alice, "build", map[string]any{"seconds": 2})
		r, err := taskCall(t, alice, "tasks/get", id, nil)
		if err != nil || r.Status != "working" || r.TTLMs != 60000 {
			t.Fatalf("tasks/get at once: %+v, %v; want working, ttlMs 60000", r, err)
		}
		r = awaitStatus(t, alice, id, "completed")
		if r.Result == nil || r.Result.IsError || !strings.Contains(textOf(r.Result), "built") {
			t.Fatalf("result %+v, want the program's output", r.Result)
		}
	})

	t.Run("another caller", func(t *testing.T) {
		id := startTask(t, alice, "build", map[string]any{"seconds": 5})
		for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
			_, err := taskCall(t, bob, m, id, map[string]any{})
			_, errUnknown := taskCall(t, bob, m, "0123456789abcdef0123456789abcdef", map[string]any{})
			if rpcCode(err) != -32602 || err.Error() != errUnknown.Error() {
				t.Errorf("%s of another's task: %v; want exactly what an unknown id gets: %v", m, err, errUnknown)
			}
		}
		if r := awaitStatus(t, alice, id, "working", "completed"); r.Status != "working" {
			t.Errorf("bob's cancel reached alice's task: %s", r.Status)
		}
		taskCall(t, alice, "tasks/cancel", id, nil)
	})

	t.Run("cancel kills the process group", func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		id := startTask(t, alice, "spawn", map[string]any{"pidfile": pidfile})
		pid := readPIDFile(t, pidfile)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if processGone(pid) {
			t.Fatal("the grandchild is not running before the cancel")
		}
		ack, err := taskCall(t, alice, "tasks/cancel", id, nil)
		if err != nil || ack.ResultType != "complete" || ack.TaskID != "" {
			t.Fatalf("tasks/cancel: %+v, %v; want an empty ack", ack, err)
		}
		if r := awaitStatus(t, alice, id, "cancelled", "completed", "failed"); r.Status != "cancelled" {
			t.Fatalf("status %s after cancel, want cancelled", r.Status)
		}
		wait.Until(t, "the grandchild to be killed", func() bool { return processGone(pid) })
		// Idempotent: a cancel of an ended task is the same ack.
		if ack, err := taskCall(t, alice, "tasks/cancel", id, nil); err != nil || ack.ResultType != "complete" {
			t.Fatalf("second tasks/cancel: %+v, %v", ack, err)
		}
	})

	t.Run("answer what the task asks", func(t *testing.T) {
		id := startTask(t, alice, "deploy", nil)
		r := awaitStatus(t, alice, id, "input_required")
		if _, ok := r.InputRequests["go"]; !ok || len(r.InputRequests) != 1 {
			t.Fatalf("inputRequests %v, want the question \"go\"", r.InputRequests)
		}
		ack, err := taskCall(t, alice, "tasks/update", id, map[string]any{"go": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}})
		if err != nil || ack.ResultType != "complete" {
			t.Fatalf("tasks/update: %+v, %v", ack, err)
		}
		r = awaitStatus(t, alice, id, "completed", "failed")
		if r.Result == nil || !strings.Contains(textOf(r.Result), "deployed") {
			t.Fatalf("task %+v, want it completed with the program's output", r)
		}
	})

	t.Run("per caller bound", func(t *testing.T) {
		carol := connectTasks(t, s.endpoint, "bob-key-0123456789", true)
		var ids []string
		for range 3 {
			ids = append(ids, startTask(t, carol, "build", map[string]any{"seconds": 30}))
		}
		res, err := carol.CallTool(bounded(t), &mcp.CallToolParams{Name: "build", Arguments: map[string]any{"seconds": 30}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "tasks/cancel") {
			t.Fatalf("a fourth task: %+v, %v; want a tool error saying to wait or cancel", res, err)
		}
		for _, id := range ids {
			taskCall(t, carol, "tasks/cancel", id, nil)
		}
	})

	t.Run("metrics and audit", func(t *testing.T) {
		_, scrape := httpGet(t, s.base+"/metrics")
		for _, want := range []string{`mcpd_tasks_total{event="created"}`, `mcpd_tasks_total{event="cancelled"}`, `mcpd_task_duration_seconds_count{status="completed"}`, "mcpd_tasks_running "} {
			if !strings.Contains(scrape, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		wait.Until(t, "the audit lines of the tasks", func() bool {
			b, _ := os.ReadFile(auditPath)
			return strings.Contains(string(b), `"outcome":"cancelled"`) && strings.Contains(string(b), `"outcome":"completed"`)
		})
		b, _ := os.ReadFile(auditPath)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var e map[string]any
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("audit line %q: %v", line, err)
			}
			if e["kind"] == "task" && (e["principal"] != "alice" && e["principal"] != "bob" || e["task"] == "" || e["name"] == "") {
				t.Errorf("task audit line without its caller, task or tool: %s", line)
			}
		}
	})

	t.Run("a client that does not use tasks", func(t *testing.T) {
		plain := connectTasks(t, s.endpoint, "alice-key-0123456789", false)
		res, err := plain.CallTool(bounded(t), &mcp.CallToolParams{Name: "build", Arguments: map[string]any{"seconds": 0}})
		if err != nil || res.IsError || textOf(res) != "built\n" && textOf(res) != "built" {
			t.Fatalf("plain call: %+v, %v; want the result itself", res, err)
		}
		_, err = plain.CallTool(bounded(t), &mcp.CallToolParams{Name: "only_task"})
		if rpcCode(err) != -32021 {
			t.Fatalf("a task-only tool: %v, want -32021", err)
		}
		if _, err := taskCall(t, plain, "tasks/get", "x", nil); rpcCode(err) != -32021 {
			t.Fatalf("tasks/get without the extension: %v, want -32021", err)
		}
	})
}

// Two replicas share one Redis: a task created on one is polled, answered
// and cancelled on the other (the program's process group on the first is
// killed), and a replica killed with SIGKILL mid-task leaves its task
// failed once its lease runs out, not working forever.
func TestTasksAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	dir := writeConfig(t, fmt.Sprintf("server {\n  state {\n    redis = %q\n    key_prefix = %q\n  }\n}\n", url, prefix)+tasksConfig)
	a, b := startOps(t, dir), startOps(t, dir)
	onA := connectTasks(t, a.endpoint, "alice-key-0123456789", true)
	onB := connectTasks(t, b.endpoint, "alice-key-0123456789", true)
	bobOnB := connectTasks(t, b.endpoint, "bob-key-0123456789", true)

	t.Run("created on one, polled on the other", func(t *testing.T) {
		id := startTask(t, onA, "build", map[string]any{"seconds": 1})
		if r, err := taskCall(t, onB, "tasks/get", id, nil); err != nil || r.Status != "working" {
			t.Fatalf("tasks/get on B at once: %+v, %v", r, err)
		}
		if _, err := taskCall(t, bobOnB, "tasks/get", id, nil); rpcCode(err) != -32602 {
			t.Fatalf("another caller on B: %v, want -32602", err)
		}
		r := awaitStatus(t, onB, id, "completed")
		if !strings.Contains(textOf(r.Result), "built") {
			t.Fatalf("result on B: %+v", r.Result)
		}
	})

	t.Run("answered on the other", func(t *testing.T) {
		id := startTask(t, onA, "deploy", nil)
		awaitStatus(t, onB, id, "input_required")
		if _, err := taskCall(t, onB, "tasks/update", id, map[string]any{"go": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}); err != nil {
			t.Fatal(err)
		}
		r := awaitStatus(t, onA, id, "completed", "failed")
		if r.Result == nil || !strings.Contains(textOf(r.Result), "deployed") {
			t.Fatalf("task %+v, want it completed on A with B's answer", r)
		}
	})

	t.Run("cancelled on the other", func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		id := startTask(t, onA, "spawn", map[string]any{"pidfile": pidfile})
		pid := readPIDFile(t, pidfile)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if _, err := taskCall(t, bobOnB, "tasks/cancel", id, nil); rpcCode(err) != -32602 {
			t.Fatalf("another caller's cancel: %v, want -32602", err)
		}
		if processGone(pid) {
			t.Fatal("another caller's cancel reached the program")
		}
		if _, err := taskCall(t, onB, "tasks/cancel", id, nil); err != nil {
			t.Fatal(err)
		}
		if r, _ := taskCall(t, onA, "tasks/get", id, nil); r.Status != "cancelled" {
			t.Fatalf("status on A after a cancel on B: %s", r.Status)
		}
		wait.Until(t, "A to kill the program B cancelled", func() bool { return processGone(pid) })
	})

	t.Run("a replica killed mid-task", func(t *testing.T) {
		id := startTask(t, onA, "build", map[string]any{"seconds": 120})
		a.cmd.Process.Signal(syscall.SIGKILL)
		waitExit(t, a.cmd, 10*time.Second)
		r := awaitStatus(t, onB, id, "failed", "completed", "cancelled")
		if r.Status != "failed" || r.Error == nil {
			t.Fatalf("the task of a killed replica: %+v, want failed", r)
		}
	})
}

// `mcpd call --task` runs the call as a task of its own: its statuses on
// stderr, its result on stdout; an interrupt cancels the task and the
// program's process group with it.
func TestCallTask(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, tasksConfig)
	t.Run("completes", func(t *testing.T) {
		cmd := mcpdCommand("call", "-c", dir, "--task", "build", "seconds=1")
		var stdout, stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		if !strings.Contains(stdout.String(), "built") || !strings.Contains(stderr.String(), ": working") || !strings.Contains(stderr.String(), ": completed") {
			t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		cmd := mcpdCommand("call", "-c", dir, "--task", "spawn", "pidfile="+pidfile)
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := readPIDFile(t, pidfile)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		cmd.Process.Signal(syscall.SIGINT)
		if code, _ := waitExit(t, cmd, 20*time.Second); code != 1 || !strings.Contains(stderr.String(), ": cancelled") {
			t.Fatalf("exit %d, stderr %q; want 1 and the task cancelled", code, stderr.String())
		}
		wait.Until(t, "the program's group to be killed", func() bool { return processGone(pid) })
	})
}
