package resultbuf

import (
	"context"
	"testing"
	"unsafe"
)

type result struct{ text string }

func same(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && unsafe.SliceData(a[:1]) == unsafe.SliceData(b[:1])
}

func TestBufferSizes(t *testing.T) {
	l := NewPool().Lease()
	for _, tc := range []struct {
		n       int
		lent    bool
		wantCap int
	}{
		{n: 100, wantCap: 100},
		{n: MinPooled - 1, wantCap: MinPooled - 1},
		{n: MinPooled, lent: true, wantCap: Class},
		{n: 1000000, lent: true, wantCap: 16 * Class},
		{n: MaxPooled, lent: true, wantCap: MaxPooled},
		{n: MaxPooled + 1, wantCap: MaxPooled + 1},
	} {
		b := l.Buffer(tc.n)
		if len(b) != 0 || cap(b) != tc.wantCap || l.Lent(b) != tc.lent {
			t.Errorf("Buffer(%d): len %d cap %d lent %v, want len 0 cap %d lent %v", tc.n, len(b), cap(b), l.Lent(b), tc.wantCap, tc.lent)
		}
	}
	var none *Lease
	if b := none.Buffer(MinPooled); cap(b) != MinPooled || none.Lent(b) {
		t.Errorf("a nil lease lends: cap %d", cap(b))
	}
}

// What is given back, and when: only the buffers of the result written,
// when it is the one the lease was bound to.
func TestReleaseGivesBackOnlyTheBoundResult(t *testing.T) {
	bound := &result{}
	for _, tc := range []struct {
		name    string
		do      func(l *Lease)
		written any
		reused  bool
	}{
		{"bound and written", func(l *Lease) { l.Bind(bound) }, bound, true},
		{"never bound", func(l *Lease) {}, bound, false},
		{"another result written", func(l *Lease) { l.Bind(bound) }, &result{}, false},
		{"nothing written", func(l *Lease) { l.Bind(bound) }, nil, false},
		{"kept", func(l *Lease) { l.Bind(bound); l.Keep() }, bound, false},
		{"bound twice", func(l *Lease) { l.Bind(bound); l.Bind(bound) }, bound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPool()
			l := p.Lease()
			b := l.Buffer(3 * Class)
			tc.do(l)
			l.Release(tc.written)
			// A pool's Get may miss even when something was put back
			// (sync.Pool); it never returns what was not.
			got := false
			for range 10 {
				c := p.Lease()
				if same(c.Buffer(3*Class), b) {
					got = true
				}
			}
			if got && !tc.reused {
				t.Fatal("a buffer that must be kept was lent again")
			}
			if !got && tc.reused {
				t.Log("the buffer given back was not found again (sync.Pool may drop it)")
			}
		})
	}
}

func TestPassMovesTheBinding(t *testing.T) {
	p := NewPool()
	l := p.Lease()
	b := l.Buffer(2 * Class)
	first, copied := &result{}, &result{}
	l.Bind(first)
	l.Pass(&result{}, copied) // not the bound one: nothing moves
	l.Pass(first, copied)
	l.Release(first)
	for range 10 {
		if same(p.Lease().Buffer(2*Class), b) {
			t.Fatal("released for the result it was passed from")
		}
	}
}

func TestAfterReleaseNothingIsLent(t *testing.T) {
	l := NewPool().Lease()
	l.Release(nil)
	if b := l.Buffer(2 * Class); l.Lent(b) {
		t.Fatal("a released lease lent a buffer")
	}
}

func TestGrow(t *testing.T) {
	p := NewPool()
	l := p.Lease()
	b := append(l.Buffer(Class), "abc"...)
	if g := l.Grow(b, 10, 0); !same(g, b) {
		t.Fatal("Grow moved a buffer with room")
	}
	g := l.Grow(b, Class, 4*Class)
	if string(g) != "abc" || cap(g) != 4*Class || !l.Lent(g) {
		t.Fatalf("Grow: %q cap %d lent %v", g, cap(g), l.Lent(g))
	}
	if l.Lent(b) {
		t.Fatal("the outgrown buffer is still lent")
	}
	// A plain buffer grows into a lent one; a nil lease allocates.
	small := []byte("xyz")
	if g := l.Grow(small, 2*Class, 0); string(g) != "xyz" || !l.Lent(g) {
		t.Fatalf("Grow of a plain buffer: %q lent %v", g, l.Lent(g))
	}
	var none *Lease
	if g := none.Grow(small, 2*Class, 0); string(g) != "xyz" || cap(g) < 2*Class+3 {
		t.Fatalf("Grow on a nil lease: %q cap %d", g, cap(g))
	}
}

func TestContext(t *testing.T) {
	if From(context.Background()) != nil {
		t.Fatal("a lease from nowhere")
	}
	l := NewPool().Lease()
	if From(With(context.Background(), l)) != l {
		t.Fatal("the lease is not carried")
	}
}
