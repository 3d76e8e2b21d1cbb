// Package profile writes the CPU and allocation profiles of the benchmark
// servers and tools.
package profile

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
)

// Start begins profiling when cpu or allocs name a file, and returns at
// once. The profiles are written by the returned function, or when the
// process is told to stop (SIGINT, SIGTERM), which then exits.
func Start(cpu, allocs string) (stop func()) {
	if cpu == "" && allocs == "" {
		return func() {}
	}
	if allocs != "" {
		runtime.MemProfileRate = 64 << 10
	}
	var f *os.File
	if cpu != "" {
		var err error
		if f, err = os.Create(cpu); err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			os.Exit(1)
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			if f != nil {
				pprof.StopCPUProfile()
				f.Close()
			}
			if allocs != "" {
				if g, err := os.Create(allocs); err == nil {
					pprof.Lookup("allocs").WriteTo(g, 0)
					g.Close()
				}
			}
		})
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		stop()
		os.Exit(0)
	}()
	return stop
}

// StartNow begins a CPU profile when path is not empty; the returned
// function stops it.
func StartNow(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
