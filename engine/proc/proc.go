// Package proc starts the programs mcpd runs (shell calls, stdio upstreams)
// so that they end with mcpd on every exit path, SIGKILL included.
//
// The kernel's parent-death signal (Pdeathsig) reaches only a direct child:
// what a program started (`sh -c 'sleep 1000 & wait'`, a daemon that
// forked and called setsid) was reparented to PID 1 and ran on after mcpd
// was killed. Nothing in a process can act on its own SIGKILL, so another
// process has to: a Supervisor starts one helper per mcpd, a re-execution
// of mcpd's own binary, which starts every program on mcpd's behalf and so
// is their parent. The helper
//
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so that everything its
//     programs start and leave behind is reparented to it, not to PID 1,
//     whatever process group or session it moved to;
//   - watches its socket to mcpd, which the kernel closes whichever way mcpd
//     ends: at EOF it kills every process group it started and every
//     process reparented to it, reaps them, and exits;
//   - starts its programs with Pdeathsig=SIGKILL from one thread that lives
//     as long as it does, so that a helper killed itself takes its direct
//     children with it.
//
// One helper per mcpd rather than one per program: a re-execution of mcpd
// costs about 10 ms (the runtime and package initialization of a large
// binary) against about 2 ms for a whole shell call; a message to the
// helper costs tens of microseconds. The program's stdin, stdout and stderr
// are mcpd's own pipes, passed to the helper over the socket (SCM_RIGHTS),
// so mcpd reads and writes them as if it had started the program itself.
//
// Each program leads its own process group. When the leader exits the
// helper kills the group (SIGKILL) before it reaps the leader, so the
// group's ID, which is the leader's PID, cannot name another group at the
// kill; signals mcpd asks for (Process.Signal) are sent by the helper in
// the same loop, under the same rule. A call's group therefore never
// outlives its leader, as before; a process that left the group lives until
// mcpd exits.
package proc

import (
	"errors"
	"os"
)

// ErrUnsupported is Start's error outside Linux.
var ErrUnsupported = errors.New("starting programs needs Linux (process groups and a subreaper)")

// Command is a program to start as the leader of a new process group.
type Command struct {
	Path string   // as exec.Cmd.Path: a path, already looked up
	Args []string // Args[0] included
	Env  []string // nil: mcpd's environment
	Dir  string   // "": mcpd's working directory
	// The program's standard streams; nil: /dev/null. The helper gets its
	// own copies, so the caller may close these once Start returned.
	Stdin, Stdout, Stderr *os.File
}
