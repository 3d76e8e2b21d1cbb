//go:build linux

package mcpadapter

import (
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// startProcess starts a stdio upstream's program as the leader of its own
// process group, recorded in the config's ProcessGroups, with its stderr
// going to stderr (the upstream's log, bounded: output.go). The returned
// process's stop closes its stdin, gives it stopGrace to exit, then kills
// the whole group and reaps it.
func startProcess(c *serverConfig, stderr *stderrWriter) (*process, error) {
	cmd := exec.Command(c.command[0], c.command[1:]...)
	cmd.Env = c.environ()
	cmd.Dir = c.dir
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild that keeps stderr open must not hold up the reaping.
	cmd.WaitDelay = time.Second
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", c.command[0], err)
	}
	pid := cmd.Process.Pid
	if !c.groups.Track(pid) {
		killGroup(pid) // mcpd is exiting
	}
	exited := make(chan struct{})
	go func() {
		waitExited(pid)
		close(exited)
	}()
	var once sync.Once
	p := &process{cmd: cmd, stdin: stdin, stdout: stdout}
	p.stop = func() {
		once.Do(func() {
			_ = stdin.Close()
			select {
			case <-exited:
			case <-time.After(stopGrace):
			}
			// The group dies before its leader is reaped: until then
			// the leader's PID, the group's ID, cannot be reused.
			killGroup(pid)
			<-exited
			c.groups.Untrack(pid)
			_ = cmd.Wait()
			stderr.flush()
		})
	}
	return p, nil
}

// killGroup sends SIGKILL to the process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// waitExited blocks until pid has exited, without reaping it, so that its
// PID stays reserved until cmd.Wait.
func waitExited(pid int) {
	for {
		var info [128]byte // siginfo_t
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid),
			uintptr(unsafePointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			// Not expected for our own unreaped child: poll.
			for syscall.Kill(pid, 0) == nil && !zombie(pid) {
				time.Sleep(20 * time.Millisecond)
			}
		}
		return
	}
}
