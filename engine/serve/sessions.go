package serve

import (
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionCap keeps at most max legacy (2025-11-25) sessions open: when an
// initialize opens one more, the session idle the longest is closed, and
// its next request gets 404 (the client starts a new session). A session
// is idle while it has no POST in flight, and its age is that of its last
// POST; an open GET stream neither makes it busy nor young, since every
// client keeps one. The SDK's handler neither counts
// sessions nor says when one was last used, so the router tracks them by
// the Mcp-Session-Id of the requests it passes on and of the initialize
// responses.
//
// Only idle sessions are closed, so more than max can be open while more
// than max have a request in flight, which MaxInflight bounds.
type sessionCap struct {
	max int
	// sessions lists the open sessions, of every endpoint: the cap is
	// the server's, whichever path a session was opened on.
	sessions func() iter.Seq[*mcp.ServerSession]

	mu   sync.Mutex
	open map[string]*sessionUse
}

type sessionUse struct {
	last time.Time // the start or end of the last POST
	busy int       // POSTs in flight
}

func newSessionCap(max int, sessions func() iter.Seq[*mcp.ServerSession]) *sessionCap {
	return &sessionCap{max: max, sessions: sessions, open: map[string]*sessionUse{}}
}

// serve serves a legacy request with next, tracking its session.
func (c *sessionCap) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		next.ServeHTTP(w, r)
		// The SDK sends the new session's id in the answer to
		// initialize, and only there.
		if r.Method == http.MethodPost {
			if sid := w.Header().Get("Mcp-Session-Id"); sid != "" {
				c.opened(sid)
			}
		}
		return
	}
	post := r.Method == http.MethodPost
	u := c.begin(id, post)
	defer c.end(id, u, post, r.Method == http.MethodDelete)
	next.ServeHTTP(w, r)
}

// begin marks a request on a tracked session and returns it, or nil for an
// id not tracked (yet): the SDK answers an unknown id with 404, and a
// client may use its new id before opened has recorded it.
func (c *sessionCap) begin(id string, post bool) *sessionUse {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.open[id]
	if u != nil && post {
		u.last = time.Now()
		u.busy++
	}
	return u
}

func (c *sessionCap) end(id string, u *sessionUse, post, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if deleted {
		delete(c.open, id)
		return
	}
	if u != nil && post {
		u.last = time.Now()
		u.busy--
	}
}

// opened records a new session and, past the cap, closes the oldest idle
// ones.
func (c *sessionCap) opened(id string) {
	c.mu.Lock()
	c.open[id] = &sessionUse{last: time.Now()}
	if len(c.open) <= c.max {
		c.mu.Unlock()
		return
	}
	// Forget the sessions the SDK has closed meanwhile (idle timeout,
	// DELETE, a failed initialize) before choosing whom to close.
	live := map[string]bool{}
	for ss := range c.sessions() {
		live[ss.ID()] = true
	}
	for sid := range c.open {
		if !live[sid] && sid != id {
			delete(c.open, sid)
		}
	}
	var victims []string
	for len(c.open) > c.max {
		victim := ""
		var oldest time.Time
		for sid, u := range c.open {
			if sid != id && u.busy == 0 && (victim == "" || u.last.Before(oldest)) {
				victim, oldest = sid, u.last
			}
		}
		if victim == "" {
			break
		}
		delete(c.open, victim)
		victims = append(victims, victim)
	}
	c.mu.Unlock()
	if len(victims) == 0 {
		return
	}
	closing := map[string]bool{}
	for _, v := range victims {
		closing[v] = true
	}
	var sessions []*mcp.ServerSession
	for ss := range c.sessions() {
		if closing[ss.ID()] {
			sessions = append(sessions, ss)
		}
	}
	// Close ends the session's GET stream and removes it from the SDK's
	// handler, which answers its id with 404 from then on. It waits for
	// the session's requests to end, and one may have begun since it was
	// chosen: the initialize that made room does not wait for that.
	go func() {
		for _, ss := range sessions {
			ss.Close()
		}
	}()
}
