package sqladapter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// BenchmarkCacheHit is one call of bench/configs/sqlite-point.hcl's
// get_item through the engine's call API (validate, bind, call, shape,
// redact), 16 at a time: uncached, then answered from the in-memory result cache, then
// from Redis (127.0.0.1:6379; skipped when none answers). The ratio of
// uncached to hit ns/op is what a hit saves in server CPU per call, the
// protocol's cost aside (bench/run.sh measures it over HTTP).
func BenchmarkCacheHit(b *testing.B) {
	dir := b.TempDir()
	src, err := os.ReadFile("../../bench/configs/sqlite-point.hcl")
	if err != nil {
		b.Fatal(err)
	}
	seed, err := os.ReadFile("../../bench/configs/sqlite-point.sql")
	if err != nil {
		b.Fatal(err)
	}
	cached := strings.Replace(string(src), "  sql {\n", "  cache {\n    ttl    = \"1h\"\n    shared = true\n  }\n  sql {\n", 1)
	if cached == string(src) {
		b.Fatal("sqlite-point.hcl changed: no sql block to put a cache block before")
	}
	b.Setenv("MCPD_BENCH_DB", filepath.Join(dir, "bench.db"))
	if err := os.WriteFile(filepath.Join(dir, "sqlite-point.sql"), seed, 0o644); err != nil {
		b.Fatal(err)
	}
	load := func(text string) *snapshot.Snapshot {
		sub := b.TempDir()
		os.WriteFile(filepath.Join(sub, "sqlite-point.sql"), seed, 0o644)
		if err := os.WriteFile(filepath.Join(sub, "tools.hcl"), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		reg := adapter.NewRegistry()
		reg.Register("sql", sqladapter.New())
		l := loader.Load([]string{sub}, reg, nil, "bench")
		if l.Snapshot == nil {
			b.Fatalf("load: %v", l.Diagnostics)
		}
		b.Cleanup(l.Snapshot.Close)
		return l.Snapshot
	}
	const ids = 1024
	reqs := make([]*snapshot.CallRequest, ids)
	for i := range reqs {
		reqs[i] = &snapshot.CallRequest{Args: json.RawMessage(fmt.Sprintf(`{"id":%d}`, i*7%10000+1))}
	}
	run := func(b *testing.B, s *snapshot.Snapshot, want string) {
		tl, _ := s.Tool("get_item")
		ctx := context.Background()
		for _, r := range reqs { // warm: every id is cached
			tl.Call(ctx, r)
		}
		b.ReportAllocs()
		b.ResetTimer()
		cpu0 := processCPU()
		// 16 calls in flight, as bench/run.sh's C=16: a server's cost per
		// call under load, where a Redis round trip's wait overlaps other
		// calls' work instead of spinning the scheduler.
		b.SetParallelism(8)
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := tl.Call(ctx, reqs[next.Add(1)%ids])
				if err != nil || res.IsError {
					b.Error(err, res)
					return
				}
				if got := cache.Status(res); got != want {
					b.Errorf("cache %q, want %q", got, want)
					return
				}
			}
		})
		n := b.N
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
	}
	plain, mem := load(string(src)), load(cached)
	b.Run("uncached", func(b *testing.B) { run(b, plain, "") })
	b.Run("memory-hit", func(b *testing.B) { run(b, mem, "hit") })
	b.Run("redis-hit", func(b *testing.B) {
		url := sharedstatetest.URL(b)
		state := fmt.Sprintf("server {\n  name = \"bench\"\n  state {\n    redis      = %q\n    key_prefix = %q\n  }\n}\n", url, sharedstatetest.Prefix(b, url))
		s := load(state + cached)
		deadline := time.Now().Add(10 * time.Second)
		for !s.State().Healthy() {
			if time.Now().After(deadline) {
				b.Fatal("the shared state never came up")
			}
			time.Sleep(10 * time.Millisecond)
		}
		run(b, s, "hit")
	})
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
