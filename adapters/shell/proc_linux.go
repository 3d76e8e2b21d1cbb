package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/proc"
)

// runResult is how a run ended.
type runResult struct {
	status   syscall.WaitStatus
	timedOut bool
	ctxErr   error // the cause when ctx ended the run
}

func platformCheck(hcl.Range) hcl.Diagnostics { return nil }

// runProcess starts cmd through sup as the leader of a new process group,
// connects it to sio and waits for it, enforcing timeout and ctx. Only
// cmd's Path, Args, Env and Dir are used.
//
// The group is killed in every case: when its leader exits (sup kills it
// before reaping the leader, so its ID names no other group), and on mcpd's
// exit, SIGKILL included, with everything the program started in whatever
// group (see engine/proc). That is what lets a call end promptly even when
// a grandchild holds stdout open.
//
// On timeout or cancellation the group gets SIGTERM, then SIGKILL once the
// leader has exited or grace has passed, whichever comes first.
//
// The pipes are mcpd's own, not exec.Cmd's, so that output the program
// wrote is never lost: exec's WaitDelay closes the pipes at a deadline,
// which under heavy load can come before the reader got to buffered data.
// Here readers run until EOF; only when a process outside the group keeps a
// pipe open past pipeReadDelay do they stop, after taking what is buffered.
func runProcess(ctx context.Context, cmd *exec.Cmd, sio stdio, timeout, grace time.Duration, sup *proc.Supervisor) (runResult, error) {
	p, err := openPipes(sio.stdin != nil)
	if err != nil {
		return runResult{}, &startError{err}
	}
	pr, err := sup.Start(proc.Command{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
		Stdin: p.inR, Stdout: p.outW, Stderr: p.errW})
	p.closeChildEnds()
	if err != nil {
		p.closeParentEnds()
		return runResult{}, &startError{err}
	}
	exited := pr.Exited()
	outDone := readStream(p.outR, sio.stdout)
	errDone := readStream(p.errR, sio.stderr)
	var inDone chan struct{}
	if p.inW != nil {
		inDone = make(chan struct{})
		go func() {
			defer close(inDone)
			// EPIPE (the program did not read it all) is not an error.
			_, _ = io.WriteString(p.inW, *sio.stdin)
			_ = p.inW.Close()
		}()
	}

	var res runResult
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		res.timedOut = true
	case <-ctx.Done():
		res.ctxErr = context.Cause(ctx)
	}
	if res.timedOut || res.ctxErr != nil {
		if grace > 0 {
			pr.Signal(syscall.SIGTERM)
			graceTimer := time.NewTimer(grace)
			select {
			case <-exited:
			case <-graceTimer.C:
			}
			graceTimer.Stop()
		}
		// Whatever is left of the group dies now, the leader included.
		pr.Signal(syscall.SIGKILL)
	}
	// The supervisor kills the rest of the group once the leader exited.
	status, waitErr := pr.Wait()
	awaitReaders([]*os.File{p.outR, p.errR}, []chan struct{}{outDone, errDone}, pipeReadDelay)
	if inDone != nil {
		_ = p.inW.Close() // unblocks a write to a process outside the group
		<-inDone
	}
	p.closeParentEnds()
	if waitErr != nil {
		return res, fmt.Errorf("waiting for process: %w", waitErr)
	}
	res.status = status
	return res, nil
}

// pipes are the three pipes of one run: the child's ends are passed to the
// process and closed in mcpd once it started.
type pipes struct {
	inR, inW   *os.File // nil without stdin
	outR, outW *os.File
	errR, errW *os.File
}

func openPipes(withStdin bool) (*pipes, error) {
	p := &pipes{}
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.closeChildEnds()
		p.closeParentEnds()
		return nil, err
	}
	if withStdin {
		if p.inR, p.inW, err = os.Pipe(); err != nil {
			p.closeChildEnds()
			p.closeParentEnds()
			return nil, err
		}
	}
	return p, nil
}

func (p *pipes) closeChildEnds() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (p *pipes) closeParentEnds() {
	for _, f := range []*os.File{p.inW, p.outR, p.errR} {
		if f != nil {
			_ = f.Close() // a second Close of inW is harmless
		}
	}
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// maxFinalRead bounds what a reader takes from a pipe after it was told to
// stop, in case a process outside the group keeps writing.
const maxFinalRead = 4 << 20

// readStream copies f into c until EOF, or until a read deadline set by
// awaitReaders, after which it takes what the pipe holds and stops.
func readStream(f *os.File, c *capture) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		bp := readBufs.Get().(*[]byte)
		defer readBufs.Put(bp)
		buf := *bp
		for {
			n, err := f.Read(buf)
			if n > 0 {
				_, _ = c.Write(buf[:n])
			}
			if err == nil {
				continue
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				takeBuffered(f, c, buf)
			}
			return
		}
	}()
	return done
}

// takeBuffered reads what is already in the pipe without waiting for more.
func takeBuffered(f *os.File, c *capture, buf []byte) {
	if f.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	left := maxFinalRead
	_ = rc.Read(func(fd uintptr) bool {
		for left > 0 {
			n, err := syscall.Read(int(fd), buf[:min(len(buf), left)])
			if err == syscall.EINTR {
				continue
			}
			if n <= 0 || err != nil {
				break // EAGAIN: nothing more buffered; 0: EOF
			}
			_, _ = c.Write(buf[:n])
			left -= n
		}
		return true
	})
}

// awaitReaders waits for the readers to reach EOF. Once the process group
// is dead only a process that left it can hold a pipe open; after delay the
// readers are told to take what is buffered and stop.
func awaitReaders(files []*os.File, dones []chan struct{}, delay time.Duration) {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for i, done := range dones {
		select {
		case <-done:
			continue
		case <-timer.C:
		}
		for _, f := range files[i:] {
			if f.SetReadDeadline(time.Now()) != nil {
				_ = f.Close() // not pollable: closing is the only way to stop
			}
		}
		for _, d := range dones[i:] {
			<-d
		}
		return
	}
}
