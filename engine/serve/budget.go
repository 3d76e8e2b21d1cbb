package serve

import (
	"container/list"
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/sizes"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The output budget bounds what the calls in flight can hold in memory
// together. Each call reserves what its result can cost before it runs and
// gives it back when its result has been written (over HTTP; on stdio,
// when it has been handed to the SDK); a write is bounded by
// --write-timeout. Per-tool caps alone do not bound the sum: 64 calls of a
// tool whose cap was raised to 100 MiB could hold 6 GiB of output, and
// three times that while it is written.
//
// What a call holds is more than its adapter's caps (what the adapter may
// keep: a program's two streams, a response body, a result's bytes): the
// SDK encodes a result three times before it reaches the connection
// (CallToolResult.MarshalJSON into the JSON-RPC response's raw result,
// the JSON-RPC message around it, the SSE event around that), each a
// buffer of the result's size alive until the answer is written; the
// adapter's own buffer lives until the first is made. BenchmarkResultMemory
// measures it: 64 calls of 1 MB results keep 2.5 to 3 MB live each. A call
// therefore reserves resultCopies times its caps.
//
// Waiting for budget must not starve calls that need little or none: a
// call waiting holds one of the --max-inflight request slots, so at most
// half of them may wait (a call that finds them all taken is refused at
// once, with the same retry advice), and a call whose reservation fits
// what is free runs at once, ahead of larger calls already waiting, which
// are served in order as the budget comes back.

// resultCopies is how many times its caps a call is charged: the SDK's
// three encodings, which outlive the adapter's buffers (see above).
const resultCopies = 3

// defaultBudgetWait is how long a call waits for budget held by others
// before it is refused.
const defaultBudgetWait = 5 * time.Second

// budget is a weighted semaphore that, unlike x/sync/semaphore's, lets a
// request that fits pass the ones waiting, and bounds how many may wait.
type budget struct {
	size       int64
	maxWaiters int // 0: no bound

	mu      sync.Mutex
	used    int64
	waiters list.List // of *budgetWaiter, oldest first

	holdsMu sync.Mutex
	holds   map[unsafe.Pointer]int64 // headerKey of a POST's headers: bytes its calls kept
}

type budgetWaiter struct {
	n       int64
	ready   chan struct{} // closed once granted
	granted bool
}

// newBudget returns the budget of bytes for a server running at most
// maxInflight calls at once (0: no cap); nil when bytes is 0 (no bound).
func newBudget(bytes int64, maxInflight int) *budget {
	if bytes <= 0 {
		return nil
	}
	b := &budget{size: bytes}
	if maxInflight > 0 {
		b.maxWaiters = max(maxInflight/2, 1)
	}
	return b
}

// errWaitersFull is acquire's error when as many calls wait as may.
var errWaitersFull = fmt.Errorf("too many calls wait for output budget")

// acquire takes n bytes, waiting until ctx ends for them to be given back;
// bounded, it waits only if fewer than maxWaiters wait (a parked call
// taking back its reservation is not: see park.go).
func (b *budget) acquire(ctx context.Context, n int64, bounded bool) error {
	b.mu.Lock()
	if b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return nil
	}
	if ctx.Err() != nil {
		b.mu.Unlock()
		return ctx.Err()
	}
	if bounded && b.maxWaiters > 0 && b.waiters.Len() >= b.maxWaiters {
		b.mu.Unlock()
		return errWaitersFull
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	e := b.waiters.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.granted {
		return nil // granted as ctx ended: the caller has it and gives it back
	}
	b.waiters.Remove(e)
	return ctx.Err()
}

// tryAcquire takes n bytes if they are free.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		return false
	}
	b.used += n
	return true
}

// release gives n bytes back and grants them to the waiters they fit,
// oldest first.
func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	for e := b.waiters.Front(); e != nil && b.used < b.size; {
		next := e.Next()
		if w := e.Value.(*budgetWaiter); b.used+w.n <= b.size {
			b.used += w.n
			w.granted = true
			close(w.ready)
			b.waiters.Remove(e)
		}
		e = next
	}
}

// reserveOutput takes what a call of t can hold from the budget, waiting
// up to Options.OutputBudgetWait for calls in flight to give some back. A
// tool whose reservation exceeds the whole budget takes all of it, so it
// runs alone rather than never. It returns the bytes that releaseOutput
// gives back, or the tool error result to answer with.
func (s *Server) reserveOutput(ctx context.Context, t *snapshot.Tool) (int64, *mcp.CallToolResult) {
	n := t.MaxOutputBytes() * resultCopies
	if s.budget == nil || n <= 0 {
		return 0, nil
	}
	n = min(n, s.opts.OutputBudget)
	if s.budget.tryAcquire(n) {
		return n, nil
	}
	return s.waitOutput(ctx, t, n, "")
}

// releaseOutput gives back what reserveOutput reserved for req, or leaves
// it to the end of the HTTP POST that carried req (see holdOutput).
func (s *Server) releaseOutput(req *mcp.CallToolRequest, n int64) {
	if n <= 0 {
		return
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil && s.budget.keep(headerKey(extra.Header), n) {
		return
	}
	s.budget.release(n)
}

// The SDK encodes a call's result, three times, and writes it after the
// call has returned, so a reservation given back then would not cover the
// copies, which are most of what a result costs. An HTTP POST is answered
// when the SDK's handler returns to front: the reservations of the calls
// it carried are given back then (endHold). The call finds its POST by
// the request's header map, which the SDK hands on as it is
// (RequestExtra.Header); a call that does not find it (stdio, or a POST
// that already ended because its client went away) gives its reservation
// back itself. The holds are a map under a mutex rather than a sync.Map,
// whose every Store allocates: a POST costs no allocation.

// keep adds n to the hold of the POST whose headers have key, if it is
// still being answered.
func (b *budget) keep(key unsafe.Pointer, n int64) bool {
	b.holdsMu.Lock()
	defer b.holdsMu.Unlock()
	held, ok := b.holds[key]
	if ok {
		b.holds[key] = held + n
	}
	return ok
}

// holdOutput starts the hold of a POST whose headers are header, and
// reports whether there is one to end (no budget: none).
func (s *Server) holdOutput(header http.Header) bool {
	if s.budget == nil || header == nil {
		return false
	}
	b := s.budget
	b.holdsMu.Lock()
	if b.holds == nil {
		b.holds = map[unsafe.Pointer]int64{}
	}
	b.holds[headerKey(header)] = 0
	b.holdsMu.Unlock()
	return true
}

// endHold gives back what the calls of the POST kept, once it has been
// answered.
func (s *Server) endHold(header http.Header) {
	b := s.budget
	key := headerKey(header)
	b.holdsMu.Lock()
	n := b.holds[key]
	delete(b.holds, key)
	b.holdsMu.Unlock()
	if n > 0 {
		b.release(n)
	}
}

// headerKey is the identity of a header map.
func headerKey(h http.Header) unsafe.Pointer { return reflect.ValueOf(h).UnsafePointer() }

// A result built by a tool's result block (a declarative tool's, or one
// that builds more than its adapter returned) is bounded by no adapter
// cap, so its reservation cannot be known before the call: once built, it
// is charged as a reservation would have been, resultCopies times its
// encoded size, less what the call reserved. It waits for budget as a
// reservation does, and a result larger than the whole budget takes all
// of it, as a tool whose caps exceed it does. A result that gets no budget
// is dropped and the call answers the same busy tool error, so that the
// copies of its encoding are never made.

// chargeFloor is the size of a built result below which it is not
// charged: every call holds more than that in the SDK's buffers, which
// the budget does not count either (cmd/mcpd/gc.go: a plain call leaves
// about 190 KiB behind), and a call of a small static tool should not
// wait for budget held by large ones.
const chargeFloor = 64 << 10

// chargeResult charges res, built by t's result block, beyond the
// reserved bytes; it returns what the call now holds, or the tool error
// result to answer with instead of res.
func (s *Server) chargeResult(ctx context.Context, t *snapshot.Tool, res *mcp.CallToolResult, reserved int64) (int64, *mcp.CallToolResult) {
	if s.budget == nil {
		return reserved, nil
	}
	size := int64(event.Size(res, false))
	if size < chargeFloor {
		return reserved, nil
	}
	n := min(size*resultCopies, s.opts.OutputBudget)
	if n <= reserved {
		return reserved, nil
	}
	extra := n - reserved
	if s.budget.tryAcquire(extra) {
		return n, nil
	}
	got, refused := s.waitOutput(ctx, t, extra, sizes.Text(int(n/resultCopies)))
	if refused != nil {
		return reserved, refused
	}
	return reserved + got, nil
}

// waitOutput is reserveOutput when the budget is short; built, when not
// empty, is the size of the result the call built (chargeResult).
func (s *Server) waitOutput(ctx context.Context, t *snapshot.Tool, n int64, built string) (int64, *mcp.CallToolResult) {
	wait := s.opts.OutputBudgetWait
	if wait <= 0 {
		wait = defaultBudgetWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err := s.budget.acquire(wctx, n, true)
	if err == nil {
		return n, nil
	}
	msg := fmt.Sprintf("tool %s was not run: the calls in flight hold the server's output budget (%d MiB, --max-output-budget) and none gave enough back within %s; retry in a few seconds", t.Def.Name, s.opts.OutputBudget>>20, wait)
	switch {
	case err == errWaitersFull:
		msg = fmt.Sprintf("tool %s was not run: the calls in flight hold the server's output budget (%d MiB, --max-output-budget) and %d more already wait for it; retry in a few seconds", t.Def.Name, s.opts.OutputBudget>>20, s.budget.maxWaiters)
	case ctx.Err() != nil:
		msg = fmt.Sprintf("tool %s was cancelled while waiting for output budget: %v", t.Def.Name, context.Cause(ctx))
	}
	if built != "" {
		msg = strings.Replace(msg, "was not run", "built a result of "+built+", which was dropped", 1)
	}
	return 0, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
