package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
	"github.com/mcpd/mcpd/internal/wait"
)

// gatewayTasksUpstream is the upstream mcpd's config: tools that run as
// tasks (a program that runs a few seconds, one that starts a grandchild
// and waits, one that asks inside its task) and one that never does.
const gatewayTasksUpstream = `
tool "build" {
  description = "Runs for a few seconds"
  param "seconds" {
    type = "integer"
  }
  task {}
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
  description = "Asks inside its task"
  task {}
  ask "go" {
    elicit = "Deploy now?"
    field "ok" { type = "boolean" }
  }
  shell {
    command = ["echo", "deployed"]
  }
}

tool "hello" {
  description = "Never a task"
  result {
    content "text" {
      text = "hello"
    }
  }
}
`

// mcpd as a gateway in front of a second mcpd relays its tasks task for
// task: a go-sdk client that uses tasks calls the upstream's tools
// through the gateway and gets the gateway's task, which follows the
// upstream's (polled, answered through tasks/update, cancelled: the
// upstream's process group is gone and its task cancelled, as its audit
// log says). A tool the upstream runs as a plain call stays a plain call;
// a tool the gateway declares a task of its own over an upstream tool
// that is not one runs as the gateway's task.
func TestGatewayTasks(t *testing.T) {
	t.Parallel()
	upAudit := filepath.Join(t.TempDir(), "audit.log")
	up := startOps(t, writeConfig(t, gatewayTasksUpstream), "--audit-log", upAudit)
	gwDir := writeConfig(t, fmt.Sprintf(`
mcp_server "up" {
  url = %q
  expose {
    prefix = "up_"
  }
}

tool "hello_task" {
  description = "The upstream's plain tool, as a task of the gateway's"
  task {}
  mcp {
    server = "up"
    tool   = "hello"
  }
}
`, up.endpoint))
	gw := startOps(t, gwDir)
	cs := connectTasks(t, gw.endpoint, "none", true)
	wait.Until(t, "the upstream's tools", func() bool { return toolNames(t, cs)["up_build"] })

	upstreamAudit := func() string {
		b, _ := os.ReadFile(upAudit)
		return string(b)
	}

	t.Run("poll", func(t *testing.T) {
		id := startTask(t, cs, "up_build", map[string]any{"seconds": 3})
		r, err := taskCall(t, cs, "tasks/get", id, nil)
		if err != nil || r.Status != "working" {
			t.Fatalf("tasks/get at once: %+v, %v; want working", r, err)
		}
		r = awaitStatus(t, cs, id, "completed", "failed", "cancelled")
		if r.Status != "completed" || r.Result == nil || !strings.Contains(textOf(r.Result), "built") {
			t.Fatalf("task %+v (result %+v), want completed with the upstream's output", r, r.Result)
		}
		if strings.Contains(upstreamAudit(), id) {
			t.Errorf("the upstream knows the gateway's task id %s", id)
		}
	})

	t.Run("answer", func(t *testing.T) {
		id := startTask(t, cs, "up_deploy", nil)
		r := awaitStatus(t, cs, id, "input_required", "failed", "completed")
		if _, ok := r.InputRequests["go"]; !ok || r.Status != "input_required" {
			t.Fatalf("task %+v, want input_required asking \"go\"", r)
		}
		ack, err := taskCall(t, cs, "tasks/update", id, map[string]any{"go": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}})
		if err != nil || ack.ResultType != "complete" {
			t.Fatalf("tasks/update: %+v, %v", ack, err)
		}
		r = awaitStatus(t, cs, id, "completed", "failed", "cancelled")
		if r.Status != "completed" || r.Result == nil || !strings.Contains(textOf(r.Result), "deployed") {
			t.Fatalf("task %+v (result %+v), want completed with the upstream's output", r, r.Result)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		id := startTask(t, cs, "up_spawn", map[string]any{"pidfile": pidfile})
		pid := readPIDFile(t, pidfile)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if _, err := taskCall(t, cs, "tasks/cancel", id, nil); err != nil {
			t.Fatalf("tasks/cancel: %v", err)
		}
		if r := awaitStatus(t, cs, id, "cancelled", "completed", "failed"); r.Status != "cancelled" {
			t.Fatalf("status %s after cancel, want cancelled", r.Status)
		}
		wait.Until(t, "the upstream's grandchild to be killed", func() bool { return processGone(pid) })
		wait.Until(t, "the upstream's audit line of its cancelled task", func() bool {
			for _, line := range strings.Split(upstreamAudit(), "\n") {
				var e map[string]any
				if json.Unmarshal([]byte(line), &e) == nil && e["kind"] == "task" && e["name"] == "spawn" && e["outcome"] == "cancelled" {
					return true
				}
			}
			return false
		})
	})

	t.Run("plain", func(t *testing.T) {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_hello"})
		if err != nil || res.IsError || textOf(res) != "hello" {
			t.Fatalf("up_hello: %+v, %v; want the plain result", res, err)
		}
		if _, ok := res.Meta["io.modelcontextprotocol/related-task"]; ok {
			t.Fatalf("up_hello answered a task")
		}
		id := startTask(t, cs, "hello_task", nil)
		r := awaitStatus(t, cs, id, "completed", "failed")
		if r.Status != "completed" || textOf(r.Result) != "hello" {
			t.Fatalf("hello_task: %+v, want the gateway's task completed with the upstream's result", r)
		}
	})
}

// An upstream without the tasks extension (server-everything) still has
// its tools offered as tasks: a tool declared with a task block over one
// of them runs the plain upstream call inside mcpd's task.
func TestGatewayTaskOverPlainUpstream(t *testing.T) {
	t.Parallel()
	node, script := mcptest.Everything(t)
	gw := startOps(t, writeConfig(t, stdioServer(node, script)+`
tool "echo_task" {
  description = "server-everything's echo, as a task"
  param "message" {
    type = "string"
  }
  task {
    mode = "required"
  }
  mcp {
    server = "everything"
    tool   = "echo"
  }
}
`))
	cs := connectTasks(t, gw.endpoint, "none", true)
	id := startTask(t, cs, "echo_task", map[string]any{"message": "hi from a task"})
	r := awaitStatus(t, cs, id, "completed", "failed", "cancelled")
	if r.Status != "completed" || r.Result == nil || !strings.Contains(textOf(r.Result), "hi from a task") {
		t.Fatalf("task %+v (result %+v), want completed with the upstream's echo", r, r.Result)
	}
}
