package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// streamLinger is how long notification streams stay open after the last
// answer of a drain was written: a client reads a POST's answer and its
// session's GET stream concurrently, and one that sees the stream end first
// may give up on the answer it has not yet read.
const streamLinger = 250 * time.Millisecond

// closeWait bounds each of the last steps of a shutdown: closing the
// sessions, and waiting for the HTTP connections to end.
const closeWait = time.Second

// shutdown is what Shutdown needs beyond the drain: the HTTP server being
// served, and the once of the whole sequence.
type shutdown struct {
	mu   sync.Mutex
	hs   *http.Server // set by ServeHTTPServer; nil: stdio only
	once sync.Once
	err  error
}

// ServeHTTPServer serves hs on ln until Shutdown, which also shuts hs down:
// like http.Server.Serve it returns http.ErrServerClosed then. hs's handler
// is expected to include HTTPHandler's.
func (s *Server) ServeHTTPServer(hs *http.Server, ln net.Listener) error {
	s.shut.mu.Lock()
	s.shut.hs = hs
	s.shut.mu.Unlock()
	if s.drain.stopped() {
		ln.Close()
		return http.ErrServerClosed
	}
	return hs.Serve(ln)
}

// Ready reports whether the server takes new work: false once Shutdown
// began, or stdio's input ended.
func (s *Server) Ready() bool { return !s.drain.stopped() }

// Shutdown shuts the server down gracefully, in this order:
//
//  1. Ready reports false (/readyz answers 503) and stdio stops reading
//     requests; requests already read keep running.
//  2. With an HTTP server (ServeHTTPServer), new connections are still
//     accepted for Options.ShutdownDelay, so that load balancers that see
//     the 503 stop sending first; then its listener closes.
//  3. The drain: every request already read gets Options.ShutdownGrace to
//     be answered; the calls still running then are cancelled, answered
//     with a tool error saying the server is shutting down, and get
//     Options.AnswerWait for those answers to be written.
//  4. Every session is closed, which ends the notification streams (a
//     legacy GET, a subscriptions/listen), so that a client keeping one
//     open does not hold the exit back; then the HTTP connections still
//     open are closed.
//
// A stdio session (RunStdio) returns once its drain is over. ctx bounds the
// waits of steps 2 and 3: when it ends, the calls still running are
// cancelled at once. Shutdown returns nil when every request read was
// answered; calling it again waits for the first call and returns its
// result. Backends belong to the snapshots, which their owner closes.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shut.once.Do(func() { s.shut.err = errors.Join(s.shutdown(ctx), s.stopTasks(ctx)) })
	return s.shut.err
}

func (s *Server) shutdown(ctx context.Context) error {
	s.drain.stop()
	s.shut.mu.Lock()
	hs := s.shut.hs
	s.shut.mu.Unlock()
	if hs == nil {
		return s.drainRequests(ctx)
	}
	s.opts.Logger.Info("draining: /readyz answers 503", "delay", s.opts.ShutdownDelay, "grace", s.opts.ShutdownGrace)
	if s.opts.ShutdownDelay > 0 {
		t := time.NewTimer(s.opts.ShutdownDelay)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	stopped := make(chan struct{})
	go func() {
		// Closes the listener and idle connections, then waits for the
		// active ones; closing the sessions below ends the streams.
		_ = hs.Shutdown(context.Background())
		close(stopped)
	}()
	busy := s.inFlight() > 0
	err := s.drainRequests(ctx)
	if busy {
		time.Sleep(streamLinger)
	}
	closed := make(chan struct{})
	go func() {
		s.closeSessions()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(closeWait):
		s.opts.Logger.Warn("sessions did not close in time")
	}
	select {
	case <-stopped:
	case <-time.After(closeWait):
		s.opts.Logger.Warn("closing the connections still open")
		_ = hs.Close()
	}
	return err
}

// drainRequests drains the requests already read: it stops taking new
// ones, waits up to ShutdownGrace for every request read to be answered,
// then cancels the calls still running (they are answered with a tool
// error saying the server is shutting down) and waits up to AnswerWait for
// those answers to be written. It returns nil when every request was
// answered. Sessions stay open.
func (s *Server) drainRequests(ctx context.Context) error {
	s.drain.stop()
	defer s.drain.doneOnce.Do(func() { close(s.drain.done) })
	grace := s.opts.ShutdownGrace
	gctx, cancel := context.WithTimeout(ctx, grace)
	err := s.drain.waitIdle(gctx)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() == nil {
		s.opts.Logger.Warn("shutdown grace period over; cancelling the calls still running", "grace", grace)
	} else {
		s.opts.Logger.Warn("shutdown cut short; cancelling the calls still running", "err", ctx.Err())
	}
	s.drain.abortAll()
	// The answers of the cancelled calls get AnswerWait even when ctx has
	// ended: they are what a client is owed.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.AnswerWait)
	defer cancel()
	if err := s.drain.waitIdle(actx); err != nil {
		return errors.New("some requests were not answered in time")
	}
	return ctx.Err()
}

// closeSessions closes every session, which ends their notification
// streams (GET /mcp, subscriptions/listen).
func (s *Server) closeSessions() {
	var wg sync.WaitGroup
	for ss := range s.allSessions() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ss.Close()
		}()
	}
	wg.Wait()
}

// inFlight is the number of requests being served (see drain).
func (s *Server) inFlight() int {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	return s.drain.busy
}
