//go:build linux

package mcpadapter_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
	"github.com/mcpd/mcpd/internal/wait"
)

// The reference server @modelcontextprotocol/server-everything behind the
// gateway, over stdio: its completable-prompt completes a department, then
// a name from the department already chosen; it sends resources/updated
// for the URIs its session subscribed to, once when its
// toggle-subscriber-updates tool is called and every 5 s after.

// childRunning returns the pid of a program this process started whose
// command line holds arg: a child of its process supervisor (engine/proc),
// which is this process's child.
func childRunning(t *testing.T, arg string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid, ppid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		var state string
		if i := strings.LastIndexByte(s, ')'); i < 0 {
			continue
		} else if _, err := fmt.Sscanf(s[i+2:], "%s %d", &state, &ppid); err != nil || parentOf(ppid) != os.Getpid() || state == "Z" {
			continue
		}
		if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(cmd), arg) {
			return pid
		}
	}
	return 0
}

func TestForwardEverything(t *testing.T) {
	node, script := mcptest.Everything(t)
	gw := serveWatched(t, fmt.Sprintf(`
mcp_server "everything" {
  command = [%q, %q, "stdio"]
  expose {
    prefix    = "ev_"
    include   = ["toggle-subscriber-updates"]
    resources = true
    prompts   = true
  }
}
`, node, script))
	for _, era := range []string{legacy, modern} {
		t.Run("completion, client "+era, func(t *testing.T) {
			cs := connect(t, gw.url, era, nil, false)
			waitFor(t, "the upstream's prompts listed", func() bool {
				res, err := cs.ListPrompts(bounded(t), nil)
				return err == nil && slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "ev_completable-prompt" })
			})
			ref := &mcp.CompleteReference{Type: "ref/prompt", Name: "ev_completable-prompt"}
			tests := []struct {
				arg, value string
				context    map[string]string
				want       []string
			}{
				{"department", "S", nil, []string{"Sales", "Support"}},
				{"name", "", map[string]string{"department": "Sales"}, []string{"David", "Eve", "Frank"}},
				{"name", "", nil, []string{}},
			}
			for _, tc := range tests {
				params := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: tc.arg, Value: tc.value}}
				if tc.context != nil {
					params.Context = &mcp.CompleteContext{Arguments: tc.context}
				}
				res, err := cs.Complete(bounded(t), params)
				if err != nil {
					t.Fatalf("complete %s %q %v: %v", tc.arg, tc.value, tc.context, err)
				}
				if !slices.Equal(res.Completion.Values, tc.want) {
					t.Errorf("complete %s %q %v: %v, want %v", tc.arg, tc.value, tc.context, res.Completion.Values, tc.want)
				}
			}
		})
	}

	t.Run("subscription", func(t *testing.T) {
		sub, idle := &updates{}, &updates{}
		subscriber := connect(t, gw.url, legacy, &mcp.ClientOptions{ResourceUpdatedHandler: sub.handler}, false)
		connect(t, gw.url, modern, &mcp.ClientOptions{ResourceUpdatedHandler: idle.handler}, false)
		var uri string
		waitFor(t, "the upstream's resources listed", func() bool {
			res, err := subscriber.ListResources(bounded(t), nil)
			if err != nil || len(res.Resources) == 0 {
				return false
			}
			uri = res.Resources[0].URI
			return true
		})
		if err := subscriber.Subscribe(bounded(t), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		// The upstream sends an update as soon as it is toggled on, to
		// its one session: the gateway's.
		toggle := func(step string) {
			t.Helper()
			before := sub.count(uri)
			res, err := subscriber.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_toggle-subscriber-updates"})
			if err != nil || res.IsError || !strings.Contains(textOf(res), "Started") {
				t.Fatalf("%s: toggling the upstream's updates: %v %s", step, err, textOf(res))
			}
			waitFor(t, step+": the subscriber notified", func() bool { return sub.count(uri) > before })
		}
		toggle("subscribed")
		if n := idle.count(uri); n != 0 {
			t.Errorf("a client that did not subscribe got %d notifications", n)
		}

		// The upstream's updates off, so that the next one is the
		// gateway's own.
		res, err := subscriber.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_toggle-subscriber-updates"})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "Stopped") {
			t.Fatalf("toggling the upstream's updates off: %v %s", err, textOf(res))
		}
		// An update the upstream sent before it stopped may still be on
		// its way, and nothing tells when none is: a window for it to
		// arrive, so that it is not taken for the gateway's own below.
		time.Sleep(300 * time.Millisecond)
		beforeKill := sub.count(uri)

		// A restarted upstream knows nothing of the subscription: the
		// gateway makes it again on the new session, and tells the
		// subscriber that the resource may have changed while the
		// upstream was away.
		pid := childRunning(t, script)
		if pid == 0 {
			t.Fatal("no server-everything process")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "server-everything restarted", func() bool {
			p := childRunning(t, script)
			return p != 0 && p != pid
		})
		waitFor(t, "the subscriber told of what it may have missed", func() bool { return sub.count(uri) > beforeKill })
		// Calls fail until the new session is up.
		wait.Until(t, "the restarted upstream answers", func() bool {
			res, err := subscriber.CallTool(bounded(t), &mcp.CallToolParams{Name: "ev_toggle-subscriber-updates"})
			if err != nil || res.IsError {
				return false
			}
			if !strings.Contains(textOf(res), "Started") {
				t.Fatalf("the restarted upstream's updates were on already: %s", textOf(res))
			}
			return true
		})
		before := sub.count(uri)
		waitFor(t, "the subscriber notified by the restarted upstream", func() bool { return sub.count(uri) > before })
		if n := idle.count(uri); n != 0 {
			t.Errorf("a client that did not subscribe got %d notifications", n)
		}
	})
}

// parentOf returns pid's parent, or 0.
func parentOf(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	var state string
	var ppid int
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	if _, err := fmt.Sscanf(s[i+2:], "%s %d", &state, &ppid); err != nil {
		return 0
	}
	return ppid
}
