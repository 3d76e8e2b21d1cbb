package mcpadapter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callerSessions are the sessions of an HTTP upstream whose identity is
// the caller's (identity.go): one per caller, made with that caller's
// token on the caller's first call and shared by the caller's concurrent
// calls, as the supervisor's session is by everyone's when the identity is
// mcpd's. A session ends after idle_session_timeout without a call, when
// it breaks (the next call makes another), and with the upstream. At most
// maxCallerSessions are kept: beyond, the one idle longest is closed.
//
// Calls that need a session to themselves (pool.go) take pooled sessions,
// which are bound to their caller as well.
type callerSessions struct {
	dial        func(ctx context.Context, tok *callToken) (*mcp.ClientSession, error)
	idleTimeout time.Duration
	max         int

	mu     sync.Mutex
	m      map[string]*callerSession
	closed bool
}

// maxCallerSessions bounds the callers whose sessions are kept at once.
const maxCallerSessions = 1024

type callerSession struct {
	ready chan struct{} // closed once connected (or failed)
	cs    *mcp.ClientSession
	err   error
	// Under the sessions' mutex:
	calls int         // in flight
	used  time.Time   // when the latest call ended
	timer *time.Timer // checks, from its first release on, whether it is idle
}

// get returns the session of tok's owner, connecting it if there is none,
// and the function that ends the call's use of it.
func (c *callerSessions) get(ctx context.Context, tok *callToken) (*mcp.ClientSession, func(), error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, errClosed
	}
	if c.m == nil {
		c.m = map[string]*callerSession{}
	}
	s := c.m[tok.owner]
	if s == nil {
		s = &callerSession{ready: make(chan struct{})}
		c.evictLocked()
		c.m[tok.owner] = s
		// Made under its own bounds (dial: connect_timeout, the
		// upstream's life), not the first call's: other calls of the
		// caller may wait for it.
		go c.connect(tok, s)
	}
	s.calls++
	c.mu.Unlock()
	release := func() { c.release(tok.owner, s) }
	select {
	case <-s.ready:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if s.err != nil {
		release()
		return nil, nil, s.err
	}
	return s.cs, release, nil
}

func (c *callerSessions) connect(tok *callToken, s *callerSession) {
	cs, err := c.dial(context.Background(), tok)
	c.mu.Lock()
	s.cs, s.err = cs, err
	if err != nil && c.m[tok.owner] == s {
		delete(c.m, tok.owner) // the next call tries again
	}
	closed := c.closed
	c.mu.Unlock()
	close(s.ready)
	if err != nil {
		return
	}
	if closed {
		_ = cs.Close()
		return
	}
	go func() {
		_ = cs.Wait()
		c.mu.Lock()
		if c.m[tok.owner] == s {
			delete(c.m, tok.owner)
		}
		c.mu.Unlock()
	}()
}

// release ends one call's use of s. The first arms its idle timer: one
// per session, however many calls.
func (c *callerSessions) release(owner string, s *callerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.calls--
	s.used = time.Now()
	if s.timer == nil {
		s.timer = time.AfterFunc(c.idleTimeout, func() { c.expire(owner, s) })
	}
}

// expire closes s once no call has used it for idle_session_timeout; it
// looks again later while one does or did.
func (c *callerSessions) expire(owner string, s *callerSession) {
	c.mu.Lock()
	if c.m[owner] != s {
		c.mu.Unlock()
		return
	}
	if s.calls > 0 {
		s.timer.Reset(c.idleTimeout)
		c.mu.Unlock()
		return
	}
	if idle := time.Since(s.used); idle < c.idleTimeout {
		s.timer.Reset(c.idleTimeout - idle)
		c.mu.Unlock()
		return
	}
	delete(c.m, owner)
	c.mu.Unlock()
	<-s.ready
	if s.cs != nil {
		_ = s.cs.Close()
	}
}

// evictLocked makes room for one more session: the one idle longest is
// closed. Sessions in use are never closed; their number is bounded by
// the calls in flight.
func (c *callerSessions) evictLocked() {
	if len(c.m) < c.max {
		return
	}
	var oldest string
	var victim *callerSession
	for owner, s := range c.m {
		if s.calls == 0 && s.cs != nil && (victim == nil || s.used.Before(victim.used)) {
			oldest, victim = owner, s
		}
	}
	if victim != nil {
		delete(c.m, oldest)
		go victim.cs.Close()
	}
}

// broken closes cs if it is a caller's session: its transport failed, and
// the caller's next call makes another. It reports whether it was one.
func (c *callerSessions) broken(cs *mcp.ClientSession) bool {
	c.mu.Lock()
	found := false
	for owner, s := range c.m {
		if s.cs == cs {
			delete(c.m, owner)
			found = true
			break
		}
	}
	c.mu.Unlock()
	if found {
		_ = cs.Close()
	}
	return found
}

// count is the number of callers with a session.
func (c *callerSessions) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// close closes every caller's session.
func (c *callerSessions) close() {
	c.mu.Lock()
	c.closed = true
	all := make([]*callerSession, 0, len(c.m))
	for _, s := range c.m {
		all = append(all, s)
	}
	c.m = nil
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-s.ready:
			case <-time.After(stopGrace):
				return
			}
			if s.cs != nil {
				_ = s.cs.Close()
			}
		}()
	}
	wg.Wait()
}

// errNoCallToken guards against a call without a caller's token reaching
// the callers' sessions.
var errNoCallToken = errors.New("no caller identity for the call")
