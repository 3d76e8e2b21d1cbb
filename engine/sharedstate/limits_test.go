package sharedstate_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// openShared opens a Store on the shared test Redis with a prefix of the
// test's own; extra are more lines of its state block. Stores opened by
// one test share their keys, as replicas do.
func openShared(t *testing.T, extra ...string) *sharedstate.Store {
	t.Helper()
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	st := sharedstate.Open(mustCompile(t, stateBlock(append([]string{fmt.Sprintf("redis = %q", url), fmt.Sprintf("key_prefix = %q", prefix)}, extra...)...)), nil)
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
	wait.Until(t, "a token refilled", func() bool { r, _ := take(fast); return r == -1 })

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
	time.Sleep(3 * sem.TTL) // the lease's TTL elapsing is what is under test
	d, err := st.Acquire(ctx, sem, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("the killed holder's slot did not come back: %v", err)
	}
	if _, err := st.TryAcquire(ctx, sem); !errors.Is(err, sharedstate.ErrBusy) {
		t.Fatalf("c's renewed lease expired: %v", err)
	}
	// Acquire gives up with ErrBusy when its context ends.
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := st.Acquire(wctx, sem, 50*time.Millisecond, nil); !errors.Is(err, sharedstate.ErrBusy) {
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
	wait.Until(t, "calls to succeed", func() bool { mu.Lock(); defer mu.Unlock(); return ok > 0 })
	srv.Kill()
	wait.Until(t, "the store to notice", func() bool { return !st.Healthy() })
	mu.Lock()
	failedBefore := failed
	mu.Unlock()
	wait.Until(t, "calls to fail while Redis is down", func() bool { mu.Lock(); defer mu.Unlock(); return failed > failedBefore })
	srv.Start() // a fresh, empty Redis: the script is loaded again (NOSCRIPT → EVAL)
	wait.Until(t, "the store to recover", st.Healthy)
	mu.Lock()
	okBefore := ok
	mu.Unlock()
	wait.Until(t, "calls to succeed again", func() bool { mu.Lock(); defer mu.Unlock(); return ok > okBefore+10 })
	close(stop)
	wg.Wait()
	if failed == 0 {
		t.Error("no call failed while Redis was down")
	}
}

// One batch (one script run) decides its takes in order, each as if it ran
// alone: later takes see what earlier ones took from a shared bucket, and
// a take refused by one of its buckets takes from none of them.
func TestTakeBatch(t *testing.T) {
	st := openShared(t)
	ctx := context.Background()
	b := func(name string, burst int) sharedstate.Bucket {
		return sharedstate.Bucket{Key: st.Key("rl", t.Name(), name), Interval: time.Hour, Burst: burst}
	}
	tool, alice, bob := b("tool", 3), b("alice", 1), b("bob", 5)
	got, err := st.TakeBatch(ctx,
		[]sharedstate.Bucket{tool, alice}, // admitted: tool 2 left, alice 0
		[]sharedstate.Bucket{tool, alice}, // alice refuses (index 1): tool keeps 2
		[]sharedstate.Bucket{tool, bob},   // admitted: tool 1 left
		[]sharedstate.Bucket{tool, bob},   // admitted: tool 0 left
		[]sharedstate.Bucket{tool, bob},   // tool refuses (index 0): bob keeps 3
		[]sharedstate.Bucket{bob},         // admitted
	)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{-1, 1, -1, -1, 0, -1}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batch decided %v, want %v", got, want)
	}
	// What the batch stored is what the next call sees: bob has 2 left.
	for i, want := range []int{-1, -1, 0} {
		if r, _, err := st.Take(ctx, bob); err != nil || r != want {
			t.Fatalf("take %d of bob after the batch: refused=%d err=%v, want %d", i+1, r, err, want)
		}
	}
}

// A take whose context ends before its batch is sent takes no token.
func TestTakeCancelledBeforeSending(t *testing.T) {
	st := openShared(t)
	bk := sharedstate.Bucket{Key: st.Key("rl", t.Name()), Interval: time.Hour, Burst: 1}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.TakeBatch(ctx, []sharedstate.Bucket{bk}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled take: err=%v, want context.Canceled", err)
	}
	if r, _, err := st.Take(context.Background(), bk); err != nil || r != -1 {
		t.Fatalf("the bucket's one token is gone: refused=%d err=%v", r, err)
	}
}

// Get reads string keys, batched: concurrent reads of present and absent
// keys each get their own answer.
func TestGet(t *testing.T) {
	st := openShared(t)
	ctx := context.Background()
	for i := 0; i < 20; i += 2 {
		if err := st.Client().Set(ctx, st.Key("get", t.Name(), fmt.Sprint(i)), fmt.Sprintf("v%d\x00\xff", i), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := st.Get(ctx, st.Key("get", t.Name(), fmt.Sprint(i)))
			switch {
			case i%2 == 1 && !errors.Is(err, redis.Nil):
				t.Errorf("key %d (absent): %q, %v; want redis.Nil", i, v, err)
			case i%2 == 0 && (err != nil || string(v) != fmt.Sprintf("v%d\x00\xff", i)):
				t.Errorf("key %d: %q, %v", i, v, err)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := st.Get(ctx, st.Key("get", t.Name(), "0")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	if !st.Healthy() {
		t.Fatal("a caller's cancelled read marked the store down")
	}
}

// Reservations: a replica that takes from a bucket with room reserves a
// few more tokens (at most a quarter of what is left, none when fewer than
// 8 are left) and admits its next calls from them; Redis counts them as
// taken, so the replicas together admit exactly the bucket; unused ones go
// back after ReserveTTL.
func TestReservations(t *testing.T) {
	ctx := context.Background()
	a := openShared(t)                      // local_reserve defaults to 16
	b := openShared(t, "local_reserve = 0") // every call decided in Redis
	bucket := func(name string, burst int) sharedstate.Bucket {
		return sharedstate.Bucket{Key: a.Key("rl", t.Name(), name), Interval: time.Hour, Burst: burst}
	}
	admit := func(st *sharedstate.Store, bk ...sharedstate.Bucket) bool {
		t.Helper()
		r, _, err := st.Take(ctx, bk...)
		if err != nil {
			t.Fatal(err)
		}
		return r == -1
	}
	drain := func(st *sharedstate.Store, bk sharedstate.Bucket) int {
		n := 0
		for admit(st, bk) {
			n++
		}
		return n
	}

	t.Run("exact across replicas", func(t *testing.T) {
		bk := bucket("exact", 100)
		if !admit(a, bk) {
			t.Fatal("first call refused")
		}
		if got := a.Reserved(bk.Key); got != 16 {
			t.Fatalf("a reserved %d, want 16 (min of 16 and a quarter of 99)", got)
		}
		// b sees the reserved tokens as taken.
		if n := drain(b, bk); n != 100-1-16 {
			t.Fatalf("b admitted %d, want %d", n, 100-1-16)
		}
		// a admits from what it holds, then is refused like b.
		if n := drain(a, bk); n != 16 {
			t.Fatalf("a admitted %d from its reservation, want 16", n)
		}
		if b.Reserved(bk.Key) != 0 {
			t.Fatal("local_reserve = 0 reserved tokens")
		}
		// What /metrics reports: a's 16 local admissions; b's 84 checks
		// (83 admitted, 1 refused), none local.
		if sa, sb := a.Status(), b.Status(); sa.LocalAdmits != 16 || sb.LocalAdmits != 0 || sb.LimitChecks != 84 {
			t.Fatalf("status: a local %d, b local %d checks %d; want 16, 0, 84", sa.LocalAdmits, sb.LocalAdmits, sb.LimitChecks)
		}
	})

	t.Run("near the limit", func(t *testing.T) {
		bk := bucket("small", 10)
		admit(a, bk) // 9 left: a quarter is 2
		if got := a.Reserved(bk.Key); got != 2 {
			t.Fatalf("a reserved %d of a bucket of 10, want 2", got)
		}
		admit(a, bk) // from the reservation
		admit(a, bk)
		admit(a, bk) // 7 left in Redis: under the floor of 8, no reservation
		if got := a.Reserved(bk.Key); got != 0 {
			t.Fatalf("a reserved %d with 6 left, want 0", got)
		}
		if n := drain(b, bk); n != 6 {
			t.Fatalf("b admitted %d, want the 6 left", n)
		}
	})

	t.Run("unused tokens go back", func(t *testing.T) {
		bk := bucket("back", 100)
		admit(a, bk)
		if a.Reserved(bk.Key) != 16 {
			t.Fatalf("a reserved %d, want 16", a.Reserved(bk.Key))
		}
		deadline := time.Now().Add(10 * sharedstate.ReserveTTL)
		for a.Reserved(bk.Key) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("a still holds %d tokens after %s", a.Reserved(bk.Key), 10*sharedstate.ReserveTTL)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // the refund's round trip
		if n := drain(b, bk); n != 99 {
			t.Fatalf("b admitted %d after a gave its reservation back, want 99", n)
		}
	})

	t.Run("closing gives back", func(t *testing.T) {
		c := openShared(t)
		bk := bucket("close", 100)
		admit(c, bk)
		c.Close()
		if n := drain(b, bk); n != 99 {
			t.Fatalf("b admitted %d after c closed, want 99", n)
		}
	})

	t.Run("all buckets or none", func(t *testing.T) {
		tool, caller := bucket("tool", 100), bucket("caller", 100)
		admit(a, tool) // a holds tool tokens, none of caller's
		if a.Reserved(tool.Key) == 0 || a.Reserved(caller.Key) != 0 {
			t.Fatalf("reserved tool %d caller %d", a.Reserved(tool.Key), a.Reserved(caller.Key))
		}
		held := a.Reserved(tool.Key)
		// Not admitted locally: the call goes to Redis, which reserves
		// caller tokens and, the tool's being held, no more of the tool's.
		admit(a, tool, caller)
		if a.Reserved(tool.Key) != held || a.Reserved(caller.Key) == 0 {
			t.Fatalf("after a call on both: reserved tool %d (was %d) caller %d", a.Reserved(tool.Key), held, a.Reserved(caller.Key))
		}
		// Now both are held: the next call takes one of each locally.
		admit(a, tool, caller)
		if a.Reserved(tool.Key) != held-1 {
			t.Fatalf("a local call took %d tool tokens", held-a.Reserved(tool.Key))
		}
	})
}

// Three replicas with reservations, all calling at once: together they
// never admit more than the bucket, and what they held and did not use
// comes back, so that in the end exactly the bucket was admitted.
func TestReservationsConcurrentReplicas(t *testing.T) {
	ctx := context.Background()
	replicas := []*sharedstate.Store{openShared(t), openShared(t), openShared(t)}
	bk := sharedstate.Bucket{Key: replicas[0].Key("rl", t.Name()), Interval: time.Hour, Burst: 200}
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for i := 0; i < 450; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _, err := replicas[i%3].Take(ctx, bk)
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
	if admitted > 200 {
		t.Fatalf("admitted %d of 450 calls, over the bucket of 200", admitted)
	}
	// What the replicas still hold goes back after ReserveTTL.
	time.Sleep(4 * sharedstate.ReserveTTL) // ReserveTTL elapsing is what is under test
	exact := openShared(t, "local_reserve = 0")
	rest := 0
	for {
		r, _, err := exact.Take(ctx, bk)
		if err != nil {
			t.Fatal(err)
		}
		if r != -1 {
			break
		}
		rest++
	}
	if admitted+rest != 200 {
		t.Fatalf("admitted %d at once and %d after the reservations' return: %d, want 200", admitted, rest, admitted+rest)
	}
	t.Logf("admitted %d at once, %d after the reservations came back", admitted, rest)
}
