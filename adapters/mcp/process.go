//go:build linux

package mcpadapter

import (
	"bytes"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startProcess starts a stdio upstream's program as the leader of its own
// process group, recorded in the config's ProcessGroups, with its stderr
// going to log line by line. The returned process's stop closes its stdin,
// gives it stopGrace to exit, then kills the whole group and reaps it.
func startProcess(c *serverConfig, log *slog.Logger) (*process, error) {
	cmd := exec.Command(c.command[0], c.command[1:]...)
	cmd.Env = c.environ()
	cmd.Dir = c.dir
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild that keeps stderr open must not hold up the reaping.
	cmd.WaitDelay = time.Second
	stderr := &lineLog{log: log, redact: c.secrets}
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

// lineLog writes a program's stderr to the log, one record per line, at
// warning level: an upstream's stderr is where it reports its trouble.
type lineLog struct {
	mu     sync.Mutex
	log    *slog.Logger
	redact []string
	buf    []byte
}

const maxLogLine = 8 << 10

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			if len(l.buf) > maxLogLine {
				l.emit()
			}
			break
		}
		l.buf = append(l.buf, p[:i]...)
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit()
	}
}

func (l *lineLog) emit() {
	line := strings.TrimRight(string(l.buf), "\r")
	l.buf = l.buf[:0]
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > maxLogLine {
		line = line[:maxLogLine] + "…"
	}
	for _, s := range l.redact {
		if len(s) >= 4 {
			line = strings.ReplaceAll(line, s, "[redacted]")
		}
	}
	l.log.Warn("upstream stderr", "line", line)
}
