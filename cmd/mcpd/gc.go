package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// The garbage collector policy mcpd runs with unless the user chose one.
//
// Most of the garbage of a call is made by the MCP SDK, not by mcpd: it
// decodes each JSON-RPC message several times, each time through a decoder
// that allocates a fresh 32 KiB buffer, so a plain tools/call leaves about
// 190 KiB behind while mcpd's live heap is a few MiB. At the runtime's
// default GOGC=100 the collector then runs every few dozen calls and takes a
// third of the CPU. GOGC=400 lets the heap grow to five times the live data
// between collections: measured on the static tool over HTTP at C=16, +40 %
// calls per CPU-second for 11 MiB more peak RSS (35 instead of 24 MiB).
// docs/performance.md has the measurements, including GOGC=200 and 800.
//
// The memory limit keeps that bounded when the live heap is large: as the
// heap nears it, the collector runs more often whatever GOGC says. A config
// of 10,000 tools keeps about 100 MiB live, and 512 MiB lets it load in
// about a second (at 256 MiB the collector ran so often that loading took
// half as long again); smaller configs never reach it. Inside a
// container whose cgroup limits memory, the limit is at most three
// quarters of that, so that a large config makes the collector work harder
// instead of getting the process killed. It is a soft limit: a live heap
// above it is still served, at the cost of more collection.
//
// Setting GOGC or GOMEMLIMIT in the environment leaves both to the runtime.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 512 << 20
)

// setGCPolicy applies the default policy unless GOGC or GOMEMLIMIT is set.
func setGCPolicy() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	debug.SetGCPercent(defaultGCPercent)
	debug.SetMemoryLimit(memoryLimit(cgroupMemoryLimit()))
}

// memoryLimit is the default limit given the cgroup's (0 for none).
func memoryLimit(cgroup int64) int64 {
	if cgroup > 0 && cgroup/4*3 < defaultMemoryLimit {
		return cgroup / 4 * 3
	}
	return defaultMemoryLimit
}

// cgroupMemoryLimit returns the memory limit of the process's cgroup (v2,
// then v1), or 0 when there is none or it cannot be read.
func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // "max", or v1's "no limit"
			return 0
		}
		return n
	}
	return 0
}
