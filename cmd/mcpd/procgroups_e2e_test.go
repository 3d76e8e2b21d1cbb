package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
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
				wait.Until(t, "mcpd begins its shutdown", func() bool { return strings.Contains(r.logs.String(), "shutting down") })
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
			if log := logs.String(); !strings.Contains(log, "killing the programs still running and what they started") &&
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

// killNineConfig has a shell tool whose program leaves a process in its
// group and one in a session of its own, and a stdio upstream whose
// program does the same before it becomes an mcpd upstream. %[1]q is a
// copy of sleep(1) under a name only this test uses.
const killNineConfig = `
tool "spawn" {
  description = "Leaves processes behind."
  shell {
    command = ["sh", "-c", "\"$1\" 300 & setsid \"$1\" 301 & wait", "sh", %[1]q]
    timeout = "10m"
  }
}

mcp_server "up" {
  command = ["sh", "-c", "\"$1\" 302 & setsid \"$1\" 303 & exec \"$2\" serve --stdio -c \"$3\"", "sh", %[1]q, %[2]q, %[3]q]
  start   = "load"
  expose {
    prefix = "up_"
  }
}
`

// kill -9 of mcpd, which it cannot act on, ends every process its shell
// calls and stdio upstreams started, whatever group or session they moved
// to. The kernel's Pdeathsig reached only the programs themselves: the
// four sleeps here ran on under PID 1.
func TestKillNineLeavesNoProcess(t *testing.T) {
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1)")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("mcpdkill9test%d", os.Getpid())
	sleep := filepath.Join(t.TempDir(), token)
	if err := os.WriteFile(sleep, b, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range markedProcs(token) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	upDir := configDir(t, map[string]string{"tools.hcl": upstreamTool("alpha")})
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(killNineConfig, sleep, mcpdBin, upDir)})
	r := startRawStdio(t, dir)
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"spawn","arguments":{}}}`)
	wait.Until(t, "four processes left behind", func() bool { return len(markedProcs(token)) == 4 })

	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := markedProcs(token)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after kill -9: %d of 4 (%v); log:\n%s", len(left), left, r.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// markedProcs lists the live processes whose program name (argv[0]) holds
// token.
func markedProcs(token string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		cmdline, err := os.ReadFile(d + "/cmdline")
		if err != nil {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if !bytes.Contains(argv0, []byte(token)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if !processGone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
