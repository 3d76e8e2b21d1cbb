package shell_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/proc"
)

// KillAll kills the whole process group of every program still running,
// grandchildren that ignore SIGTERM included, and refuses to start programs
// after it; the calls end with the programs. A supervisor is its owner's:
// another adapter's programs are not touched.
func TestSupervisorKillAll(t *testing.T) {
	dir := t.TempDir()
	groups := proc.NewSupervisor()
	src := func(pidfile string) string {
		return fmt.Sprintf(`shell {
  command    = ["sh", "-c", "trap '' TERM; sleep 300 & echo $! > %s; wait"]
  timeout    = "10m"
  kill_grace = "10m"
}`, pidfile)
	}
	tracked := func(pidfile, want string) func() {
		h := adaptertest.MustCompile(t, shell.NewWithSupervisor(groups), "shell", adaptertest.Config{Src: src(pidfile), Dir: dir})
		done := make(chan error, 1)
		go func() {
			_, err := call(context.Background(), h, nil, nil, nil)
			done <- err
		}()
		return func() {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("the call ended with %v, want %q", err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not end once its group was killed")
			}
		}
	}
	first, other := filepath.Join(dir, "first.pid"), filepath.Join(dir, "other.pid")
	ended := tracked(first, "killed by signal")
	grandchild := readPID(t, first)

	// An untracked adapter's program, which KillAll must leave alone.
	h := compile(t, dir, src(other), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go call(ctx, h, nil, nil, nil)
	bystander := readPID(t, other)
	t.Cleanup(func() { syscallKill(bystander) })

	if n := groups.Live(); n != 1 {
		t.Fatalf("%d groups live, want 1", n)
	}
	if n := groups.KillAll(); n != 1 {
		t.Errorf("KillAll signalled %d groups, want 1", n)
	}
	ended()
	waitGone(t, grandchild)
	if pidGone(bystander) {
		t.Error("KillAll killed a program of an adapter with another supervisor")
	}
	if n := groups.Live(); n != 0 {
		t.Errorf("%d groups live after the calls ended", n)
	}

	// Started after KillAll: refused (mcpd is exiting).
	late := filepath.Join(dir, "late.pid")
	tracked(late, proc.ErrExiting.Error())()
}
