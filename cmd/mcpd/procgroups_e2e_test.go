package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spawnConfig has a tool whose program starts a grandchild and waits for
// it. Both ignore SIGTERM (an ignored signal stays ignored across exec), and
// the kill grace is long, so that only mcpd's exit can end them: the call's
// own cancellation sends SIGTERM and then waits.
const spawnConfig = `
tool "spawn" {
  description = "Starts a grandchild that outlives a SIGTERM."
  param "pidfile" {
    type = "string"
  }
  shell {
    command    = ["sh", "-c", "trap '' TERM; sleep 300 & echo $! > \"$1\"; wait", "sh", args.pidfile]
    timeout    = "10m"
    kill_grace = "10m"
  }
}
`

// Every exit path of mcpd serve kills the process groups of the shell
// programs still running, grandchildren included: a forced exit (a second
// SIGTERM), a shutdown that stops waiting for a call (SIGTERM over HTTP),
// and the end of stdio's input. The grandchild used to be reparented to
// PID 1 and run on (the kernel's Pdeathsig reaches the leader only).
func TestExitKillsProcessGroups(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, dir, pidfile string) (exit func() int, logs fmt.Stringer)
	}{
		{"forced exit (second SIGTERM)", func(t *testing.T, dir, pidfile string) (func() int, fmt.Stringer) {
			r := startRawStdio(t, dir, "--shutdown-grace", "30s")
			callSpawn(t, r, pidfile)
			return func() int {
				r.cmd.Process.Signal(syscall.SIGTERM)
				time.Sleep(300 * time.Millisecond)
				r.cmd.Process.Signal(syscall.SIGTERM)
				code, _ := waitExit(t, r.cmd, 10*time.Second)
				return code
			}, r.logs
		}},
		{"end of stdio input", func(t *testing.T, dir, pidfile string) (func() int, fmt.Stringer) {
			r := startRawStdio(t, dir, "--shutdown-grace", "200ms")
			callSpawn(t, r, pidfile)
			return func() int {
				r.stdin.Close()
				code, _ := waitExit(t, r.cmd, 20*time.Second)
				return code
			}, r.logs
		}},
		{"SIGTERM over HTTP", func(t *testing.T, dir, pidfile string) (func() int, fmt.Stringer) {
			s := startOps(t, dir, "--shutdown-grace", "200ms")
			cs := connectHTTP(t, s.endpoint, "2026-07-28", nil)
			go cs.CallTool(bounded(t), spawnParams(pidfile))
			return func() int {
				s.cmd.Process.Signal(syscall.SIGTERM)
				code, _ := waitExit(t, s.cmd, 20*time.Second)
				return code
			}, s.logs
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := configDir(t, map[string]string{"tools.hcl": spawnConfig})
			pidfile := filepath.Join(t.TempDir(), "grandchild.pid")
			exit, logs := tt.run(t, dir, pidfile)
			pid := readPIDFile(t, pidfile)
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			if processGone(pid) {
				t.Fatal("the grandchild is not running before the exit")
			}
			exit()
			deadline := time.Now().Add(5 * time.Second)
			for !processGone(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the grandchild %d outlived mcpd; log:\n%s", pid, logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Who kills the group is a race on a shutdown that cancels the
			// call (SIGTERM over HTTP): the call's own cancellation, or the
			// sweep at exit, which logs it. Either is logged.
			if log := logs.String(); !strings.Contains(log, "killed the process groups of shell programs still running") &&
				!strings.Contains(log, "cancelling the calls still running") {
				t.Errorf("the kill is not logged; log:\n%s", log)
			}
		})
	}
}

func spawnParams(pidfile string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "spawn", Arguments: map[string]any{"pidfile": pidfile}}
}

func callSpawn(t *testing.T, r *rawStdio, pidfile string) {
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"spawn","arguments":{"pidfile":%q}}}`, pidfile))
}

// readPIDFile waits for a program to write its PID to path.
func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no PID in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processGone reports whether pid has exited: it no longer exists, or it
// is a zombie (reparented to a PID 1 that does not reap).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}
