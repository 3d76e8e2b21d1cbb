// Command loadtime measures loading a config in process, as a reload does:
// config.Load (parse and decode) and then snapshot.Build (compile), n
// times, reporting the fastest and the median wall time and the CPU time
// per load. On a shared machine the fastest run is the best estimate of an
// uncontended one. It uses the same adapters as mcpd (see bench/profserve).
//
//	loadtime -c bench/configs/tools-1000.hcl -n 20
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/bench/internal/profile"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/snapshot"
)

func main() {
	path := flag.String("c", "", "config file or directory")
	n := flag.Int("n", 20, "loads")
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the loads here")
	parseRef := flag.Bool("parse-alone", false, "also time HCL's parser alone on the whole file (between loads, untimed by them)")
	flag.Parse()
	if *path == "" {
		fmt.Fprintln(os.Stderr, "loadtime: give -c CONFIG")
		os.Exit(2)
	}
	stop := profile.StartNow(*cpu)
	reg := adapter.NewRegistry()
	reg.Register("http", httpadapter.New())
	blocks := config.Blocks{Adapters: reg.ToolBlocks(), Backends: reg.BackendBlocks()}
	var total, decode, build, parse []time.Duration
	var cpuTotal time.Duration
	tools := 0
	for i := 0; i < *n; i++ {
		c0 := cpuNow()
		t0 := time.Now()
		cfg, diags := config.Load([]string{*path}, blocks)
		t1 := time.Now()
		if diags.HasErrors() {
			fmt.Fprintln(os.Stderr, diags.Error())
			os.Exit(1)
		}
		s, diags := snapshot.Build(cfg, reg, nil, "loadtime")
		t2 := time.Now()
		cpuTotal += cpuNow() - c0
		if s == nil {
			fmt.Fprintln(os.Stderr, diags.Error())
			os.Exit(1)
		}
		tools = len(s.Tools)
		s.Close()
		total, decode, build = append(total, t2.Sub(t0)), append(decode, t1.Sub(t0)), append(build, t2.Sub(t1))
		// The parser alone, for reference (not part of the total).
		if src, err := os.ReadFile(*path); err == nil && *parseRef {
			t := time.Now()
			hclsyntax.ParseConfig(src, *path, hcl.InitialPos)
			parse = append(parse, time.Since(t))
		}
	}
	stop()
	fmt.Printf("%s: %d tools, %d loads\n", *path, tools, *n)
	fmt.Printf("%-28s %10s %10s\n", "phase", "min ms", "median ms")
	for _, p := range []struct {
		name string
		d    []time.Duration
	}{{"(HCL parser alone)", parse}, {"parse + decode (config)", decode}, {"compile (snapshot.Build)", build}, {"total", total}} {
		if len(p.d) == 0 {
			continue
		}
		slices.Sort(p.d)
		fmt.Printf("%-28s %10.1f %10.1f\n", p.name, ms(p.d[0]), ms(p.d[len(p.d)/2]))
	}
	fmt.Printf("%-28s %10s %10.1f\n", "CPU per load (all threads)", "", ms(cpuTotal/time.Duration(*n)))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
