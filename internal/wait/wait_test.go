package wait

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder stands in for a test so that a failing wait can be observed.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestUntil(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit time.Duration
		cond  func() func() bool
		fails bool
	}{
		{"already true", time.Second, func() func() bool { return func() bool { return true } }, false},
		{"true after some polls", 5 * time.Second, func() func() bool {
			var n atomic.Int32
			return func() bool { return n.Add(1) >= 5 }
		}, false},
		{"true after a while", 5 * time.Second, func() func() bool {
			at := time.Now().Add(100 * time.Millisecond)
			return func() bool { return time.Now().After(at) }
		}, false},
		{"never true", 100 * time.Millisecond, func() func() bool { return func() bool { return false } }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			start := time.Now()
			until(r, tc.limit, "the thing", tc.cond())
			if got := r.failed != ""; got != tc.fails {
				t.Fatalf("failed = %q, want failure %v", r.failed, tc.fails)
			}
			if tc.fails {
				if !strings.Contains(r.failed, "the thing") || !strings.Contains(r.failed, tc.limit.String()) {
					t.Errorf("message %q does not name what was awaited and the deadline", r.failed)
				}
				if time.Since(start) < tc.limit {
					t.Errorf("gave up after %s, before the deadline %s", time.Since(start), tc.limit)
				}
			}
		})
	}
}

// Until itself passes a condition that holds at once without sleeping.
func TestUntilReturnsAtOnce(t *testing.T) {
	start := time.Now()
	Until(t, "true", func() bool { return true })
	if d := time.Since(start); d >= Interval {
		t.Errorf("took %s for a condition that already held", d)
	}
}
