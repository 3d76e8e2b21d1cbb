package sharedstate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
)

// openShared opens a Store on the shared test Redis with a prefix of the
// test's own.
func openShared(t *testing.T) *sharedstate.Store {
	t.Helper()
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	st := sharedstate.Open(mustCompile(t, stateBlock(fmt.Sprintf("redis = %q", url), fmt.Sprintf("key_prefix = %q", prefix))), nil)
	t.Cleanup(func() { st.Close() })
	if !st.Healthy() {
		t.Fatalf("store not healthy: %+v", st.Status())
	}
	return st
}

// The GCRA arithmetic: a full bucket admits Burst calls at once, refuses
// the next with the time until a token refills, refills at the rate, and
// keeps the buckets of callers and tools apart; with two buckets a refusal
// by either takes from neither.
func TestTakeArithmetic(t *testing.T) {
	st := openShared(t)
	ctx := context.Background()
	take := func(bs ...sharedstate.Bucket) (int, time.Duration) {
		t.Helper()
		i, retry, err := st.Take(ctx, bs...)
		if err != nil {
			t.Fatal(err)
		}
		return i, retry
	}
	// 3 per minute, burst 3: three now, the fourth waits ~20s.
	alice := sharedstate.Bucket{Key: st.Key("rl", "t", "caller", "alice"), Interval: 20 * time.Second, Burst: 3}
	bob := sharedstate.Bucket{Key: st.Key("rl", "t", "caller", "bob"), Interval: 20 * time.Second, Burst: 3}
	for i := 0; i < 3; i++ {
		if r, _ := take(alice); r != -1 {
			t.Fatalf("call %d refused", i+1)
		}
	}
	r, retry := take(alice)
	if r != 0 || retry <= 19*time.Second || retry > 20*time.Second {
		t.Fatalf("4th call: refused=%d retry=%s, want bucket 0 and ~20s", r, retry)
	}
	// Another caller has a bucket of its own.
	if r, _ := take(bob); r != -1 {
		t.Fatal("bob refused by alice's bucket")
	}

	// A burst larger than the rate's N: 1 per 100ms, burst 5.
	fast := sharedstate.Bucket{Key: st.Key("rl", "fast"), Interval: 100 * time.Millisecond, Burst: 5}
	n := 0
	for {
		if r, _ := take(fast); r != -1 {
			break
		}
		n++
	}
	if n != 5 {
		t.Fatalf("burst admitted %d, want 5", n)
	}
	// Refill: one token per interval (generous wait, no upper bound).
	time.Sleep(350 * time.Millisecond)
	if r, _ := take(fast); r != -1 {
		t.Fatal("no token after 3 intervals")
	}

	// Per tool and per caller at once: the tool's bucket (2) runs out
	// first; the refused call takes nothing from the caller's.
	tool := sharedstate.Bucket{Key: st.Key("rl", "u", "tool"), Interval: time.Minute, Burst: 2}
	carol := sharedstate.Bucket{Key: st.Key("rl", "u", "caller", "carol"), Interval: time.Minute, Burst: 3}
	take(tool, carol)
	take(tool, carol)
	if r, _ := take(tool, carol); r != 0 {
		t.Fatalf("third call: refused=%d, want the tool's bucket (0)", r)
	}
	// carol has one token left: a bucket set with a fresh tool bucket shows it.
	tool2 := sharedstate.Bucket{Key: st.Key("rl", "u2", "tool"), Interval: time.Minute, Burst: 10}
	if r, _ := take(tool2, carol); r != -1 {
		t.Fatal("carol's last token was taken by a refused call")
	}
	if r, _ := take(tool2, carol); r != 1 {
		t.Fatalf("refused=%d, want carol's bucket (1)", r)
	}
}

// Concurrent takers on several clients (as replicas are) admit exactly the
// burst.
func TestTakeAtomic(t *testing.T) {
	st := openShared(t)
	b := sharedstate.Bucket{Key: st.Key("rl", "race"), Interval: time.Hour, Burst: 10}
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, err := st.Take(context.Background(), b)
			if err != nil {
				t.Error(err)
				return
			}
			if r == -1 {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if admitted != 10 {
		t.Fatalf("admitted %d of 40 concurrent calls, want 10", admitted)
	}
}

// Leases: Max at once; a release frees a slot; a holder that stops
// renewing (killed) loses its slot after the TTL, while one that keeps
// renewing keeps it past the TTL.
func TestLeases(t *testing.T) {
	st := openShared(t)
	ctx := context.Background()
	sem := sharedstate.Semaphore{Key: st.Key("conc", "t"), Max: 2, TTL: 600 * time.Millisecond}
	a, err := st.TryAcquire(ctx, sem)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.TryAcquire(ctx, sem)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.TryAcquire(ctx, sem); !errors.Is(err, sharedstate.ErrBusy) {
		t.Fatalf("third lease: %v, want ErrBusy", err)
	}
	b.Release()
	c, err := st.TryAcquire(ctx, sem)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	// a is killed: it stops renewing. c keeps renewing.
	a.StopRenewing()
	time.Sleep(3 * sem.TTL)
	d, err := st.Acquire(ctx, sem, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("the killed holder's slot did not come back: %v", err)
	}
	if _, err := st.TryAcquire(ctx, sem); !errors.Is(err, sharedstate.ErrBusy) {
		t.Fatalf("c's renewed lease expired: %v", err)
	}
	// Acquire gives up with ErrBusy when its context ends.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := st.Acquire(wctx, sem, 50*time.Millisecond); !errors.Is(err, sharedstate.ErrBusy) {
		t.Fatalf("Acquire with every slot leased: %v", err)
	}
	c.Release()
	d.Release()
}

// A Redis killed under load: the operations fail fast with an error the
// store sees as unavailability, nothing panics, and once Redis is back the
// store is healthy again within seconds.
func TestTakeWhileRedisDies(t *testing.T) {
	srv := sharedstatetest.NewServer(t)
	st := sharedstate.Open(mustCompile(t, stateBlock(fmt.Sprintf("redis = %q", srv.URL()), `timeout = "300ms"`)), nil)
	defer st.Close()
	b := sharedstate.Bucket{Key: st.Key("rl", "x"), Interval: time.Millisecond, Burst: 1000}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, failed := 0, 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _, err := st.Take(context.Background(), b)
				mu.Lock()
				if err == nil {
					ok++
				} else {
					failed++
					if !sharedstate.IsUnavailable(err) {
						t.Errorf("error not seen as unavailability: %v", err)
					}
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	srv.Kill()
	waitFor(t, 10*time.Second, func() bool { return !st.Healthy() }, "the store to notice")
	time.Sleep(200 * time.Millisecond)
	srv.Start() // a fresh, empty Redis: the script is loaded again (NOSCRIPT → EVAL)
	waitFor(t, 20*time.Second, st.Healthy, "the store to recover")
	mu.Lock()
	okBefore := ok
	mu.Unlock()
	waitFor(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return ok > okBefore+10 }, "calls to succeed again")
	close(stop)
	wg.Wait()
	if failed == 0 {
		t.Error("no call failed while Redis was down")
	}
}
