package proc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// The helper is mcpd's own binary (or a test binary that imports this
// package) started with argv[0] helperArg0 and helperEnv naming its socket.
// It runs from this package's init, before main, the way Docker's reexec
// does: any binary that can start programs through a Supervisor can also be
// its helper, with no hook in each main or TestMain. Both markers are
// needed, so that neither a stray variable nor a renamed binary turns mcpd
// into a helper.
const (
	helperArg0 = "mcpd-process-supervisor"
	helperEnv  = "MCPD_PROCESS_SUPERVISOR_FD"
	helperFD   = 3
)

func init() {
	if len(os.Args) == 1 && os.Args[0] == helperArg0 && os.Getenv(helperEnv) == strconv.Itoa(helperFD) {
		os.Exit(runHelper())
	}
}

// helperState is the helper's table of the programs it started and has not
// reaped, by PID.
type helperState struct {
	conn   *net.UnixConn
	byPid  map[int]uint64 // leader PID → mcpd's ID for it
	byID   map[uint64]int
	devnul *os.File
}

func runHelper() int {
	// Pdeathsig is sent when the thread that started a program exits, not
	// the process: every program is started from this goroutine, locked to
	// its thread for the helper's whole life.
	runtime.LockOSThread()
	_ = os.Unsetenv(helperEnv)
	// Named for ps and top (the kernel would say "exe", from /proc/self/exe).
	name := append([]byte("mcpd-supervisor"), 0)
	_ = prctl(pr_SET_NAME, uintptr(unsafe.Pointer(&name[0])))
	syscall.CloseOnExec(helperFD) // the programs must not hold mcpd's socket
	if err := prctl(pr_SET_CHILD_SUBREAPER, 1); err != nil {
		fmt.Fprintln(os.Stderr, "mcpd process supervisor: PR_SET_CHILD_SUBREAPER:", err)
		// Still useful: groups and direct children are killed at EOF.
	}
	// The helper ends when mcpd does (EOF), never by a signal meant for
	// mcpd: caught, unlike ignored, signals are reset for the programs.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)

	f := os.NewFile(helperFD, "mcpd")
	c, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpd process supervisor:", err)
		return 1
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpd process supervisor:", err)
		return 1
	}
	h := &helperState{conn: c.(*net.UnixConn), byPid: map[int]uint64{}, byID: map[uint64]int{}, devnul: devnull}

	type msg struct {
		req request
		fds []int
	}
	msgs := make(chan msg)
	go func() {
		defer close(msgs)
		buf := make([]byte, chunkSize+1)
		for {
			var m msg
			fds, err := receive(h.conn, &m.req, buf)
			if err != nil {
				return // EOF: mcpd is gone, or told us to end
			}
			m.fds = fds
			msgs <- m
		}
	}()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				h.killAll()
				return 0
			}
			h.handle(m.req, m.fds)
		case <-chld:
			h.reap()
		}
	}
}

func (h *helperState) handle(r request, fds []int) {
	switch r.Op {
	case "start":
		h.start(r, fds)
	case "signal":
		closeFDs(fds)
		// Only while the leader is unreaped: its PID still names the group.
		if pid, ok := h.byID[r.ID]; ok {
			_ = syscall.Kill(-pid, syscall.Signal(r.Sig))
		}
	default:
		closeFDs(fds)
	}
}

func (h *helperState) start(r request, fds []int) {
	files := []*os.File{h.devnul, h.devnul, h.devnul}
	var opened []*os.File
	for i, c := range r.Streams {
		if c == '-' || i > 2 {
			continue
		}
		if len(fds) == 0 {
			break
		}
		files[i] = os.NewFile(uintptr(fds[0]), "stream")
		opened = append(opened, files[i])
		fds = fds[1:]
	}
	closeFDs(fds) // more than announced: not ours to keep
	p, err := os.StartProcess(r.Path, r.Args, &os.ProcAttr{
		Dir: r.Dir, Env: r.Env, Files: files,
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	for _, f := range opened {
		_ = f.Close() // the program has its copies; EOF must reach mcpd when it exits
	}
	if err != nil {
		rep := reply{Op: "started", ID: r.ID, Err: err.Error()}
		var pe *os.PathError
		var errno syscall.Errno
		if errors.As(err, &pe) {
			rep.ErrOp = pe.Op
		}
		if errors.As(err, &errno) {
			rep.Errno = int(errno)
		}
		_ = send(h.conn, rep, nil)
		return
	}
	pid := p.Pid
	_ = p.Release() // reaped by reap, with wait4
	h.byPid[pid], h.byID[r.ID] = r.ID, pid
	_ = send(h.conn, reply{Op: "started", ID: r.ID, Pid: pid}, nil)
}

// reap collects every child that has exited. A program's leader takes its
// group with it: the group is killed while the leader is still a zombie,
// so its ID cannot have been reused. Anything else (a process reparented
// here) is only reaped.
func (h *helperState) reap() {
	for {
		pid, err := exitedChild()
		if err != nil || pid == 0 {
			return
		}
		id, leader := h.byPid[pid]
		if leader {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		for {
			_, err = syscall.Wait4(pid, &ws, 0, nil)
			if err != syscall.EINTR {
				break
			}
		}
		if leader {
			delete(h.byPid, pid)
			delete(h.byID, id)
			_ = send(h.conn, reply{Op: "exited", ID: id, Status: uint32(ws)}, nil)
		}
	}
}

// killAll ends everything the helper started or adopted: each program's
// group, then every child left (processes that left their group and were
// reparented here), again and again as killing one reparents its children
// here, until there are no children.
func (h *helperState) killAll() {
	for pid := range h.byPid {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	self := os.Getpid()
	for {
		for _, pid := range childrenOf(self) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil { // ECHILD: none left
			return
		}
		if id, ok := h.byPid[pid]; ok {
			delete(h.byPid, pid)
			delete(h.byID, id)
			_ = send(h.conn, reply{Op: "exited", ID: id, Status: uint32(ws)}, nil)
		}
	}
}

// exitedChild returns the PID of a child that has exited and is not yet
// reaped, without reaping it (waitid with WNOWAIT), or 0 if none has.
func exitedChild() (int, error) {
	const pAll = 0     // idtype_t P_ALL
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0,
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			// si_pid follows si_signo, si_errno and si_code, in a union
			// aligned as a pointer.
			off := 3 * 4
			if unsafe.Sizeof(uintptr(0)) == 8 {
				off = 16
			}
			return int(*(*int32)(unsafe.Pointer(&info[off]))), nil
		case syscall.EINTR:
			continue
		default:
			return 0, errno
		}
	}
}

// childrenOf lists the processes whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	var kids []int
	for _, n := range names {
		p, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		// The parent's PID is the second field after the command name,
		// which is in parentheses and may itself contain ") ".
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			kids = append(kids, p)
		}
	}
	return kids
}

const (
	pr_SET_NAME            = 15
	pr_SET_CHILD_SUBREAPER = 36
)

func prctl(option, arg uintptr) error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, option, arg, 0); errno != 0 {
		return errno
	}
	return nil
}
