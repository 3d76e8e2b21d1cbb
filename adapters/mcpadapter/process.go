package mcpadapter

import (
	"errors"
	"fmt"
	"io"
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
// to stderr (the upstream's log, bounded: output.go). The returned process's stop closes its stdin, gives
// it stopGrace to exit, then kills the whole group and reaps it.
func startProcess(c *serverConfig, stderr *stderrWriter) (*process, error) {
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
