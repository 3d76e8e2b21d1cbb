package mcpadapter

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/principal"
)

// A 2025-11-25 upstream's requests (elicitation, sampling, roots), and any
// upstream's log records, name no call: they belong to whatever runs on
// the session they came on. A call of an HTTP upstream whose client wants
// log records, or of a 2025-11-25 one whose client can be asked,
// therefore runs on a session of its own for as long as the call lasts,
// taken from a pool of idle sessions (or connected for it when none is
// idle), so that every request and record on that session is the call's,
// whichever era its client speaks and however many calls are in flight. When the call ends cleanly (a
// result or a protocol error, not cancelled, no question of it still
// being asked), its session goes back to the pool for the next such call:
// one handshake serves many calls. A session that failed, or whose call
// was cancelled (the upstream's tool may still run, and ask, on it), is
// closed instead.
//
// Bounds: at most max_idle_sessions idle sessions per upstream (the rest
// are closed as their calls end), each closed after idle_session_timeout
// unused; the pool is closed with the upstream (reload, shutdown). An
// upstream that has forgotten a pooled session (it restarted, or its own
// session timeout passed) answers 404 before running anything: the call
// is made once more on a new session.
//
// A pooled session serves one call at a time, and only calls of the
// caller it was first connected for (the verified principal; all
// unauthenticated callers are one): an upstream that keeps state per
// session (cached roots, a question sent after its call ended) never
// shows one caller's to another. When the pool is full, the session idle
// longest makes room. max_idle_sessions = 0 gives every such call a
// session of its own, closed after it.
//
// A stdio upstream has one session (a process per call is not an option):
// its requests are relayed only while one of its calls is in flight, and
// it has served one caller only (relay.go). What comes on a pooled
// session while it is idle belongs to no call, and is dropped.

const (
	defaultMaxIdle = 8
	maxMaxIdle     = 256
	// defaultIdleTimeout is short of the session timeouts servers
	// commonly have (mcpd's own: 10 minutes), and long enough to carry an
	// agent's calls from one turn to the next.
	defaultIdleTimeout = time.Minute
)

// sessionPool is an HTTP upstream's idle sessions. It connects none
// itself: dial makes one (the connection's handshake, connect.go).
type sessionPool struct {
	maxIdle     int           // max_idle_sessions
	idleTimeout time.Duration // idle_session_timeout
	dial        func(context.Context) (*mcp.ClientSession, error)
	log         *slog.Logger
	redact      func(string) string

	mu     sync.Mutex
	idle   []*pooledSession // the latest given back last, and taken first
	busy   int              // sessions in use by calls
	closed bool

	connects atomic.Int64 // sessions connected for the pool (handshakes)
}

// pooledSession is one session of the pool, in use or idle.
type pooledSession struct {
	cs    *mcp.ClientSession
	owner string // the caller whose calls it serves (ownerOf)
	// Under the pool's mutex:
	idle   bool        // in the pool's idle list
	ended  bool        // the session ended (closed by either side)
	reused bool        // served a call before: the upstream may have forgotten it
	gen    int         // times given back: which idle timer is current
	timer  *time.Timer // closes it once idle_session_timeout passed, while idle
}

// pooled reports whether a call takes a session of the pool: on an HTTP
// upstream, a call whose client wants its log records (which name no
// call), and on the 2025-11-25 protocol (which asks within its calls, on
// the call's session) one whose client can answer something (caps). A
// 2026-07-28 upstream asks in its results instead, which are the call's
// wherever they come.
func (u *upstream) pooled(shared *mcp.ClientSession, caps *mcp.ClientCapabilities, wantsLog bool) bool {
	return u.cfg.url != "" && (wantsLog || !modernSession(shared) && canBeAsked(caps))
}

// canBeAsked reports whether a client declared anything an upstream's
// request may ask of it.
func canBeAsked(c *mcp.ClientCapabilities) bool {
	return c != nil && (c.Elicitation != nil || c.Sampling != nil || c.RootsV2 != nil || c.Roots.ListChanged)
}

// take gives a call the exclusive use of a session of the HTTP
// upstream: the pool's latest idle one, or a new one.
func (p *sessionPool) take(ctx context.Context) (*pooledSession, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	owner := ownerOf(ctx)
	for i := len(p.idle) - 1; i >= 0; i-- {
		s := p.idle[i]
		if s.owner != owner {
			continue
		}
		p.idle = slices.Delete(p.idle, i, i+1)
		s.idle = false
		s.timer.Stop() // if it fired meanwhile, expireIdle finds s in use
		p.busy++
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	s, err := p.connectBusy(ctx)
	if err == nil {
		s.owner = owner
	}
	return s, err
}

// ownerOf is the caller of a call under ctx, whose pooled sessions (and,
// with a per-caller identity, sessions: identity.go) serve no other
// caller: "" for one that is not authenticated. The issuer is part of it:
// two authorization servers may name different people alike.
func ownerOf(ctx context.Context) string {
	p := principal.FromContext(ctx)
	if p == nil {
		return ""
	}
	iss, _ := p.Claims["iss"].(string)
	return p.Method + ":" + iss + "\x00" + p.Name
}

// connect connects a new session for the pool.
func (p *sessionPool) connect(ctx context.Context) (*pooledSession, error) {
	cs, err := p.dial(ctx)
	if err != nil {
		return nil, err
	}
	p.connects.Add(1)
	s := &pooledSession{cs: cs}
	go func() {
		_ = cs.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		s.ended = true
		if s.idle {
			s.idle = false
			s.timer.Stop()
			p.idle = slices.DeleteFunc(p.idle, func(e *pooledSession) bool { return e == s })
		}
	}()
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed { // Close ran while the handshake did
		_ = cs.Close()
		return nil, errClosed
	}
	return s, nil
}

// giveBack ends a call's use of s: with clean, it goes back to the pool
// if there is room; otherwise it is closed (after cancelGrace when ctx,
// the call's, was cancelled, so that notifications/cancelled gets out).
func (p *sessionPool) giveBack(ctx context.Context, s *pooledSession, clean bool) {
	p.mu.Lock()
	p.busy--
	keep := clean && !p.closed && !s.ended && p.maxIdle > 0
	var evicted *pooledSession
	if keep && len(p.idle) >= p.maxIdle {
		// The session idle longest makes room: the latest is the likelier
		// to serve its caller's next call.
		evicted = p.idle[0]
		p.idle = p.idle[1:]
		evicted.idle = false
		evicted.timer.Stop()
	}
	if keep {
		s.idle, s.reused = true, true
		s.gen++
		gen := s.gen
		s.timer = time.AfterFunc(p.idleTimeout, func() { p.expireIdle(s, gen) })
		p.idle = append(p.idle, s)
	}
	p.mu.Unlock()
	if evicted != nil {
		go evicted.cs.Close() // its DELETE is no part of this call
	}
	if !keep {
		closeOwn(ctx, s.cs)
	}
}

// expireIdle closes s if it is still idle since its gen-th return.
func (p *sessionPool) expireIdle(s *pooledSession, gen int) {
	p.mu.Lock()
	if !s.idle || s.gen != gen {
		p.mu.Unlock()
		return
	}
	s.idle = false
	p.idle = slices.DeleteFunc(p.idle, func(e *pooledSession) bool { return e == s })
	p.mu.Unlock()
	_ = s.cs.Close()
}

// close closes the idle sessions, and makes the busy ones close when
// their calls end (the upstream is closed).
func (p *sessionPool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	for _, s := range idle {
		s.idle = false
		s.timer.Stop()
	}
	p.mu.Unlock()
	// Each close tells the upstream (DELETE), within the SDK's bound:
	// at once, not one after the other.
	var wg sync.WaitGroup
	for _, s := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.cs.Close()
		}()
	}
	wg.Wait()
}

// state is the pool's idle and busy sessions, and the sessions it
// connected so far.
func (p *sessionPool) state() (idle, busy int, connects int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle), p.busy, p.connects.Load()
}

// call makes one call on the pooled session s, which relay
// registers for the upstream's requests (by its session), and ends the
// call's use of it. A session taken from the pool that the upstream has
// forgotten saw nothing of the call (HTTP 404 to the call's POST): the
// call is made once more, on a new session. The session returned is the
// one the call ran on.
func (p *sessionPool) call(ctx context.Context, s *pooledSession, params mcp.RequestParams, relay func(context.Context, *mcp.ClientSession) (context.Context, func())) (mcp.Result, *mcp.ClientSession, error) {
	for retried := false; ; retried = true {
		rctx, forget := relay(ctx, s.cs)
		res, err := send(rctx, s.cs, params)
		asking := relayOf(rctx).asking.Load()
		forget()
		p.mu.Lock()
		reused := s.reused
		p.mu.Unlock()
		if err != nil && !retried && reused && errors.Is(err, mcp.ErrSessionMissing) && ctx.Err() == nil {
			p.giveBack(ctx, s, false)
			p.log.Info("upstream forgot a pooled session; connecting another", "err", p.redact(err.Error()))
			next, cerr := p.connectBusy(ctx)
			if cerr != nil {
				return nil, s.cs, cerr
			}
			next.owner = s.owner
			s = next
			continue
		}
		p.giveBack(ctx, s, cleanEnd(ctx, err) && asking == 0)
		return res, s.cs, err
	}
}

// connectBusy connects a new session for the pool, counted in use.
func (p *sessionPool) connectBusy(ctx context.Context) (*pooledSession, error) {
	p.mu.Lock()
	p.busy++
	p.mu.Unlock()
	s, err := p.connect(ctx)
	if err != nil {
		p.mu.Lock()
		p.busy--
		p.mu.Unlock()
	}
	return s, err
}
