// The Redis cache and the state block through Tool.Call: several replicas
// built from one config sharing Redis, and every state operation of a call
// (cache, rate limit, concurrency lease) under one deadline: the
// orchestration, not one stage.

package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// stateBlock is a server's state block on the Redis at url.
func stateBlock(url, prefix string) string {
	return fmt.Sprintf("  state {\n    redis      = %q\n    key_prefix = %q\n  }\n", url, prefix)
}

// Two engines (two replicas' snapshots of one config with a state block)
// sharing one Redis: a result one computed is a hit on the other, the
// backend runs once; two principals still do not share; every key is the
// prefix and a hash, with the TTL.
func TestCacheRedisSharedBetweenReplicas(t *testing.T) {
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	cfg := cachedConfigWith(stateBlock(url, prefix), `ttl = "1m"`, "")
	fa, fb := newFake(), newFake()
	a, _ := build(t, fa.register(), nil, cfg)
	b, _ := build(t, fb.register(), nil, cfg)
	if a.MemoryCache() != nil {
		t.Error("a state block, yet an in-memory cache")
	}
	wait.Until(t, "both replicas' state healthy", func() bool { return a.State().Healthy() && b.State().Healthy() })

	args := json.RawMessage(`{"id":42}`)
	first := call(tool(t, a, "lookup"), asCaller("ann"), args, nil)
	second := call(tool(t, b, "lookup"), asCaller("ann"), args, nil)
	if cacheStatus(first) != "miss" || cacheStatus(second) != "hit" {
		t.Fatalf("replica a: %q, replica b: %q; want miss then hit", cacheStatus(first), cacheStatus(second))
	}
	if render(first) != render(second) {
		t.Errorf("the hit %q differs from the result %q", render(second), render(first))
	}
	if backendCalls(fa)+backendCalls(fb) != 1 {
		t.Errorf("backends called %d+%d times, want 1 in all", backendCalls(fa), backendCalls(fb))
	}
	if other := call(tool(t, b, "lookup"), asCaller("bob"), args, nil); cacheStatus(other) != "miss" {
		t.Errorf("another principal on replica b: %q, want miss", cacheStatus(other))
	}
	opts, _ := redis.ParseURL(url)
	rc := redis.NewClient(opts)
	defer rc.Close()
	keys, err := rc.Keys(context.Background(), prefix+":*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys under the prefix: %v %v, want 2", keys, err)
	}
	for _, k := range keys {
		ttl := rc.PTTL(context.Background(), k).Val()
		if ttl <= 0 || ttl > time.Minute {
			t.Errorf("key %s has TTL %s, want (0, 1m]", k, ttl)
		}
		if !strings.HasPrefix(k, prefix+":cache:") || len(k) != len(prefix)+len(":cache:")+64 || strings.Contains(k, "ann") {
			t.Errorf("key %q is not the prefix and a hash", k)
		}
	}
}

// A Redis killed while calls run: every call still answers (the tool
// runs; the cache is never fail-closed) and the failures are counted as
// cache errors; once Redis is back, results are cached again.
func TestCacheRedisKilledFallsBack(t *testing.T) {
	srv := sharedstatetest.NewServer(t)
	f := newFake()
	s, _ := build(t, f.register(), nil, cachedConfigWith(stateBlock(srv.URL(), "killed"), `ttl = "1m"`, ""))
	wait.Until(t, "the state healthy", s.State().Healthy)
	tl := tool(t, s, "lookup")

	var failed, errs, n atomic.Int32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				res := call(tl, asCaller("ann"), json.RawMessage(fmt.Sprintf(`{"id":%d}`, (w*1000+i)%50)), nil)
				n.Add(1)
				if res.IsError {
					failed.Add(1)
				}
				if cacheStatus(res) == "error" {
					errs.Add(1)
				}
			}
		}()
	}
	waitCalls := func(more int32) {
		target := n.Load() + more
		deadline := time.Now().Add(30 * time.Second)
		for n.Load() < target {
			if time.Now().After(deadline) {
				t.Fatalf("calls stalled at %d", n.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitCalls(50)
	srv.Kill()
	waitCalls(200)
	if errs.Load() == 0 {
		t.Error("no call counted a cache error with Redis down")
	}
	srv.Start()
	// Recovery: a repeated call is a hit again within seconds (the state's
	// probe backs off up to 5s).
	wait.Until(t, "a hit after Redis came back", func() bool {
		call(tl, asCaller("ann"), json.RawMessage(`{"id":999}`), nil)
		return cacheStatus(call(tl, asCaller("ann"), json.RawMessage(`{"id":999}`), nil)) == "hit"
	})
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of %d calls failed while Redis was down; want none", failed.Load(), n.Load())
	}
}

// A Redis that answers one key with another's value (a bug, a proxy, or
// someone who can write to Redis) must not serve one tenant's result to
// another: each value is bound to its key, and a value found under
// another key is a miss (the tool runs), counted and logged. The test
// copies ann's entry onto bob's key with its own Redis client.
func TestCacheRedisValueBoundToKey(t *testing.T) {
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	extra := "  param \"tenant\" {\n    type        = \"string\"\n    from_caller = \"name\"\n  }\n"
	for _, secret := range []string{"", "  request_state_key = \"cache-binding-key-0123456789\"\n"} {
		name := "fixed key"
		if secret != "" {
			name = "request_state_key"
		}
		t.Run(name, func(t *testing.T) {
			prefix := prefix + ":" + strings.ReplaceAll(name, " ", "_")
			f := newFake()
			s, _ := build(t, f.register(), nil, cachedConfigWith(secret+stateBlock(url, prefix), `ttl = "1m"`, extra))
			wait.Until(t, "the state healthy", s.State().Healthy)
			tl := tool(t, s, "lookup")
			opts, _ := redis.ParseURL(url)
			rc := redis.NewClient(opts)
			defer rc.Close()
			ctx := context.Background()
			keys := func() []string {
				k, err := rc.Keys(ctx, prefix+":cache:*").Result()
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			args := json.RawMessage(`{"id":7}`)
			ann := call(tl, asCaller("ann"), args, nil)
			annKeys := keys()
			bob := call(tl, asCaller("bob"), args, nil)
			if cacheStatus(ann) != "miss" || cacheStatus(bob) != "miss" || len(annKeys) != 1 || len(keys()) != 2 {
				t.Fatalf("ann %q, bob %q, keys %v then %v", cacheStatus(ann), cacheStatus(bob), annKeys, keys())
			}
			if !strings.Contains(render(ann), "ann") || !strings.Contains(render(bob), "bob") {
				t.Fatalf("results do not name their caller: %s / %s", render(ann), render(bob))
			}
			var bobKey string
			for _, k := range keys() {
				if k != annKeys[0] {
					bobKey = k
				}
			}
			if again := call(tl, asCaller("bob"), args, nil); cacheStatus(again) != "hit" {
				t.Fatalf("bob's repeated call: %q, want a hit", cacheStatus(again))
			}
			annValue, err := rc.Get(ctx, annKeys[0]).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if err := rc.Set(ctx, bobKey, annValue, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			before := backendCalls(f)
			swapped := call(tl, asCaller("bob"), args, nil)
			if strings.Contains(render(swapped), "ann") {
				t.Fatalf("bob was served ann's result: %s", render(swapped))
			}
			if cacheStatus(swapped) != "miss" || backendCalls(f) != before+1 {
				t.Errorf("bob's call with ann's value under his key: %q, backend calls %d -> %d; want a miss that runs the tool", cacheStatus(swapped), before, backendCalls(f))
			}
			if n := s.State().Status().CacheMismatches; n != 1 {
				t.Errorf("mismatches counted: %d, want 1", n)
			}
			// The miss stored bob's own result again: his next call is a hit.
			if again := call(tl, asCaller("bob"), args, nil); cacheStatus(again) != "hit" || !strings.Contains(render(again), "bob") {
				t.Errorf("after the mismatch: %q %s, want bob's own result as a hit", cacheStatus(again), render(again))
			}
			// An altered value is a mismatch too.
			v, _ := rc.Get(ctx, bobKey).Bytes()
			v[len(v)-2] ^= 1
			rc.Set(ctx, bobKey, v, time.Minute)
			if res := call(tl, asCaller("bob"), args, nil); cacheStatus(res) != "miss" || s.State().Status().CacheMismatches != 2 {
				t.Errorf("an altered value: %q, %d mismatches; want a miss, 2", cacheStatus(res), s.State().Status().CacheMismatches)
			}
		})
	}
}

// A Redis that stops answering (SIGSTOP: connections stay open, nothing
// is answered) holds a call for at most the state block's timeout, all of
// the call's state work together: reading the cache, taking its rate
// limit, leasing and releasing its global concurrency slot, storing the
// result. Calls run from several goroutines before and while Redis
// freezes; the slowest must finish within the timeout and a margin for a
// loaded machine, well under twice the timeout.
func TestStateFrozenOneDeadline(t *testing.T) {
	srv := sharedstatetest.NewServer(t)
	const timeout = time.Second
	state := fmt.Sprintf("  state {\n    redis   = %q\n    timeout = %q\n  }\n", srv.URL(), timeout)
	extra := "  rate_limit {\n    per_caller = \"100000/s\"\n  }\n  max_concurrency   = 64\n  concurrency_scope = \"global\"\n"
	f := newFake()
	s, _ := build(t, f.register(), nil, cachedConfigWith(state, `ttl = "1m"`, extra))
	wait.Until(t, "the state healthy", s.State().Healthy)
	tl := tool(t, s, "lookup")

	var (
		mu      sync.Mutex
		worst   time.Duration
		frozen  atomic.Bool
		after   atomic.Int32 // calls started after the freeze
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		counter atomic.Int32
	)
	// Enough callers that some wait in the line behind the batch of
	// operations in flight when Redis freezes.
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				wasFrozen := frozen.Load()
				start := time.Now()
				// A new id each time: every call misses, so it reads,
				// admits, runs and stores.
				res := call(tl, asCaller("ann"), json.RawMessage(fmt.Sprintf(`{"id":%d}`, counter.Add(1))), nil)
				d := time.Since(start)
				if res.IsError {
					t.Errorf("a call failed: %s", render(res))
				}
				mu.Lock()
				worst = max(worst, d)
				mu.Unlock()
				if wasFrozen {
					after.Add(1)
				}
			}
		}()
	}
	wait.Until(t, "100 calls before the freeze", func() bool { return counter.Load() > 100 })
	srv.Freeze()
	frozen.Store(true)
	deadline := time.Now().Add(30 * time.Second)
	for after.Load() < 200 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("worst call with Redis frozen: %s (state timeout %s); %d calls after the freeze", worst, timeout, after.Load())
	if after.Load() < 200 {
		t.Fatalf("only %d calls finished in 30s after Redis froze", after.Load())
	}
	if limit := timeout + 600*time.Millisecond; worst > limit {
		t.Errorf("a call took %s with Redis frozen; want at most the state timeout %s (+ a margin: %s)", worst, timeout, limit)
	}
}
