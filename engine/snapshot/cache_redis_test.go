package snapshot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpd/mcpd/engine/cache"
)

// redisAt returns a client of the Redis at addr, or skips the test when
// none answers, unless MCPD_TEST_REQUIRE_REDIS is set (CI): then it fails.
func redisAt(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if os.Getenv("MCPD_TEST_REQUIRE_REDIS") != "" {
			t.Fatalf("MCPD_TEST_REQUIRE_REDIS is set and Redis at %s does not answer: %v", addr, err)
		}
		t.Skipf("no Redis at %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// uniquePrefix namespaces a test's keys in a shared Redis.
func uniquePrefix(t *testing.T) string {
	return fmt.Sprintf("mcpd-test:%s:%d:%d:", t.Name(), os.Getpid(), time.Now().UnixNano())
}

func redisStore(c redis.UniversalClient, prefix string) *cache.Redis {
	return cache.NewRedis(c, func(h string) string { return prefix + "cache:" + h }, 1<<20)
}

// Two engines (two replicas' snapshots) sharing one Redis: a result one
// computed is a hit on the other, the backend runs once; two principals
// still do not share; every key is a hash under the prefix, with a TTL.
func TestCacheRedisSharedBetweenReplicas(t *testing.T) {
	rc := redisAt(t, "127.0.0.1:6379")
	prefix := uniquePrefix(t)
	t.Cleanup(func() {
		keys, _ := rc.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rc.Del(context.Background(), keys...)
		}
	})
	cfg := cachedConfig(`ttl = "1m"`, "")
	fa, fb := newFake(), newFake()
	a, _ := build(t, fa.register(), nil, cfg)
	b, _ := build(t, fb.register(), nil, cfg)
	a.UseSharedCache(redisStore(rc, prefix))
	b.UseSharedCache(redisStore(rc, prefix))

	args := json.RawMessage(`{"id":42}`)
	first := call(tool(t, a, "lookup"), as("ann"), args, nil)
	second := call(tool(t, b, "lookup"), as("ann"), args, nil)
	if cacheStatus(first) != "miss" || cacheStatus(second) != "hit" {
		t.Fatalf("replica a: %q, replica b: %q; want miss then hit", cacheStatus(first), cacheStatus(second))
	}
	if render(first) != render(second) {
		t.Errorf("the hit %q differs from the result %q", render(second), render(first))
	}
	if backendCalls(fa)+backendCalls(fb) != 1 {
		t.Errorf("backends called %d+%d times, want 1 in all", backendCalls(fa), backendCalls(fb))
	}
	if other := call(tool(t, b, "lookup"), as("bob"), args, nil); cacheStatus(other) != "miss" {
		t.Errorf("another principal on replica b: %q, want miss", cacheStatus(other))
	}
	keys, err := rc.Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys under the prefix: %v %v, want 2", keys, err)
	}
	for _, k := range keys {
		ttl := rc.PTTL(context.Background(), k).Val()
		if ttl <= 0 || ttl > time.Minute {
			t.Errorf("key %s has TTL %s, want (0, 1m]", k, ttl)
		}
		if len(k) != len(prefix)+len("cache:")+64 {
			t.Errorf("key %q is not the prefix and a hash", k)
		}
	}
}

// startRedis starts a redis-server of the test's own on a free port.
func startRedis(t *testing.T, port int) *exec.Cmd {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("MCPD_TEST_REQUIRE_REDIS") != "" {
			t.Fatal("MCPD_TEST_REQUIRE_REDIS is set and there is no redis-server")
		}
		t.Skip("no redis-server")
	}
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A Redis killed while calls run: every call still answers (the tool
// runs; the cache is never fail-closed) and the failures are counted as
// cache errors; once Redis is back, results are cached again.
func TestCacheRedisKilledFallsBack(t *testing.T) {
	port := freePort(t)
	srv := startRedis(t, port)
	rc := redisAt(t, "127.0.0.1:"+strconv.Itoa(port))
	f := newFake()
	s, _ := build(t, f.register(), nil, cachedConfig(`ttl = "1m"`, ""))
	s.UseSharedCache(redisStore(rc, uniquePrefix(t)))
	tl := tool(t, s, "lookup")

	var failed, errs atomic.Int32
	var n atomic.Int32
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
				res := call(tl, as("ann"), json.RawMessage(fmt.Sprintf(`{"id":%d}`, (w*1000+i)%50)), nil)
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
	srv.Process.Kill()
	srv.Wait()
	waitCalls(50)
	if errs.Load() == 0 {
		t.Error("no call counted a cache error with Redis down")
	}
	startRedis(t, port)
	// Recovery: a repeated call is a hit again within seconds.
	deadline := time.Now().Add(20 * time.Second)
	for {
		call(tl, as("ann"), json.RawMessage(`{"id":999}`), nil)
		if cacheStatus(call(tl, as("ann"), json.RawMessage(`{"id":999}`), nil)) == "hit" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no hit within 20s of Redis coming back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of %d calls failed while Redis was down; want none", failed.Load(), n.Load())
	}
}
