package mcpadapter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpd/mcpd/engine/proc"
)

// stderrDrain bounds how long stop waits for the program's stderr to end
// after its group was killed: a process that left the group may hold it
// open.
const stderrDrain = time.Second

// startProcess starts a stdio upstream's program through the config's
// supervisor, as the leader of its own process group, with its stderr going
// to log line by line. The returned process's stop closes its stdin, gives
// it stopGrace to exit, then kills the whole group and reaps it.
func startProcess(c *serverConfig, log *slog.Logger) (*process, error) {
	path := c.command[0]
	if !strings.Contains(path, "/") {
		var err error
		if path, err = exec.LookPath(path); err != nil {
			return nil, fmt.Errorf("starting %s: %w", c.command[0], err)
		}
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, err
	}
	pr, err := c.procs.Start(proc.Command{Path: path, Args: c.command, Env: c.environ(), Dir: c.dir,
		Stdin: inR, Stdout: outW, Stderr: errW})
	for _, f := range []*os.File{inR, outW, errW} {
		f.Close() // the program's ends: it has its own copies
	}
	if err != nil {
		for _, f := range []*os.File{inW, outR, errR} {
			f.Close()
		}
		if errors.Is(err, proc.ErrUnsupported) {
			return nil, errors.New("stdio upstreams (command) need Linux; use url with a Streamable HTTP server")
		}
		return nil, fmt.Errorf("starting %s: %w", c.command[0], err)
	}
	stderr := &lineLog{log: log, redact: c.secrets}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		_, _ = io.Copy(stderr, errR)
	}()
	var once sync.Once
	p := &process{stdin: inW, stdout: outR}
	p.stop = func() {
		once.Do(func() {
			_ = inW.Close()
			select {
			case <-pr.Exited():
			case <-time.After(stopGrace):
				pr.Signal(syscall.SIGKILL)
			}
			// The supervisor killed what is left of the group once the
			// leader exited.
			_, _ = pr.Wait()
			// A grandchild that left the group and keeps stderr open must
			// not hold up the stop.
			select {
			case <-stderrDone:
			case <-time.After(stderrDrain):
				_ = errR.SetReadDeadline(time.Now())
				<-stderrDone
			}
			_ = errR.Close()
			_ = outR.Close()
			stderr.flush()
		})
	}
	return p, nil
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
