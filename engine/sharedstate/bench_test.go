package sharedstate_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTake is one rate-limit check in Redis (one EVALSHA of the GCRA
// script, two buckets), from 16 goroutines as calls arrive; cpu-ns/op is
// this process's CPU per check (the client's side, not Redis's).
func BenchmarkTake(b *testing.B) {
	url := sharedstatetest.URL(b)
	prefix := sharedstatetest.Prefix(b, url)
	st := sharedstate.Open(mustCompileB(b, stateBlock(fmt.Sprintf("redis = %q", url), fmt.Sprintf("key_prefix = %q", prefix))), nil)
	defer st.Close()
	tool := sharedstate.Bucket{Key: st.Key("rl", "bench", "tool"), Interval: time.Microsecond, Burst: 1 << 20}
	ctx := context.Background()
	b.SetParallelism(8)
	start := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			caller := sharedstate.Bucket{Key: st.Key("rl", "bench", "caller", "api_key:alice"), Interval: time.Microsecond, Burst: 1 << 20}
			if _, _, err := st.Take(ctx, tool, caller); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkPing is the floor: one PING round trip on the same client.
func BenchmarkPing(b *testing.B) {
	url := sharedstatetest.URL(b)
	st := sharedstate.Open(mustCompileB(b, stateBlock(fmt.Sprintf("redis = %q", url))), nil)
	defer st.Close()
	ctx := context.Background()
	b.SetParallelism(8)
	start := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := st.Client().Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}
