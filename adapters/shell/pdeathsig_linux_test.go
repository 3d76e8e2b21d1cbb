package shell_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/adapter"
)

const pdeathsigHelperEnv = "MCPD_SHELL_PDEATHSIG_HELPER"

// TestPdeathsigHelper is not a test: run by TestParentDeathKillsTheProgram
// in a child process, it calls a tool that runs forever, until it is
// killed.
func TestPdeathsigHelper(t *testing.T) {
	pidFile := os.Getenv(pdeathsigHelperEnv)
	if pidFile == "" {
		return
	}
	h := compile(t, filepath.Dir(pidFile), fmt.Sprintf(`shell {
  command = ["sh", "-c", "echo $$ > %s; exec sleep 300"]
  timeout = "10m"
}`, pidFile), nil)
	_, err := call(context.Background(), h, nil, nil, nil)
	t.Fatalf("the call returned: %v", err)
}

// When mcpd dies by SIGKILL, which it cannot handle, the program it was
// running dies with it instead of living on under init.
func TestParentDeathKillsTheProgram(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestPdeathsigHelper$", "-test.count=1")
	helper.Env = append(os.Environ(), pdeathsigHelperEnv+"="+pidFile)
	helper.Stdout, helper.Stderr = os.Stderr, os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, pidFile)
	if pidGone(pid) {
		t.Fatal("the program is not running")
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	waitGone(t, pid)
}

// The kernel sends the parent-death signal when the OS thread that started
// the program exits. Threads that end while the program runs (goroutines
// that exit locked to their thread) must not take it down.
func TestProgramSurvivesThreadExits(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	h := compile(t, dir, fmt.Sprintf(`shell {
  command = ["sh", "-c", "echo $$ > %s; exec sleep 300"]
}`, pidFile), nil)
	// Go starts programs from whatever thread runs the call, often the
	// main thread, which the runtime never ends. Goroutines locked to
	// threads for the whole test keep the call off it, so that the test
	// can fail.
	hold := make(chan struct{})
	defer close(hold)
	for range 4 {
		go func() {
			runtime.LockOSThread()
			<-hold
		}()
	}
	time.Sleep(50 * time.Millisecond)

	// Where the starting thread goes next is up to the scheduler (often
	// into the blocking waitid of the same call, which keeps it alive
	// anyway), so the scenario is repeated to make a miss unlikely.
	for i := range 6 {
		if err := os.Remove(pidFile); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if !survivesThreadExits(t, h, pidFile) {
			t.Fatalf("run %d: the program was killed when unrelated threads exited", i)
		}
	}
}

// survivesThreadExits runs h, ends as many threads as it can while the
// program runs, and reports whether the program survived.
func survivesThreadExits(t *testing.T, h adapter.Handler, pidFile string) bool {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, h, nil, nil, nil)
		done <- err
	}()
	pid := readPID(t, pidFile)

	// Goroutines that lock their thread and block take every idle thread
	// of the process (the runtime hands a blocked locked goroutine's P to
	// an idle thread before it creates one), the one that started the
	// program included unless it is kept; ending them locked ends those
	// threads.
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			<-release
		}()
	}
	time.Sleep(100 * time.Millisecond) // time for the runtime to start threads: not observable from the test
	close(release)
	wg.Wait()
	time.Sleep(50 * time.Millisecond)
	alive := !pidGone(pid)
	cancel()
	<-done
	return alive
}
