package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpd/mcpd/internal/wait"
)

// consoleTasksConfig has a tool that runs as a task until cancelled: its
// program starts a grandchild and waits for it.
const consoleTasksConfig = `
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

// The console runs a tool as a task from its form, lists it among the
// caller's tasks while it runs, and cancels it from the page: the task is
// cancelled (as tasks/get tells another client of the same caller) and
// its program's process group is gone. At 800 px wide.
func TestConsoleTasksInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no Chromium found (see TestConsoleInBrowser)")
	}
	shots := artifactsDir(t)
	dir := writeConfig(t, consoleTasksConfig)
	endpoint := startHTTP(t, mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", dir))
	ui := strings.TrimSuffix(endpoint, "mcp") + "ui/"
	b := browser(t, bin)
	step(t, b, "loading the console at 800x600",
		chromedp.EmulateViewport(800, 600),
		chromedp.Navigate(ui),
		chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`)),
	)
	waitFor(t, b, "the empty tasks view", `!document.getElementById("tasks").hidden && !document.getElementById("tasks-empty").hidden`)

	pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
	openTool(t, b, "spawn", map[string]string{"pidfile": pidfile})
	step(t, b, "calling spawn as a task",
		chromedp.Click(chromedp.CSS(`#call-form input[name="as-task"]`)),
		chromedp.Click(chromedp.CSS(`#call-form button[type="submit"]`)),
	)
	pid := readPIDFile(t, pidfile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	waitFor(t, b, "the task among the caller's tasks", `document.querySelector('#tasks-table tr[data-tool="spawn"][data-status="working"] button.cancel')`)
	waitFor(t, b, "the task followed in the result", `document.querySelector('.result .task-id') && document.querySelector('.result button.stop')`)
	id := eval[string](t, b, `document.querySelector('#tasks-table tr[data-tool="spawn"]').dataset.task`)
	if len(id) != 32 {
		t.Fatalf("task id %q", id)
	}
	if shown := eval[string](t, b, `document.querySelector('#tasks-table tr[data-tool="spawn"] td').textContent`); shown != id[:8] {
		t.Errorf("the task is shown as %q, want its id shortened to %q", shown, id[:8])
	}
	if w := eval[int](t, b, `document.documentElement.scrollWidth`); w > 800 {
		t.Errorf("the page is %d px wide at an 800 px viewport", w)
	}
	step(t, b, "scrolling to the tasks", chromedp.ScrollIntoView(chromedp.CSS(`#tasks`)))
	screenshot(t, b, shots, "20-task-running-800px")

	step(t, b, "cancelling from the tasks view", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tasks-table tr[data-task=%q] button.cancel`, id))))
	waitFor(t, b, "the task cancelled in the view", fmt.Sprintf(`document.querySelector('#tasks-table tr[data-task=%q][data-status="cancelled"]')`, id))
	waitFor(t, b, "the result to say cancelled", `document.querySelector('.result.cancelled')`)
	wait.Until(t, "the grandchild to be killed", func() bool { return processGone(pid) })

	// What MCP says of it: cancelled, to a client of the same caller.
	cs := connectTasks(t, endpoint, "", true)
	r, err := taskCall(t, cs, "tasks/get", id, nil)
	if err != nil || r.Status != "cancelled" {
		t.Fatalf("tasks/get after the console's cancel: %+v, %v", r, err)
	}
	screenshot(t, b, shots, "21-task-cancelled-800px")
}

// The console's tasks view lists the tasks of the page's caller only:
// alice's running task is listed to alice, not to bob, and not without a
// key.
func TestConsoleTasksOwnOnly(t *testing.T) {
	dir := writeConfig(t, tasksConfig)
	endpoint := startHTTP(t, mcpdCommand("serve", "--ui", "--http", "127.0.0.1:0", "-c", dir))
	list := strings.TrimSuffix(endpoint, "mcp") + "ui/tasks"
	alice := connectTasks(t, endpoint, "alice-key-0123456789", true)
	id := startTask(t, alice, "build", map[string]any{"seconds": 60})
	t.Cleanup(func() { taskCall(t, alice, "tasks/cancel", id, nil) })
	get := func(key string) (int, []map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, list, nil)
		if key != "" {
			req.Header.Set("X-Api-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Tasks []map[string]any }
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Tasks
	}
	code, got := get("alice-key-0123456789")
	if code != http.StatusOK || len(got) != 1 || got[0]["id"] != id || got[0]["tool"] != "build" || got[0]["status"] != "working" {
		t.Fatalf("alice's tasks: %d %v, want her build task", code, got)
	}
	if _, ok := got[0]["result"]; ok {
		t.Errorf("the list carries results: %v", got[0])
	}
	if code, got := get("bob-key-0123456789"); code != http.StatusOK || len(got) != 0 {
		t.Fatalf("bob's tasks: %d %v, want none", code, got)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Fatalf("tasks without a key: %d, want 401", code)
	}
}
