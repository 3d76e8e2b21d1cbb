package shell

import "sync"

// ProcessGroups is the set of process groups the shell adapter has started
// and not yet reaped, so that mcpd can kill them all on its way out.
//
// A call kills its own group when it ends, is cancelled or times out, and
// the kernel kills a program's leader if mcpd dies (Pdeathsig). Neither
// covers what the leader started when mcpd exits while calls run: a forced
// exit (a second SIGTERM) or a shutdown that stops waiting for a call whose
// group ignores SIGTERM. Those grandchildren were reparented to PID 1 and
// ran on. Whoever owns the process's lifecycle (main) makes one set, hands
// it to the adapter and calls KillAll on every exit path.
//
// It belongs to that owner rather than to the package: a package-level set
// would be shared by every adapter and test in the process, and KillAll in
// one would kill the others' programs.
//
// A group is removed before its leader is reaped: until then the leader's
// PID, which is the group's ID, cannot be reused, so KillAll reaches only
// processes mcpd started.
type ProcessGroups struct {
	mu     sync.Mutex
	live   map[int]struct{}
	killed bool // KillAll ran: groups started later are killed at once
}

// NewProcessGroups returns an empty set.
func NewProcessGroups() *ProcessGroups {
	return &ProcessGroups{live: map[int]struct{}{}}
}

// add records a group just started. It reports false after KillAll: the
// caller kills the group at once. A nil set tracks nothing.
func (g *ProcessGroups) add(pgid int) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.killed {
		return false
	}
	g.live[pgid] = struct{}{}
	return true
}

// remove forgets a group whose leader is about to be reaped.
func (g *ProcessGroups) remove(pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	delete(g.live, pgid)
	g.mu.Unlock()
}

// KillAll sends SIGKILL to every live group, and makes every group started
// from now on be killed as soon as it starts. It returns how many groups it
// signalled. It is safe to call more than once, and from a signal handler's
// goroutine while calls run.
func (g *ProcessGroups) KillAll() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.killed = true
	for pgid := range g.live {
		killGroup(pgid)
	}
	return len(g.live)
}

// Live is the number of groups started and not yet reaped.
func (g *ProcessGroups) Live() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}

// Track records a process group that another adapter started (an MCP
// upstream's program), so that KillAll reaches it. It reports false after
// KillAll: the caller kills the group at once. A nil set tracks nothing.
func (g *ProcessGroups) Track(pgid int) bool { return g.add(pgid) }

// Untrack forgets a group tracked with Track, before its leader is reaped.
func (g *ProcessGroups) Untrack(pgid int) { g.remove(pgid) }
