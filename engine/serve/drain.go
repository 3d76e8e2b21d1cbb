package serve

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/mcpd/mcpd/engine/adapter"
)

// errShuttingDown is the cause of the cancellation of calls still running
// when the grace period of a shutdown ends.
var errShuttingDown = errors.New("the server is shutting down")

// drain tracks the requests being served, so that a shutdown can drain
// them (wait for their answers), and cancels them when it cannot wait any
// longer. "Drain" has that one meaning in this package: stop taking new
// requests and answer the ones already read; Shutdown does it for the whole
// server, and a stdio session does it when its input ends.
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
	// cancels are the cancel funcs of the handlers running whose context
	// was made cancellable (see reqCtx), by a sequence number: cheaper per
	// request than context.AfterFunc on abortCtx.
	cancels map[uint64]context.CancelCauseFunc
	seq     uint64

	// stopCtx is cancelled when the drain begins: readiness fails and
	// stdio refuses new requests (it keeps reading: answers to the
	// questions of the calls in flight still come in).
	stopCtx context.Context
	stop    context.CancelFunc
	// abortCtx is cancelled when the grace period ends; every handler's
	// context is cancelled with it.
	abortCtx context.Context
	abort    context.CancelCauseFunc
	// done is closed when the drain has finished: every request read has
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
// cancelled when the grace period ends and when end is called; end must be
// called when the handler returns.
func (d *drain) begin(ctx context.Context) *reqCtx {
	d.mu.Lock()
	d.busy++
	d.mu.Unlock()
	return &reqCtx{Context: ctx, d: d}
}

func (d *drain) end(c *reqCtx) {
	c.mu.Lock()
	c.ended = true
	in := c.inner.Load()
	c.mu.Unlock()
	if in != nil {
		d.mu.Lock()
		delete(d.cancels, in.id)
		d.mu.Unlock()
		in.cancel(nil)
	}
	d.add(-1)
}

// reqCtx is the context of a request being served: its parent's, also
// cancelled when a drain's grace period ends or the handler returns. The
// cancellable context that takes is made only when something asks for
// Done (an adapter waiting on I/O, a derived context): a call that never
// waits on its context, such as a static or template tool's, skips its
// allocations and the bookkeeping.
type reqCtx struct {
	context.Context // the parent
	d               *drain

	mu    sync.Mutex // making inner; ended
	inner atomic.Pointer[cancelable]
	ended bool // end was called

	obs observed // the request's event (see observe), carried here to cost no allocation
}

type cancelable struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	id     uint64 // its key in drain.cancels
}

// cancelable returns the context's cancellable form, making it first.
func (c *reqCtx) cancelable() *cancelable {
	if in := c.inner.Load(); in != nil {
		return in
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inner.Load(); in != nil {
		return in
	}
	in := &cancelable{}
	in.ctx, in.cancel = context.WithCancelCause(c.Context)
	d := c.d
	switch {
	case c.ended:
		in.cancel(nil)
	case d.aborted():
		in.cancel(errShuttingDown)
	default:
		d.mu.Lock()
		d.seq++
		in.id = d.seq
		if d.abortCtx.Err() != nil {
			in.cancel(errShuttingDown)
		} else {
			d.cancels[in.id] = in.cancel
		}
		d.mu.Unlock()
	}
	c.inner.Store(in)
	return in
}

func (c *reqCtx) Done() <-chan struct{} { return c.cancelable().ctx.Done() }

func (c *reqCtx) Err() error {
	if in := c.inner.Load(); in != nil {
		return in.ctx.Err()
	}
	if c.d.aborted() || c.isEnded() {
		// Made now so that context.Cause agrees.
		return c.cancelable().ctx.Err()
	}
	return c.Context.Err()
}

func (c *reqCtx) Value(key any) any {
	if key == (observedKey{}) {
		return &c.obs
	}
	if key == (adapter.DelegationKey{}) {
		return &c.obs // an adapter.DelegationRecorder
	}
	if in := c.inner.Load(); in != nil {
		return in.ctx.Value(key)
	}
	return c.Context.Value(key)
}

func (c *reqCtx) isEnded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
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

// admit counts one request read as busy, unless the drain has begun: then
// it reports false and the request must be refused. Checked and counted
// under the lock that waitIdle takes, so a request is either refused or
// waited for, never neither.
func (d *drain) admit() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped() {
		return false
	}
	d.busy++
	return true
}

// finished reports whether the drain is over.
func (d *drain) finished() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}
