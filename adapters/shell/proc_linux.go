package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/hashicorp/hcl/v2"
)

// killGroup sends SIGKILL to the process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// runResult is how a run ended. state is always set.
type runResult struct {
	state    *os.ProcessState
	timedOut bool
	ctxErr   error // the cause when ctx ended the run
}

func platformCheck(hcl.Range) hcl.Diagnostics { return nil }

// runProcess starts cmd as the leader of a new process group, connects it
// to sio and waits for it, enforcing timeout and ctx. cmd must not have
// Stdin, Stdout or Stderr set.
//
// The group is killed in every case before the leader is reaped: while the
// leader is an unreaped zombie its PID, which is the group's ID, cannot be
// reused, so kill(-pgid) reaches exactly the processes the command started
// (those that did not leave the group with setsid or setpgid). That is what
// lets a call end promptly even when a grandchild holds stdout open.
//
// If mcpd itself dies, the kernel kills the leader (Pdeathsig); what the
// leader started is not covered, see docs/adapter-shell.md.
//
// On timeout or cancellation the group gets SIGTERM, then SIGKILL once the
// leader has exited or grace has passed, whichever comes first.
//
// The pipes are mcpd's own, not exec.Cmd's, so that output the program
// wrote is never lost: exec's WaitDelay closes the pipes at a deadline,
// which under heavy load can come before the reader got to buffered data.
// Here readers run until EOF; only when a process outside the group keeps a
// pipe open past pipeReadDelay do they stop, after taking what is buffered.
//
// groups (nil: none) holds the group while it lives, so that mcpd's exit
// can kill it (see ProcessGroups).
func runProcess(ctx context.Context, cmd *exec.Cmd, sio stdio, timeout, grace time.Duration, groups *ProcessGroups) (runResult, error) {
	p, err := openPipes(sio.stdin != nil)
	if err != nil {
		return runResult{}, &startError{err}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	if p.inR == nil {
		cmd.Stdin = nil // exec connects /dev/null
	}
	// Pdeathsig: if mcpd dies, even by SIGKILL, the kernel kills the
	// program instead of leaving it to init. The kernel sends it when the
	// OS thread that forked the child exits, not the process, and the Go
	// runtime ends a thread whenever a goroutine locked to it returns
	// without unlocking. Locking this goroutine to its thread until the
	// program is reaped keeps that thread alive (nothing else can run on
	// it, so nothing else can end it) for exactly as long as it matters.
	// The cost is one OS thread per running program, which max_concurrency
	// bounds.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	p.closeChildEnds()
	if err != nil {
		p.closeParentEnds()
		return runResult{}, &startError{err}
	}
	pid := cmd.Process.Pid
	if !groups.add(pid) {
		killGroup(pid) // mcpd is exiting
	}
	exited := make(chan struct{})
	go func() {
		waitExited(pid)
		close(exited)
	}()
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
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			graceTimer := time.NewTimer(grace)
			select {
			case <-exited:
			case <-graceTimer.C:
			}
			graceTimer.Stop()
		}
	}
	// Whatever is left of the group dies now, the leader included.
	killGroup(pid)
	<-exited
	// Forgotten before it is reaped, while its ID cannot name another
	// group.
	groups.remove(pid)

	// exec.Cmd has no I/O of its own to wait for: Wait only reaps.
	waitErr := cmd.Wait()
	awaitReaders([]*os.File{p.outR, p.errR}, []chan struct{}{outDone, errDone}, pipeReadDelay)
	if inDone != nil {
		_ = p.inW.Close() // unblocks a write to a process outside the group
		<-inDone
	}
	p.closeParentEnds()

	res.state = cmd.ProcessState
	if res.state == nil {
		return res, fmt.Errorf("waiting for process: %w", waitErr)
	}
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

// waitExited blocks until the process pid has exited, without reaping it
// (waitid with WNOWAIT), so that its PID stays reserved until cmd.Wait.
func waitExited(pid int) {
	const pPID = 1     // idtype_t P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return
		case syscall.EINTR:
			continue
		}
		// Not expected for our own unreaped child; fall back to watching
		// /proc until the process is a zombie or gone.
		pollExited(pid)
		return
	}
}

func pollExited(pid int) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	for {
		if exitedState(path) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitedState reports whether /proc/<pid>/stat says the process is a
// zombie or dead (or no longer exists).
func exitedState(statPath string) bool {
	data, err := os.ReadFile(statPath)
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain ") ".
	for i := len(data) - 1; i >= 0; i-- {
		if data[i] == ')' {
			if i+2 < len(data) {
				switch data[i+2] {
				case 'Z', 'X', 'x':
					return true
				}
			}
			return false
		}
	}
	return true
}
