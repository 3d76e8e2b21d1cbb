package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/internal/wait"
)

// markedSleep copies sleep(1) to a name with a token only this test uses,
// so that the processes it leaves can be found by name in /proc.
func markedSleep(t *testing.T) (path, token string) {
	t.Helper()
	src, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	token = fmt.Sprintf("mcpdproctest%d%d", os.Getpid(), time.Now().UnixNano()%1e9)
	path = filepath.Join(t.TempDir(), token)
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range marked(token) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return path, token
}

// marked lists the live (not zombie) processes whose program name (argv[0])
// holds token.
func marked(token string) []int {
	names, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, dir := range names {
		cmdline, err := os.ReadFile(dir + "/cmdline")
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		if err != nil || !bytes.Contains(argv0, []byte(token)) {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(dir))
		pids = append(pids, pid)
	}
	return pids
}

func shell(script string, args ...string) Command {
	return Command{Path: "/bin/sh", Args: append([]string{"sh", "-c", script, "sh"}, args...)}
}

func TestStatusAndStreams(t *testing.T) {
	s := NewSupervisor()
	defer s.KillAll()
	tests := []struct {
		name   string
		script string
		stdin  string
		exit   int // -1: killed by SIGKILL
		out    string
	}{
		{"exit code", "exit 3", "", 3, ""},
		{"stdin to stdout", "cat; echo done", "hello\n", 0, "hello\ndone\n"},
		{"killed", "kill -9 $$", "", -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inR, inW, _ := os.Pipe()
			outR, outW, _ := os.Pipe()
			p, err := s.Start(Command{Path: "/bin/sh", Args: []string{"sh", "-c", tt.script}, Stdin: inR, Stdout: outW})
			inR.Close()
			outW.Close()
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(inW, tt.stdin)
			inW.Close()
			out, _ := io.ReadAll(outR)
			ws, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.exit < 0 && (!ws.Signaled() || ws.Signal() != syscall.SIGKILL):
				t.Errorf("status %v, want killed", ws)
			case tt.exit >= 0 && (!ws.Exited() || ws.ExitStatus() != tt.exit):
				t.Errorf("status %v, want exit %d", ws, tt.exit)
			}
			if string(out) != tt.out {
				t.Errorf("stdout %q, want %q", out, tt.out)
			}
		})
	}
	if n := s.Live(); n != 0 {
		t.Errorf("Live = %d after every program was reaped", n)
	}
}

// A program that cannot start fails Start with the errno os/exec gives.
func TestStartError(t *testing.T) {
	s := NewSupervisor()
	defer s.KillAll()
	_, err := s.Start(Command{Path: "/nonexistent/prog", Args: []string{"prog"}})
	var pe *os.PathError
	if !errors.As(err, &pe) || !errors.Is(pe.Err, syscall.ENOENT) || pe.Path != "/nonexistent/prog" {
		t.Fatalf("got %#v", err)
	}
}

// The group dies with its leader, and Signal reaches the whole group.
func TestGroupEndsWithLeader(t *testing.T) {
	sleep, token := markedSleep(t)
	s := NewSupervisor()
	defer s.KillAll()
	p, err := s.Start(shell(`"$1" 300 & exit 0`, sleep))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the grandchild outlived its leader", func() bool { return len(marked(token)) == 0 })

	p, err = s.Start(shell(`"$1" 300 & wait`, sleep))
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the grandchild did not start", func() bool { return len(marked(token)) == 1 })
	p.Signal(syscall.SIGTERM)
	ws, err := p.Wait()
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("status %v, %v: want SIGTERM", ws, err)
	}
	wait.Until(t, "the grandchild outlived the signal", func() bool { return len(marked(token)) == 0 })
}

// escapeScript leaves processes behind in every way a program can: one in
// its group, one in a new session (setsid), one double-forked daemon whose
// parent exited at once; then it waits.
const escapeScript = `"$1" 300 & setsid "$1" 301 & ( "$1" 302 & ) ; wait`

// KillAll kills everything a program started, whatever group or session
// it moved to, and Start refuses after it.
func TestKillAll(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1)")
	}
	sleep, token := markedSleep(t)
	s := NewSupervisor()
	p, err := s.Start(shell(escapeScript, sleep))
	if err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "the grandchildren did not start", func() bool { return len(marked(token)) == 3 })
	if n := s.KillAll(); n != 1 {
		t.Errorf("KillAll = %d, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if got := marked(token); len(got) != 0 {
		t.Errorf("processes left after Wait returned: %v", got)
	}
	if _, err := p.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if _, err := s.Start(shell("exit 0")); !errors.Is(err, ErrExiting) {
		t.Errorf("Start after KillAll: %v", err)
	}
}

const sigkillHelperEnv = "MCPD_PROC_TEST_SIGKILL_SLEEP"

// TestSigkillHelper is not a test: run by TestSigkillOfMcpd in a child
// process, it stands for mcpd: it starts escapeScript and blocks until it
// is killed.
func TestSigkillHelper(t *testing.T) {
	sleep := os.Getenv(sigkillHelperEnv)
	if sleep == "" {
		t.Skip("run by TestSigkillOfMcpd")
	}
	s := NewSupervisor()
	defer runtime.KeepAlive(s) // a Supervisor nobody holds ends its helper
	if _, err := s.Start(shell(escapeScript, sleep)); err != nil {
		t.Fatal(err)
	}
	select {}
}

// When mcpd dies by SIGKILL, which it cannot act on, everything its
// programs started dies too: the kernel's Pdeathsig reached the program
// only, and its children ran on under PID 1.
func TestSigkillOfMcpd(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid(1)")
	}
	sleep, token := markedSleep(t)
	mcpd := exec.Command(os.Args[0], "-test.run=^TestSigkillHelper$", "-test.count=1")
	mcpd.Env = append(os.Environ(), sigkillHelperEnv+"="+sleep)
	mcpd.Stdout, mcpd.Stderr = os.Stderr, os.Stderr
	if err := mcpd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mcpd.ProcessState == nil {
			_ = mcpd.Process.Kill()
			_ = mcpd.Wait()
		}
	})
	wait.Until(t, "the grandchildren did not start", func() bool { return len(marked(token)) == 3 })
	if err := mcpd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = mcpd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := marked(token)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left after kill -9 of mcpd: %d (%s)", len(left), strings.Trim(fmt.Sprint(left), "[]"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Supervisor nobody holds any more ends its helper, and with it what is
// left of its programs: a test or an in-process command that made one
// leaves no helper behind.
func TestUnreachableSupervisorEndsHelper(t *testing.T) {
	sleep, token := markedSleep(t)
	// The leader waits until its child has left the group (the flag is
	// made after setsid): the group is killed when the leader exits, and
	// on a loaded machine the child could still be in it.
	left := filepath.Join(t.TempDir(), "left")
	func() {
		s := NewSupervisor()
		p, err := s.Start(shell(`setsid sh -c 'touch "$2"; exec "$1" 300' sh "$1" "$2" & while [ ! -e "$2" ]; do sleep 0.01; done; exit 0`, sleep, left))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}()
	wait.Until(t, "the process that left its group did not start", func() bool { return len(marked(token)) == 1 })
	wait.Until(t, "the helper of an unreachable Supervisor kept its processes", func() bool {
		runtime.GC()
		return len(marked(token)) == 0
	})
}
