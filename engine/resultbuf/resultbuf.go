// Package resultbuf lends the large buffers a call's result is built in,
// and takes them back once the answer has been written.
//
// Under mcpd's GC policy (GOGC=400, cmd/mcpd/gc.go) garbage stays until
// the heap is five times what was live at the last collection. A call
// whose 1 MB result is a fresh buffer leaves 1 MB of garbage behind once
// its answer is written, so 64 such calls at once made the process several
// times the bytes in flight (BenchmarkResultMemory in engine/serve). A
// buffer given back and reused makes none.
//
// Giving a buffer back is only safe when nothing can read it afterwards:
// the result's text is a string over the buffer, and a string that
// outlives the answer (a cached result, a substring a result expression
// kept, a log record) would change under its holder when the buffer is
// reused, handing one caller's bytes to another. So the buffers are lent
// only where every holder is known:
//
//   - A writer that answers a call and knows when it has finished writing
//     (the 2026-07-28 fast path of engine/serve) opens a Lease, puts it in
//     the call's context (With) and, after the answer is written, calls
//     Release with the result it wrote.
//   - The engine (engine/snapshot) passes the lease on to the adapter only
//     for a tool whose result nothing keeps: no result cache, no result or
//     logs block. For any other tool, and for every call answered by
//     another writer, the adapter gets no lease and allocates as before.
//     When the call returns, the engine Binds the lease to the result it
//     returns.
//   - The adapter takes buffers from the lease (Buffer, Grow) for what
//     becomes the result's text, and keeps no other reference past Call.
//
// Release gives the buffers back only when the result written is the one
// the lease was bound to: work that outlives the request (a call run in
// the background, whose result is stored and written later, or a result
// wrapped or copied on its way) never matches, and its buffers are left
// to the collector, as any allocation. Failing to give a buffer back
// costs memory; giving one back too early would cost correctness, so
// every doubt keeps the buffers.
//
// A nil *Lease is valid and lends nothing: its Buffer and Grow allocate.
package resultbuf

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Class is the granularity of the pooled sizes: a buffer's capacity is a
// multiple of it, so a pooled buffer wastes less than Class bytes.
const Class = 64 << 10

// MaxPooled is the largest buffer a lease lends: a result larger than
// that is rare, and its buffer is left to the collector (Buffer allocates
// it as any other).
const MaxPooled = 16 << 20

// MinPooled is the smallest: smaller buffers cost the collector little,
// and pooling them would keep many alive for nothing.
const MinPooled = Class

// Pool holds the buffers leases give back, by size class. One Pool serves
// a whole server; it is safe for concurrent use.
type Pool struct {
	classes  [MaxPooled / Class]sync.Pool // of *[]byte; index: cap/Class - 1
	returned atomic.Int64                 // buffers given back
}

// Returned is how many buffers leases have given back to p: lent, and
// reusable since.
func (p *Pool) Returned() int64 { return p.returned.Load() }

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{} }

// Lease opens a lease on p for one call.
func (p *Pool) Lease() *Lease { return &Lease{pool: p} }

func (p *Pool) get(n int) *[]byte {
	c := (n + Class - 1) / Class
	if b, ok := p.classes[c-1].Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	b := make([]byte, 0, c*Class)
	return &b
}

func (p *Pool) put(b *[]byte) {
	c := cap(*b) / Class
	if c < 1 || c > len(p.classes) || cap(*b)%Class != 0 {
		return
	}
	p.classes[c-1].Put(b)
	p.returned.Add(1)
}

// Lease is the buffers lent to one call. Its methods are safe for
// concurrent use.
type Lease struct {
	pool  *Pool
	mu    sync.Mutex
	lent  []*[]byte
	owner any  // the result the buffers were lent for (Bind)
	bound int  // how many times Bind was called
	kept  bool // the result escaped: nothing is given back
	done  bool // released: what is asked now is not lent
}

// Buffer returns a buffer of length 0 and capacity at least n. It is lent
// (given back on Release) when n is within the pooled sizes and the lease
// is open; otherwise it is a plain allocation.
func (l *Lease) Buffer(n int) []byte {
	if l == nil || n < MinPooled || n > MaxPooled {
		return make([]byte, 0, n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return make([]byte, 0, n)
	}
	b := l.pool.get(n)
	l.lent = append(l.lent, b)
	return *b
}

// Lent reports whether b is in a buffer l lent (and has not given back):
// such a buffer's spare room costs nothing past the call, since the
// buffer is reused, where a plain allocation's would be kept alive by a
// string over part of it.
func (l *Lease) Lent(b []byte) bool {
	if l == nil || cap(b) == 0 {
		return false
	}
	p := unsafe.SliceData(b[:1])
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.lent {
		if cap(*c) > 0 && unsafe.SliceData((*c)[:1]) == p {
			return true
		}
	}
	return false
}

// Grow returns b with room for at least n more bytes: b itself when it has
// it, else a buffer of at least want bytes (want is raised to what n
// needs) holding b's bytes. When b was lent by l, it is given back at
// once: the caller must hold no other reference to it.
func (l *Lease) Grow(b []byte, n, want int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	want = max(want, len(b)+n)
	nb := append(l.Buffer(want), b...)
	if l != nil && cap(b) > 0 {
		l.mu.Lock()
		for i, p := range l.lent {
			if unsafe.SliceData((*p)[:1]) == unsafe.SliceData(b[:1]) {
				l.lent = append(l.lent[:i], l.lent[i+1:]...)
				if !l.kept {
					l.pool.put(p)
				}
				break
			}
		}
		l.mu.Unlock()
	}
	return nb
}

// Keep marks what l lent as escaped: Release then gives nothing back, and
// the buffers are left to the collector. A holder that finds it must keep
// a result past its answer calls it.
func (l *Lease) Keep() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.kept = true
	l.mu.Unlock()
}

// Bind records result (a pointer) as what the lent buffers were lent for:
// the engine calls it with the result it returns. A lease bound twice
// (two calls made with one context) keeps its buffers.
func (l *Lease) Bind(result any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.owner = result
	l.bound++
	l.mu.Unlock()
}

// Pass moves the binding from a result to another that carries its
// contents (a copy made for the protocol's era): when from is the bound
// result, to is bound instead.
func (l *Lease) Pass(from, to any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.owner == from {
		l.owner = to
	}
	l.mu.Unlock()
}

// Release ends the lease: buffers asked for later are not lent. It gives
// the lent buffers back when written, the result the caller has just
// finished writing, is the one the lease was bound to (and Keep was not
// called); otherwise they are left to the collector. The caller must be
// done with everything built in them. Calling it again does nothing.
func (l *Lease) Release(written any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	lent := l.lent
	give := !l.kept && l.bound == 1 && written != nil && l.owner == written
	l.lent, l.owner, l.done = nil, nil, true
	l.mu.Unlock()
	if !give {
		return
	}
	for _, b := range lent {
		l.pool.put(b)
	}
}

type leaseKey struct{}

// With returns ctx carrying l, for the engine to pass on (From).
func With(ctx context.Context, l *Lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// From is the lease ctx carries, or nil.
func From(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l
}
