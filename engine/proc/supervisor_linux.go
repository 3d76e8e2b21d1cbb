package proc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Supervisor starts programs through mcpd's helper process (see the package
// comment) and kills them all on KillAll. Whoever owns the process's
// lifecycle (main) makes one and hands it to the adapters that start
// programs; it belongs to that owner rather than to the package, so that
// KillAll in one test or command cannot kill another's programs.
//
// The helper is started on the first Start, so a command that starts no
// program pays nothing. If it dies (killed by hand, say) its programs die
// with it (Pdeathsig) and their Processes report it; the next Start starts
// a new helper. A Supervisor that is no longer reachable ends its helper
// (and so whatever is left of its programs): a test or an in-process
// command that made one does not leave a helper behind for the life of the
// process.
type Supervisor struct {
	supervisor *supervisor // the state: the helper's reader holds it, not the Supervisor
}

type supervisor struct {
	mu     sync.Mutex
	h      *helper // nil: none running
	next   uint64
	killed bool // KillAll ran: Start refuses
}

// NewSupervisor returns a Supervisor; it starts nothing yet.
func NewSupervisor() *Supervisor {
	s := &Supervisor{supervisor: &supervisor{}}
	runtime.AddCleanup(s, (*supervisor).release, s.supervisor)
	return s
}

// Start starts c as the leader of a new process group, from the helper.
// Its error for a program that could not be started is an *os.PathError
// where the kernel gave an errno, as os/exec's is.
func (s *Supervisor) Start(c Command) (*Process, error) {
	p, err := s.supervisor.start(c)
	if p != nil {
		p.sup = s // a running program keeps its Supervisor (and helper)
	}
	runtime.KeepAlive(s)
	return p, err
}

// KillAll makes Start refuse from now on and has the helper kill every
// program started and everything they started, then exit. It returns how
// many programs were still running. It does not wait (see Wait): it is
// called on a forced exit, where mcpd exits right after, and the helper
// finishes the job on its own once mcpd is gone. It is safe to call more
// than once, and from a signal handler's goroutine while calls run.
func (s *Supervisor) KillAll() int { return s.supervisor.killAll() }

// Wait waits, after KillAll, until the helper has killed and reaped
// everything and exited, or ctx ends.
func (s *Supervisor) Wait(ctx context.Context) error { return s.supervisor.wait(ctx) }

// Live is the number of programs started and not yet reaped.
func (s *Supervisor) Live() int { return s.supervisor.live() }

// release ends the helper of a Supervisor nobody holds any more.
func (s *supervisor) release() {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	if h != nil {
		_ = h.conn.CloseWrite()
	}
}

// ErrExiting is Start's error after KillAll.
var ErrExiting = errors.New("mcpd is exiting: no program is started")

// errHelperGone ends the Processes of a helper that died.
var errHelperGone = errors.New("mcpd's process supervisor ended")

// helper is mcpd's end of one helper process.
type helper struct {
	conn  *net.UnixConn
	cmd   *exec.Cmd
	wmu   sync.Mutex // one message at a time: a message may be several packets
	procs map[uint64]*Process
	gone  chan struct{} // the helper's socket reached EOF: it exited
}

// Process is a program started by Start: the leader of its own process
// group.
type Process struct {
	sup     *Supervisor
	h       *helper
	id      uint64
	pid     int
	started chan struct{}
	err     error // why it did not start, or why it ended without a status
	exited  chan struct{}
	status  syscall.WaitStatus
}

func (s *supervisor) start(c Command) (*Process, error) {
	s.mu.Lock()
	if s.killed {
		s.mu.Unlock()
		return nil, ErrExiting
	}
	h := s.h
	if h == nil {
		var err error
		if h, err = startHelper(); err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("starting mcpd's process supervisor: %w", err)
		}
		s.h = h
		go s.read(h)
	}
	s.next++
	p := &Process{h: h, id: s.next, started: make(chan struct{}), exited: make(chan struct{})}
	h.procs[p.id] = p
	s.mu.Unlock()

	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	req := request{Op: "start", ID: p.id, Path: c.Path, Args: c.Args, Env: env, Dir: c.Dir}
	var fds []int
	for _, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr} {
		if f == nil {
			req.Streams += "-"
			continue
		}
		req.Streams += "x"
		fds = append(fds, int(f.Fd()))
	}
	h.wmu.Lock()
	err := send(h.conn, req, fds)
	h.wmu.Unlock()
	// The descriptors were copied into the message (f.Fd above made them
	// blocking, as os/exec does: the program's ends of its pipes).
	runtime.KeepAlive(c)
	if err != nil {
		s.forget(h, p)
		return nil, fmt.Errorf("asking mcpd's process supervisor: %w", err)
	}
	<-p.started
	if p.err != nil {
		var pe *os.PathError
		if errors.As(p.err, &pe) {
			pe.Path = c.Path
		}
		return nil, p.err
	}
	return p, nil
}

func (s *supervisor) forget(h *helper, p *Process) {
	s.mu.Lock()
	delete(h.procs, p.id)
	s.mu.Unlock()
}

// read dispatches the helper's replies until its socket ends, then ends
// every Process still waiting on it.
func (s *supervisor) read(h *helper) {
	buf := make([]byte, chunkSize+1)
	for {
		var r reply
		fds, err := receive(h.conn, &r, buf)
		closeFDs(fds) // the helper sends none
		if err != nil {
			break
		}
		s.mu.Lock()
		p := h.procs[r.ID]
		if p != nil && r.Op == "exited" {
			delete(h.procs, r.ID)
		}
		if p != nil && r.Op == "started" && r.Err != "" {
			delete(h.procs, r.ID)
		}
		s.mu.Unlock()
		if p == nil {
			continue
		}
		switch r.Op {
		case "started":
			if r.Err != "" {
				p.err = startErr(r)
			} else {
				p.pid = r.Pid
			}
			close(p.started)
		case "exited":
			p.status = syscall.WaitStatus(r.Status)
			close(p.exited)
		}
	}
	s.mu.Lock()
	if s.h == h {
		s.h = nil
	}
	left := h.procs
	h.procs = nil
	s.mu.Unlock()
	for _, p := range left {
		p.err = errHelperGone
		select {
		case <-p.started:
		default:
			close(p.started)
		}
		close(p.exited)
	}
	_ = h.conn.Close()
	_ = h.cmd.Wait()
	close(h.gone)
}

func startErr(r reply) error {
	if r.Errno != 0 {
		op := r.ErrOp
		if op == "" {
			op = "fork/exec"
		}
		return &os.PathError{Op: op, Path: "", Err: syscall.Errno(r.Errno)}
	}
	return errors.New(r.Err)
}

// startHelper re-executes mcpd's binary as its helper, with one end of a
// socket pair as fd 3.
func startHelper() (*helper, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "supervisor"), os.NewFile(uintptr(fds[1]), "supervisor")
	defer theirs.Close()
	// /proc/self/exe rather than os.Executable's path: it is this binary
	// even if the file was replaced or removed since mcpd started.
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{helperArg0},
		Env:        append(os.Environ(), fmt.Sprintf("%s=%d", helperEnv, helperFD)),
		ExtraFiles: []*os.File{theirs}, Stderr: os.Stderr,
		// Its own process group: a signal to mcpd's group (a terminal's
		// ^C, a kill of the job) must leave it to see mcpd end and clean
		// up after it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		ours.Close()
		return nil, err
	}
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return &helper{conn: c.(*net.UnixConn), cmd: cmd, procs: map[uint64]*Process{}, gone: make(chan struct{})}, nil
}

func (s *supervisor) killAll() int {
	s.mu.Lock()
	s.killed = true
	h := s.h
	n := 0
	if h != nil {
		n = len(h.procs)
	}
	s.mu.Unlock()
	if h != nil {
		// EOF is the helper's signal to kill everything and exit.
		_ = h.conn.CloseWrite()
	}
	return n
}

func (s *supervisor) wait(ctx context.Context) error {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	if h == nil {
		return nil
	}
	select {
	case <-h.gone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *supervisor) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return 0
	}
	return len(s.h.procs)
}

// Pid is the program's PID, which is also its process group's ID.
func (p *Process) Pid() int { return p.pid }

// Exited is closed once the program's leader has exited, its group has
// been killed and the leader reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Signal sends sig to the program's process group, if its leader has not
// exited yet.
func (p *Process) Signal(sig syscall.Signal) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.h.wmu.Lock()
	defer p.h.wmu.Unlock()
	_ = send(p.h.conn, request{Op: "signal", ID: p.id, Sig: int(sig)}, nil)
}

// Wait waits for Exited and returns the leader's wait status; the error is
// set when the helper died before it could report one.
func (p *Process) Wait() (syscall.WaitStatus, error) {
	<-p.exited
	if p.err != nil {
		return 0, p.err
	}
	return p.status, nil
}
