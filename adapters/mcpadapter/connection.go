package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Supervision: how a dead upstream is brought back.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
	// stableAfter is how long a connection must have lived for the next
	// failure to start again from minBackoff.
	stableAfter = 30 * time.Second
	// stopGrace is how long a stdio upstream has to exit after its stdin
	// is closed before its process group is killed.
	stopGrace = 2 * time.Second
)

// connection is the supervisor of the upstream's one session (mcpd's own:
// listings, subscriptions, calls that share it): it connects, serves until
// the connection ends, and connects again after a backoff; callers wait on
// it for the session. What a session is made of is the dialer's
// (dial.go); what is done once one is up, the upstream's (connected).
type connection struct {
	cfg  *serverConfig
	log  *slog.Logger
	ctx  context.Context // the upstream's, ended by Close
	dial func() (cs *mcp.ClientSession, stop func(), err error)
	// connected runs when a session is up, before calls may use it
	// (ready: with the session set).
	connected, ready func(cs *mcp.ClientSession)
	// upDown runs (in a goroutine of its own) when the state goes from
	// up to anything else or back.
	upDown func()

	start sync.Once
	done  chan struct{} // closed when the supervisor has stopped

	mu       sync.Mutex
	cs       *mcp.ClientSession // nil while not connected
	lastErr  error              // why the latest connection failed or ended
	changed  chan struct{}      // closed (and replaced) when cs or lastErr changes
	restarts int                // connections lost and made again
	state    string             // "idle", "connecting", "up", "down", "closed"
	attempt  time.Time          // when the latest connection attempt began
	// unauthorized: the latest connection was refused with HTTP 401.
	unauthorized bool
}

func newConnection(cfg *serverConfig, log *slog.Logger, ctx context.Context) *connection {
	return &connection{cfg: cfg, log: log, ctx: ctx, done: make(chan struct{}), changed: make(chan struct{}), state: "idle"}
}

// ensureStarted starts the supervisor once.
func (c *connection) ensureStarted() {
	c.start.Do(func() {
		c.mu.Lock()
		if c.state == "closed" {
			c.mu.Unlock()
			close(c.done)
			return
		}
		c.state = "connecting"
		c.attempt = time.Now()
		c.mu.Unlock()
		go c.supervise()
	})
}

// supervise keeps one session to the upstream until Close: connect, serve
// until the connection ends (the program died, the HTTP session broke),
// then connect again after a backoff that doubles up to maxBackoff.
func (c *connection) supervise() {
	defer close(c.done)
	backoff := minBackoff
	for {
		began := time.Now()
		c.mu.Lock()
		c.attempt = began
		c.mu.Unlock()
		cs, stop, err := c.dial()
		c.mu.Lock()
		c.unauthorized = errors.Is(err, errUnauthorized)
		c.mu.Unlock()
		if err == nil {
			c.connected(cs)
			c.setSession(cs, nil)
			c.log.Info("upstream connected", "transport", c.cfg.transport(), "protocol", protocolOf(cs))
			c.ready(cs)
			err = cs.Wait()
			c.setSession(nil, connectionEnded(err))
			stop()
			if c.ctx.Err() != nil {
				return
			}
			if time.Since(began) > stableAfter {
				backoff = minBackoff
			}
			c.log.Warn("upstream connection ended; reconnecting", "after", backoff, "err", c.cfg.redact(fmt.Sprint(connectionEnded(err))))
		} else {
			if c.ctx.Err() != nil {
				c.setSession(nil, errClosed)
				return
			}
			c.setSession(nil, err)
			c.log.Warn("upstream connection failed; retrying", "after", backoff, "err", c.cfg.redact(err.Error()))
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

var errClosed = errors.New("the upstream was stopped (config reloaded or mcpd shutting down)")

func connectionEnded(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return errors.New("the upstream closed the connection")
	}
	return fmt.Errorf("the connection to the upstream ended: %w", err)
}

func protocolOf(cs *mcp.ClientSession) string {
	if r := cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// setSession records the session (nil: none) and why there is none, and
// wakes the calls waiting for it.
func (c *connection) setSession(cs *mcp.ClientSession, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs != nil && c.cs == nil && c.lastErr != nil && c.state == "down" {
		c.restarts++
	}
	wasUp := c.state == "up"
	defer func() {
		if wasUp != (c.state == "up") && c.upDown != nil {
			go c.upDown()
		}
	}()
	c.cs, c.lastErr = cs, err
	switch {
	case c.state == "closed":
	case cs != nil:
		c.state = "up"
	default:
		c.state = "down"
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// current is the connected session; nil while there is none.
func (c *connection) current() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs
}

// up reports whether a session is up.
func (c *connection) up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == "up"
}

// session returns the connected session, starting the upstream if it was
// not and waiting for a connection up to connect_timeout (or ctx).
func (c *connection) session(ctx context.Context) (*mcp.ClientSession, error) {
	c.ensureStarted()
	if cs := c.current(); cs != nil { // the usual case: no timer to make
		return cs, nil
	}
	timer := time.NewTimer(c.cfg.connectTimeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		cs, err, changed, state := c.cs, c.lastErr, c.changed, c.state
		c.mu.Unlock()
		if cs != nil {
			return cs, nil
		}
		if state == "closed" {
			return nil, errClosed
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		case <-timer.C:
		}
		// The call's own timeout may have ended the wait: the error says
		// what failed, which the engine reports as it is
		// (adapter.UnavailableError), not as the tool's timeout.
		if err == nil {
			c.mu.Lock()
			attempt := c.attempt
			c.mu.Unlock()
			err = fmt.Errorf("the handshake (%s) has not completed after %s (connect_timeout %s)",
				c.cfg.handshake(), time.Since(attempt).Round(time.Millisecond), c.cfg.connectTimeout)
		}
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s is not connected: %s", c.cfg.name, c.cfg.redact(err.Error()))}
	}
}

// broken closes cs when it is the supervisor's session, so that the
// supervisor connects again (an HTTP server restarted and forgot it).
func (c *connection) broken(cs *mcp.ClientSession) {
	if c.current() == cs {
		_ = cs.Close()
	}
}

// idleOrRefused reports whether the supervisor was never started, or its
// latest connection was refused with HTTP 401 (Ping, per-caller identity).
func (c *connection) idleOrRefused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == "idle" || c.unauthorized
}

// stats are the state and the restarts, for ServiceStatus.
func (c *connection) stats() (state string, restarts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.restarts
}

// markClosed marks the connection closed, so that no caller waits for a
// session any more, and returns the session to close with stop.
func (c *connection) markClosed() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = "closed"
	return c.cs
}

// stop closes cs (markClosed's) and waits a bounded time for the
// supervisor, which the upstream's context, ended before, stops.
func (c *connection) stop(cs *mcp.ClientSession) {
	c.ensureStarted() // never started: done is closed by it
	if cs != nil {
		_ = cs.Close()
	}
	select {
	case <-c.done:
	case <-time.After(stopGrace + 3*time.Second):
		c.log.Warn("upstream did not stop in time")
	}
	c.mu.Lock()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}
