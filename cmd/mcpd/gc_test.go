package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
)

// The default GC policy applies only when neither GOGC nor GOMEMLIMIT is
// set; either one leaves both to the runtime.
func TestGCPolicy(t *testing.T) {
	prevPercent := debug.SetGCPercent(100)
	prevLimit := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(prevPercent)
		debug.SetMemoryLimit(prevLimit)
	})
	for _, tt := range []struct {
		name        string
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{"defaults", nil, defaultGCPercent, memoryLimit(cgroupMemoryLimit())},
		{"GOGC set", map[string]string{"GOGC": "150"}, 100, math.MaxInt64},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 100, math.MaxInt64},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
				if v, ok := tt.env[k]; ok {
					t.Setenv(k, v)
				} else if old, ok := os.LookupEnv(k); ok {
					t.Setenv(k, old) // restored after the test
					os.Unsetenv(k)
				}
			}
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			setGCPolicy()
			if got := debug.SetGCPercent(100); got != tt.wantPercent {
				t.Errorf("GC percent = %d, want %d", got, tt.wantPercent)
			}
			if got := debug.SetMemoryLimit(math.MaxInt64); got != tt.wantLimit {
				t.Errorf("memory limit = %d, want %d", got, tt.wantLimit)
			}
		})
	}
}

// Inside a cgroup with less memory than the default limit allows, the limit
// is three quarters of the cgroup's.
func TestMemoryLimit(t *testing.T) {
	for _, tt := range []struct{ cgroup, want int64 }{
		{0, defaultMemoryLimit},
		{4 << 30, defaultMemoryLimit},
		{512 << 20, 384 << 20},
		{128 << 20, 96 << 20},
	} {
		if got := memoryLimit(tt.cgroup); got != tt.want {
			t.Errorf("memoryLimit(%d) = %d, want %d", tt.cgroup, got, tt.want)
		}
	}
}
