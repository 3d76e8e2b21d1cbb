package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// tasksConfig is what the replicas of TestHAProxyTasks serve: a tool that
// runs as a task (its program starts a grandchild and waits for it), its
// tasks in the shared state.
const tasksConfig = `
server {
  name = "scale-test"
  state {
    redis      = env("MCPD_REDIS_URL")
    key_prefix = env("MCPD_STATE_PREFIX")
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
`

// taskParams and taskResult are the extension's methods for the go-sdk
// client's custom requests (the SDK does not implement tasks).
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskResult struct {
	mcp.ResultBase
	ResultType    string `json:"resultType"`
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
}

// connectTasks connects a 2026-07-28 go-sdk client declaring the tasks
// extension to endpoint, as a remote client with the API key.
func connectTasks(ctx context.Context, endpoint, key string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "deploytest-tasks", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Extensions: map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	})
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if err := mcp.AddSendingCustomMethod[*taskParams, *taskResult](client, m); err != nil {
			return nil, err
		}
	}
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: remoteClient(key)},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
}

func taskOp(ctx context.Context, cs *mcp.ClientSession, method, id string) (*taskResult, error) {
	return mcp.CallCustomMethod[*taskParams, *taskResult](ctx, cs, method, &taskParams{TaskID: id})
}

// readPID waits for a program to write its PID to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var b []byte
	wait.Until(t, "a PID in "+path, func() bool {
		var err error
		b, err = os.ReadFile(path)
		return err == nil && bytes.HasSuffix(b, []byte("\n"))
	})
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// parent is the parent process of pid (0 once it is gone).
func parent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// gone reports whether pid has exited (or is a zombie nobody reaps).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// runner is the replica whose process runs the program whose grandchild
// is pid: an ancestor of it.
func runner(replicas []*replica, pid int) *replica {
	for p := parent(pid); p > 1; p = parent(p) {
		for _, r := range replicas {
			if p == r.cmd.Process.Pid {
				return r
			}
		}
	}
	return nil
}

// Three mcpd processes behind deploy/haproxy/haproxy.cfg and one Redis: a
// task created through the balancer runs on one replica and every
// replica answers tasks/get for it (the balancer's round robin, and each
// replica asked directly); cancelled on a replica that does not run it,
// it is cancelled and its program's process group is gone. A replica
// killed with SIGKILL mid-task leaves its task failed (its lease runs
// out), not working forever, as the other replicas answer through the
// balancer.
func TestHAProxyTasks(t *testing.T) {
	requireDeployTests(t, "haproxy")
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	conf := configDir(t, map[string]string{"tools.hcl": tasksConfig})
	const key = "deploytest-api-key-0123456789"
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var replicas []*replica
	for i := 1; i <= 3; i++ {
		r := &replica{id: fmt.Sprintf("r%d", i), addr: freeAddr(t), conf: conf, data: t.TempDir(), keyFile: keyFile,
			env: []string{"MCPD_REDIS_URL=" + url, "MCPD_STATE_PREFIX=" + prefix}}
		r.start(t)
		t.Cleanup(r.stop)
		replicas = append(replicas, r)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, r := range replicas {
				t.Logf("replica %s log:\n%s", r.id, r.logs)
			}
		}
	})
	lbAddr, _ := startHAProxy(t, [3]string{replicas[0].addr, replicas[1].addr, replicas[2].addr})
	endpoint := "http://" + lbAddr + "/mcp"
	ctx := bounded(t, 4*time.Minute)
	var cs *mcp.ClientSession
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		var err error
		if cs, err = connectTasks(ctx, endpoint, key); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot connect through the balancer: %v", err)
		}
	}
	t.Cleanup(func() { cs.Close() })
	direct := map[string]*mcp.ClientSession{}
	for _, r := range replicas {
		c, err := connectTasks(ctx, "http://"+r.addr+"/mcp", key)
		if err != nil {
			t.Fatalf("connecting to replica %s: %v", r.id, err)
		}
		t.Cleanup(func() { c.Close() })
		direct[r.id] = c
	}
	start := func(t *testing.T, pidfile string) (string, int, *replica) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spawn", Arguments: map[string]any{"pidfile": pidfile}})
		if err != nil {
			t.Fatalf("calling spawn through the balancer: %v", err)
		}
		rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
		id, _ := rel["taskId"].(string)
		if id == "" {
			t.Fatalf("spawn answered no task: %+v", res)
		}
		pid := readPID(t, pidfile)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		r := runner(replicas, pid)
		if r == nil {
			t.Fatalf("no replica runs the program of task %s", id)
		}
		return id, pid, r
	}
	// await polls task id through the balancer until its status is want;
	// a request that fails (a replica just killed) is tried again.
	await := func(t *testing.T, id, want string, within time.Duration) *taskResult {
		t.Helper()
		var last *taskResult
		var lastErr error
		for deadline := time.Now().Add(within); ; time.Sleep(250 * time.Millisecond) {
			r, err := taskOp(ctx, cs, "tasks/get", id)
			if err == nil {
				last = r
				if r.Status == want {
					return r
				}
				if r.Status != "working" {
					t.Fatalf("task %s is %s (%q), want %s", id, r.Status, r.StatusMessage, want)
				}
			}
			lastErr = err
			if time.Now().After(deadline) {
				t.Fatalf("task %s is not %s after %v: last %+v, %v", id, want, within, last, lastErr)
			}
		}
	}

	t.Run("polled and cancelled on another replica", func(t *testing.T) {
		id, pid, run := start(t, filepath.Join(t.TempDir(), "grandchild.pid"))
		// Round robin: six polls reach every replica; each answers.
		for i := 0; i < 6; i++ {
			if r, err := taskOp(ctx, cs, "tasks/get", id); err != nil || r.Status != "working" {
				t.Fatalf("poll %d through the balancer: %+v, %v", i, r, err)
			}
		}
		var other *replica
		for _, r := range replicas {
			got, err := taskOp(ctx, direct[r.id], "tasks/get", id)
			if err != nil || got.Status != "working" {
				t.Fatalf("tasks/get on replica %s: %+v, %v", r.id, got, err)
			}
			if r != run {
				other = r
			}
		}
		if _, err := taskOp(ctx, direct[other.id], "tasks/cancel", id); err != nil {
			t.Fatalf("tasks/cancel on replica %s (the task runs on %s): %v", other.id, run.id, err)
		}
		await(t, id, "cancelled", 10*time.Second)
		// The runner hears of it at its next renewal (a third of the lease).
		wait.Until(t, fmt.Sprintf("the program of task %s on %s ends after it was cancelled on %s", id, run.id, other.id), func() bool { return gone(pid) })
		t.Logf("task created through the balancer ran on %s, cancelled on %s: its process group is gone", run.id, other.id)
	})

	t.Run("a replica killed mid-task leaves it failed", func(t *testing.T) {
		id, _, run := start(t, filepath.Join(t.TempDir(), "grandchild.pid"))
		killed := time.Now()
		if err := run.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-run.exited
		// The lease (15s) runs out; then the next poll marks it failed.
		r := await(t, id, "failed", 60*time.Second)
		if !strings.Contains(r.StatusMessage, "stopped before it ended") {
			t.Errorf("the failed task says %q, want that its replica stopped", r.StatusMessage)
		}
		t.Logf("replica %s killed with SIGKILL: its task failed after %v (%q)", run.id, time.Since(killed).Round(time.Second), r.StatusMessage)
	})
}
