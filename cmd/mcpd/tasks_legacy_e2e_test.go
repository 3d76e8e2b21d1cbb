package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

// legacyTasksConfig is tasksConfig with a tool that never runs as a task.
const legacyTasksConfig = tasksConfig + `
tool "plain" {
  description = "Never a task"
  result {
    content "text" {
      text = "plain"
    }
  }
}
`

// The 2025-11-25 experimental tasks' wire, for the go-sdk client, which
// has none of it: tasks/get and tasks/cancel answer a Task, tasks/result
// the tool's result, tasks/list the caller's tasks.
type ltParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type ltTask struct {
	mcp.ResultBase
	TaskID        string  `json:"taskId"`
	Status        string  `json:"status"`
	StatusMessage string  `json:"statusMessage"`
	CreatedAt     string  `json:"createdAt"`
	LastUpdatedAt string  `json:"lastUpdatedAt"`
	TTL           *int64  `json:"ttl"`
	PollInterval  int64   `json:"pollInterval"`
	ResultType    *string `json:"resultType"`
}

type ltList struct {
	mcp.ResultBase
	Tasks      []ltTask `json:"tasks"`
	NextCursor string   `json:"nextCursor"`
}

// ltCallParams are a tools/call's params with 2025-11-25's task field,
// which mcp.CallToolParams has not: a sending middleware swaps them in
// for a call whose context asks for a task (withTask).
type ltCallParams struct {
	mcp.ParamsBase
	Name      string         `json:"name"`
	Arguments any            `json:"arguments,omitempty"`
	Task      map[string]any `json:"task"`
}

type taskKey struct{}

func withTask(ctx context.Context, ttlMs int) context.Context {
	return context.WithValue(ctx, taskKey{}, map[string]any{"ttl": ttlMs})
}

func taskAugment(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		task, ok := ctx.Value(taskKey{}).(map[string]any)
		if p, isCall := req.GetParams().(*mcp.CallToolParams); ok && isCall && method == "tools/call" {
			req = &mcp.ClientRequest[*ltCallParams]{Session: req.GetSession().(*mcp.ClientSession), Params: &ltCallParams{Name: p.Name, Arguments: p.Arguments, Task: task}}
		}
		return next(ctx, method, req)
	}
}

// wireLog keeps what a client's connection reads: the results as sent
// (the SDK's types drop the fields it does not know) and the
// notifications/tasks/status (the SDK's client drops a notification it does
// not know).
type wireLog struct {
	mu       sync.Mutex
	results  []json.RawMessage
	statuses []ltTask
}

func (l *wireLog) status(id, status string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.statuses, func(t ltTask) bool { return t.TaskID == id && t.Status == status })
}

// result returns the last result read that has key at its top level.
func (l *wireLog) result(key string) map[string]json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.results) - 1; i >= 0; i-- {
		var m map[string]json.RawMessage
		if json.Unmarshal(l.results[i], &m) == nil && m[key] != nil {
			return m
		}
	}
	return nil
}

type logTransport struct {
	inner mcp.Transport
	log   *wireLog
}

func (t logTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return logConn{c, t.log}, nil
}

type logConn struct {
	mcp.Connection
	log *wireLog
}

func (c logConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.log.record(msg)
	}
	return msg, err
}

func (l *wireLog) record(msg jsonrpc.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if m.Result != nil {
			l.results = append(l.results, append(json.RawMessage(nil), m.Result...))
		}
	case *jsonrpc.Request:
		if m.Method == "notifications/tasks/status" {
			var st ltTask
			if json.Unmarshal(m.Params, &st) == nil {
				l.statuses = append(l.statuses, st)
			}
		}
	}
}

// tapTransport records the messages of the HTTP answers a client reads
// (a wrapped mcp.Connection would hide the streamable client's session
// hook, and with it the GET stream).
type tapTransport struct {
	base http.RoundTripper
	log  *wireLog
}

func (t tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = &tapBody{ReadCloser: resp.Body, log: t.log}
	}
	return resp, err
}

type tapBody struct {
	io.ReadCloser
	log     *wireLog
	pending []byte
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.pending = append(b.pending, p[:n]...)
	for {
		i := bytes.IndexByte(b.pending, '\n')
		if i < 0 {
			break
		}
		b.line(b.pending[:i])
		b.pending = b.pending[i+1:]
	}
	if err != nil && len(b.pending) > 0 {
		b.line(b.pending)
		b.pending = nil
	}
	return n, err
}

func (b *tapBody) line(l []byte) {
	l = bytes.TrimPrefix(bytes.TrimSpace(l), []byte("data: "))
	if len(l) == 0 || l[0] != '{' {
		return
	}
	if msg, err := jsonrpc.DecodeMessage(l); err == nil {
		b.log.record(msg)
	}
}

// legacyClient is a go-sdk client of 2025-11-25 with the tasks methods,
// answering elicitations with "ok: true" and keeping their _meta.
type legacyClient struct {
	cs  *mcp.ClientSession
	log *wireLog

	mu     sync.Mutex
	elicit []mcp.Meta
}

func connectLegacyTasks(t *testing.T, transport mcp.Transport) *legacyClient {
	t.Helper()
	lc := &legacyClient{log: &wireLog{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "legacy-tasks-test", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			lc.mu.Lock()
			lc.elicit = append(lc.elicit, req.Params.Meta)
			lc.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if err := mcp.AddSendingCustomMethod[*ltParams, *ltTask](client, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := mcp.AddSendingCustomMethod[*ltParams, *mcp.CallToolResult](client, "tasks/result"); err != nil {
		t.Fatal(err)
	}
	if err := mcp.AddSendingCustomMethod[*ltParams, *ltList](client, "tasks/list"); err != nil {
		t.Fatal(err)
	}
	client.AddSendingMiddleware(taskAugment)
	if st, ok := transport.(*mcp.StreamableClientTransport); ok {
		st.HTTPClient = &http.Client{Transport: tapTransport{base: st.HTTPClient.Transport, log: lc.log}}
	} else {
		transport = logTransport{transport, lc.log}
	}
	cs, err := client.Connect(bounded(t), transport, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	lc.cs = cs
	return lc
}

func (lc *legacyClient) get(t *testing.T, method, id string) (*ltTask, error) {
	t.Helper()
	return mcp.CallCustomMethod[*ltParams, *ltTask](bounded(t), lc.cs, method, &ltParams{TaskID: id})
}

func (lc *legacyClient) result(t *testing.T, id string) (*mcp.CallToolResult, error) {
	t.Helper()
	return mcp.CallCustomMethod[*ltParams, *mcp.CallToolResult](bounded(t), lc.cs, "tasks/result", &ltParams{TaskID: id})
}

func (lc *legacyClient) list(t *testing.T) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		l, err := mcp.CallCustomMethod[*ltParams, *ltList](bounded(t), lc.cs, "tasks/list", &ltParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tasks/list: %v", err)
		}
		for _, tk := range l.Tasks {
			ids = append(ids, tk.TaskID)
		}
		if cursor = l.NextCursor; cursor == "" {
			return ids
		}
	}
}

// start calls a tool as a task and returns the task's id, checking the
// CreateTaskResult as it was sent.
func (lc *legacyClient) start(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res, err := lc.cs.CallTool(withTask(bounded(t), 60000), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s as a task: %v", name, err)
	}
	rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
	id, _ := rel["taskId"].(string)
	if id == "" {
		t.Fatalf("calling %s as a task answered no task: %+v", name, res)
	}
	created := lc.log.result("task")
	var task ltTask
	if created == nil || json.Unmarshal(created["task"], &task) != nil || task.TaskID != id || task.Status != "working" || task.CreatedAt == "" || task.TTL == nil {
		t.Fatalf("CreateTaskResult %s, want the task %s working", created["task"], id)
	}
	return id
}

func (lc *legacyClient) await(t *testing.T, id string, want ...string) *ltTask {
	t.Helper()
	var last *ltTask
	wait.Until(t, "task "+id+" to be "+strings.Join(want, " or "), func() bool {
		r, err := lc.get(t, "tasks/get", id)
		if err != nil {
			t.Fatalf("tasks/get: %v", err)
		}
		last = r
		return slices.Contains(want, r.Status)
	})
	return last
}

// A real go-sdk client of 2025-11-25, over Streamable HTTP and over the
// stdio of a real `mcpd serve --stdio`, uses that revision's experimental
// tasks: the capability and execution.taskSupport, a shell task of a few
// seconds polled and its result fetched with tasks/result, a task that asks
// (its elicitation arrives on tasks/result, naming the task), a task
// cancelled (its process group is gone), tasks/list, the status
// notifications, and plain calls for a client that does not use tasks.
// Over HTTP, another caller can neither see nor cancel the tasks.
func TestLegacyTasksE2E(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, legacyTasksConfig)
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		s := startOps(t, dir)
		connect := func(key string) *legacyClient {
			hc := &http.Client{Transport: keyTransport{header: "X-Api-Key", value: key, base: http.DefaultTransport}}
			return connectLegacyTasks(t, &mcp.StreamableClientTransport{Endpoint: s.endpoint, MaxRetries: -1, HTTPClient: hc})
		}
		alice, bob := connect("alice-key-0123456789"), connect("bob-key-0123456789")
		exerciseLegacyTasks(t, alice)
		t.Run("another caller", func(t *testing.T) {
			id := alice.start(t, "build", map[string]any{"seconds": 5})
			for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/result"} {
				_, err := bob.get(t, m, id)
				_, errUnknown := bob.get(t, m, "0123456789abcdef0123456789abcdef")
				if rpcCode(err) != -32602 || err.Error() != errUnknown.Error() {
					t.Errorf("%s of another's task: %v; want exactly what an unknown id gets: %v", m, err, errUnknown)
				}
			}
			if slices.Contains(bob.list(t), id) {
				t.Error("tasks/list of another caller shows the task")
			}
			if r := alice.await(t, id, "working", "completed"); r.Status != "working" {
				t.Errorf("bob's cancel reached alice's task: %s", r.Status)
			}
			alice.get(t, "tasks/cancel", id)
		})
	})
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		cmd := mcpdCommand("serve", "--stdio", "-c", dir)
		lc := connectLegacyTasks(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second})
		exerciseLegacyTasks(t, lc)
	})
}

func exerciseLegacyTasks(t *testing.T, lc *legacyClient) {
	t.Run("capability and taskSupport", func(t *testing.T) {
		init := lc.log.result("capabilities")
		var caps struct {
			Tasks struct {
				List, Cancel map[string]any
				Requests     struct {
					Tools struct{ Call map[string]any }
				}
			}
		}
		if init == nil || json.Unmarshal(init["capabilities"], &caps) != nil || caps.Tasks.List == nil || caps.Tasks.Cancel == nil || caps.Tasks.Requests.Tools.Call == nil {
			t.Fatalf("initialize capabilities %s, want tasks with list, cancel and requests.tools.call", init["capabilities"])
		}
		if _, err := lc.cs.ListTools(bounded(t), nil); err != nil {
			t.Fatal(err)
		}
		var list struct {
			Tools []struct {
				Name      string
				Execution *struct{ TaskSupport string }
			}
		}
		raw := lc.log.result("tools")
		if err := json.Unmarshal(raw["tools"], &list.Tools); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"build": "optional", "only_task": "required", "plain": ""}
		for _, tool := range list.Tools {
			w, ok := want[tool.Name]
			if !ok {
				continue
			}
			got := ""
			if tool.Execution != nil {
				got = tool.Execution.TaskSupport
			}
			if got != w {
				t.Errorf("tool %s: execution.taskSupport %q, want %q", tool.Name, got, w)
			}
			delete(want, tool.Name)
		}
		if len(want) > 0 {
			t.Errorf("tools/list lacks %v", want)
		}
	})

	t.Run("poll a running task", func(t *testing.T) {
		id := lc.start(t, "build", map[string]any{"seconds": 2})
		r, err := lc.get(t, "tasks/get", id)
		if err != nil || r.Status != "working" || r.TTL == nil || *r.TTL != 60000 || r.ResultType != nil {
			t.Fatalf("tasks/get at once: %+v, %v; want working, ttl 60000, no resultType", r, err)
		}
		lc.await(t, id, "completed")
		res, err := lc.result(t, id)
		if err != nil || res.IsError || !strings.Contains(textOf(res), "built") {
			t.Fatalf("tasks/result: %+v, %v; want the program's output", res, err)
		}
		if rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != id {
			t.Errorf("tasks/result _meta %v, want the related task", res.Meta)
		}
		wait.Until(t, "notifications/tasks/status of the completed task", func() bool { return lc.log.status(id, "completed") })
	})

	t.Run("tasks/result waits", func(t *testing.T) {
		id := lc.start(t, "build", map[string]any{"seconds": 1})
		res, err := lc.result(t, id)
		if err != nil || !strings.Contains(textOf(res), "built") {
			t.Fatalf("tasks/result of a working task: %+v, %v; want it to wait for the result", res, err)
		}
	})

	t.Run("answer what the task asks", func(t *testing.T) {
		id := lc.start(t, "deploy", nil)
		lc.await(t, id, "input_required")
		res, err := lc.result(t, id)
		if err != nil || !strings.Contains(textOf(res), "deployed") {
			t.Fatalf("tasks/result: %+v, %v; want the program's output after the answer", res, err)
		}
		lc.mu.Lock()
		defer lc.mu.Unlock()
		if len(lc.elicit) == 0 {
			t.Fatal("no elicitation reached the client")
		}
		rel, _ := lc.elicit[len(lc.elicit)-1]["io.modelcontextprotocol/related-task"].(map[string]any)
		if rel["taskId"] != id {
			t.Errorf("elicitation _meta %v, want the related task %s", lc.elicit[len(lc.elicit)-1], id)
		}
	})

	t.Run("cancel kills the process group", func(t *testing.T) {
		pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
		id := lc.start(t, "spawn", map[string]any{"pidfile": pidfile})
		pid := readPIDFile(t, pidfile)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if processGone(pid) {
			t.Fatal("the grandchild is not running before the cancel")
		}
		r, err := lc.get(t, "tasks/cancel", id)
		if err != nil || r.Status != "cancelled" || r.TaskID != id {
			t.Fatalf("tasks/cancel: %+v, %v; want the task, cancelled", r, err)
		}
		wait.Until(t, "the grandchild to be killed", func() bool { return processGone(pid) })
		if _, err := lc.get(t, "tasks/cancel", id); rpcCode(err) != -32602 {
			t.Errorf("cancelling a cancelled task: %v, want -32602", err)
		}
		if _, err := lc.result(t, id); err == nil {
			t.Error("tasks/result of a cancelled task answered a result")
		}
		wait.Until(t, "notifications/tasks/status of the cancelled task", func() bool { return lc.log.status(id, "cancelled") })
		if ids := lc.list(t); !slices.Contains(ids, id) {
			t.Errorf("tasks/list %v lacks the task %s", ids, id)
		}
	})

	t.Run("a client that does not use tasks", func(t *testing.T) {
		res, err := lc.cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "build", Arguments: map[string]any{"seconds": 0}})
		if err != nil || res.IsError || strings.TrimSpace(textOf(res)) != "built" {
			t.Fatalf("plain call: %+v, %v; want the result itself", res, err)
		}
		if _, err := lc.cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "only_task"}); rpcCode(err) != -32601 {
			t.Errorf("a task-only tool called plainly: %v, want -32601", err)
		}
		if _, err := lc.cs.CallTool(withTask(bounded(t), 1000), &mcp.CallToolParams{Name: "plain"}); rpcCode(err) != -32601 {
			t.Errorf("a tool that is never a task called as one: %v, want -32601", err)
		}
		if _, err := lc.get(t, "tasks/get", "0123456789abcdef0123456789abcdef"); rpcCode(err) != -32602 {
			t.Errorf("tasks/get of an unknown task: %v, want -32602", err)
		}
	})
}

// The TypeScript SDK (its experimental tasks client, 2025-11-25's tasks)
// against a real `mcpd serve --http`: a shell task of a few seconds
// streamed to its result, a task that asks (the elicitation names the
// task), a task cancelled (its process group is gone), tasks/list, the
// status notifications, and plain calls. .ci/run installs the SDK and names
// its directory in MCPD_TEST_TS_SDK (with MCPD_TEST_NODE, Node 22);
// without them the test is skipped, unless MCPD_TEST_REQUIRE_TS_SDK=1.
func TestLegacyTasksTypeScript(t *testing.T) {
	t.Parallel()
	node, sdk := os.Getenv("MCPD_TEST_NODE"), os.Getenv("MCPD_TEST_TS_SDK")
	if node == "" || sdk == "" {
		if os.Getenv("MCPD_TEST_REQUIRE_TS_SDK") == "1" {
			t.Fatal("MCPD_TEST_NODE and MCPD_TEST_TS_SDK must name Node and the TypeScript SDK (.ci/run installs them)")
		}
		t.Skip("MCPD_TEST_NODE and MCPD_TEST_TS_SDK are not set")
	}
	s := startOps(t, writeConfig(t, legacyTasksConfig))
	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	script, err := filepath.Abs("testdata/legacy_tasks_client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, sdk, s.endpoint, "alice-key-0123456789", pidfile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if b, rerr := os.ReadFile(pidfile); rerr == nil {
		if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid > 0 {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, stderr.String())
	}
	type run struct {
		ID       string
		Statuses []string
		Result   *struct {
			Content []struct{ Text string }
			Meta    map[string]map[string]string `json:"_meta"`
		}
		Error *string
	}
	var out struct {
		ServerTasks   map[string]any
		TaskSupport   map[string]*string
		Notified      map[string][]string
		ElicitMeta    map[string]map[string]string
		Build, Deploy run
		Spawn         run
		Pid           int
		Cancel        struct{ Status string }
		Listed        []string
		Plain         struct{ Content []struct{ Text string } }
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("the TypeScript client's report %q: %v", stdout, err)
	}
	if out.ServerTasks["list"] == nil || out.ServerTasks["cancel"] == nil || out.ServerTasks["requests"] == nil {
		t.Errorf("server capabilities.tasks %v", out.ServerTasks)
	}
	if s := out.TaskSupport["build"]; s == nil || *s != "optional" {
		t.Errorf("build's taskSupport %v, want optional", s)
	}
	if s := out.TaskSupport["only_task"]; s == nil || *s != "required" {
		t.Errorf("only_task's taskSupport %v, want required", s)
	}
	if s := out.TaskSupport["plain"]; s != nil {
		t.Errorf("plain's taskSupport %q, want none", *s)
	}
	text := func(r run) string {
		if r.Result == nil || len(r.Result.Content) == 0 {
			return ""
		}
		return r.Result.Content[0].Text
	}
	if !strings.Contains(text(out.Build), "built") || !slices.Contains(out.Build.Statuses, "completed") || out.Build.Result.Meta["io.modelcontextprotocol/related-task"]["taskId"] != out.Build.ID {
		t.Errorf("build as a task: %+v", out.Build)
	}
	if !strings.Contains(text(out.Deploy), "deployed") || out.ElicitMeta["io.modelcontextprotocol/related-task"]["taskId"] != out.Deploy.ID {
		t.Errorf("deploy as a task: %+v, elicitation _meta %v", out.Deploy, out.ElicitMeta)
	}
	if out.Cancel.Status != "cancelled" || out.Spawn.Error == nil || out.Pid == 0 {
		t.Errorf("spawn cancelled: %+v, cancel %+v, pid %d", out.Spawn, out.Cancel, out.Pid)
	} else {
		wait.Until(t, "the cancelled task's grandchild to be killed", func() bool { return processGone(out.Pid) })
	}
	for _, id := range []string{out.Build.ID, out.Deploy.ID, out.Spawn.ID} {
		if !slices.Contains(out.Listed, id) {
			t.Errorf("tasks/list %v lacks %s", out.Listed, id)
		}
	}
	if !slices.Contains(out.Notified[out.Build.ID], "completed") || !slices.Contains(out.Notified[out.Deploy.ID], "input_required") {
		t.Errorf("notifications/tasks/status seen: %v", out.Notified)
	}
	if len(out.Plain.Content) == 0 || !strings.Contains(out.Plain.Content[0].Text, "built") {
		t.Errorf("a plain call: %+v", out.Plain)
	}
}
