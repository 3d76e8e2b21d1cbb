package serve

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errShuttingDown is the cause of the cancellation of calls still running
// when the grace period of a shutdown ends.
var errShuttingDown = errors.New("the server is shutting down")

// drain tracks the requests being served, so that a shutdown can wait for
// them, and cancels them when it cannot wait any longer.
//
// A request is busy from the moment mcpd has read it until its answer is
// written: on stdio the transport counts each call it reads and each
// response it writes; on HTTP each POST counts while it is served; and every
// request counts while mcpd's handler runs. Long-lived notification streams
// (GET, subscriptions/listen) are not busy: they end when sessions close.
type drain struct {
	mu      sync.Mutex
	busy    int
	waiters []chan struct{}
	// cancels are the cancel funcs of the handlers running, by a sequence
	// number: cheaper per request than context.AfterFunc on abortCtx.
	cancels map[uint64]context.CancelCauseFunc
	seq     uint64

	// stopCtx is cancelled when a drain begins: readiness fails and stdio
	// stops reading new requests.
	stopCtx context.Context
	stop    context.CancelFunc
	// abortCtx is cancelled when the grace period ends; every handler's
	// context is cancelled with it.
	abortCtx context.Context
	abort    context.CancelCauseFunc
	// done is closed when a drain has finished: every request read has
	// been answered or given up on.
	done     chan struct{}
	doneOnce sync.Once
}

func newDrain() *drain {
	d := &drain{done: make(chan struct{}), cancels: map[uint64]context.CancelCauseFunc{}}
	d.stopCtx, d.stop = context.WithCancel(context.Background())
	d.abortCtx, d.abort = context.WithCancelCause(context.Background())
	return d
}

func (d *drain) add(n int) {
	d.mu.Lock()
	d.busy += n
	if d.busy == 0 {
		for _, w := range d.waiters {
			close(w)
		}
		d.waiters = nil
	}
	d.mu.Unlock()
}

// waitIdle waits until nothing is busy or ctx ends.
func (d *drain) waitIdle(ctx context.Context) error {
	d.mu.Lock()
	if d.busy == 0 {
		d.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	d.waiters = append(d.waiters, w)
	d.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// begin counts one handler as busy and returns its context, which is also
// cancelled when the grace period ends; end must be called when it returns.
func (d *drain) begin(ctx context.Context) (context.Context, uint64, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	d.mu.Lock()
	d.busy++
	d.seq++
	id := d.seq
	if d.abortCtx.Err() != nil {
		cancel(errShuttingDown)
	} else {
		d.cancels[id] = cancel
	}
	d.mu.Unlock()
	return ctx, id, cancel
}

func (d *drain) end(id uint64, cancel context.CancelCauseFunc) {
	d.mu.Lock()
	delete(d.cancels, id)
	d.mu.Unlock()
	cancel(nil)
	d.add(-1)
}

// abortAll cancels every handler running, and every one that begins later.
func (d *drain) abortAll() {
	d.mu.Lock()
	d.abort(errShuttingDown)
	for id, cancel := range d.cancels {
		cancel(errShuttingDown)
		delete(d.cancels, id)
	}
	d.mu.Unlock()
}

func (d *drain) aborted() bool { return d.abortCtx.Err() != nil }

func (d *drain) stopped() bool { return d.stopCtx.Err() != nil }

// BeginDrain marks the server as shutting down: Ready reports false, and the
// stdio transport stops reading new requests. Requests already read keep
// running. It is safe to call more than once.
func (s *Server) BeginDrain() { s.drain.stop() }

// Ready reports whether the server takes new work: false once a drain began.
func (s *Server) Ready() bool { return !s.drain.stopped() }

// Drain shuts the serving of requests down: it begins the drain, waits up to
// grace for every request already read to be answered, then cancels the
// calls still running (they are answered with a tool error saying the server
// is shutting down) and waits up to answerWait for those answers to be
// written. It returns nil when every request was answered. Sessions stay
// open: CloseSessions ends them.
func (s *Server) Drain(ctx context.Context, grace, answerWait time.Duration) error {
	s.BeginDrain()
	defer s.drain.doneOnce.Do(func() { close(s.drain.done) })
	gctx, cancel := context.WithTimeout(ctx, grace)
	err := s.drain.waitIdle(gctx)
	cancel()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.opts.Logger.Warn("shutdown grace period over; cancelling the calls still running", "grace", grace)
	s.drain.abortAll()
	actx, cancel := context.WithTimeout(ctx, answerWait)
	defer cancel()
	if err := s.drain.waitIdle(actx); err != nil {
		return errors.New("some requests were not answered in time")
	}
	return nil
}

// CloseSessions closes every session, which ends their notification streams
// (GET /mcp, subscriptions/listen) so that an HTTP server can shut down
// without waiting for clients that keep a stream open.
func (s *Server) CloseSessions() {
	var wg sync.WaitGroup
	for ss := range s.mcp.Sessions() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ss.Close()
		}()
	}
	wg.Wait()
}

// InFlight is the number of requests being served (see drain).
func (s *Server) InFlight() int {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	return s.drain.busy
}
