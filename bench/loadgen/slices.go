package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// compareSlices compares two servers in one run, with finer interleaving
// than -pairs: both servers run at once, pinned to the same CPU, each with
// its own clients, and the load alternates between them in short slices
// (A B, then B A, ...), one server loaded while the other idles. Each pair
// of neighbouring slices gives one ratio B/A of calls per server
// CPU-second, and the figure is their median. On a shared machine whose
// speed drifts by tens of percent from one minute to the next, ratios of
// slices a second apart are far steadier than those of whole runs.
//
// A gate per server (a sync.RWMutex) holds its clients: each request is made
// under a read lock, and closing the gate (Lock) waits for the requests in
// flight, so every request counted in a slice ran entirely within it.
func compareSlices(o options, pairs int, slice time.Duration, labelA, a, labelB, b string) error {
	type side struct {
		label  string
		srv    *server
		conns  []conn
		idle   int64
		gate   sync.RWMutex
		recs   []recorder
		counts []atomic.Int64 // calls per slice
		slice  atomic.Int32   // the slice being measured, -1 in warmup
		cpu    []time.Duration
		wall   []time.Duration
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sides := []*side{{label: labelA}, {label: labelB}}
	for i, cmd := range []string{a, b} {
		s := sides[i]
		srv, err := startServer(cmd, o.cpu, o.transport == "stdio", o.env)
		if err != nil {
			return err
		}
		defer srv.stop()
		s.srv = srv
		if s.conns, s.idle, err = connect(ctx, o, srv); err != nil {
			return fmt.Errorf("%s: %w", s.label, err)
		}
		s.recs = make([]recorder, len(s.conns))
		s.counts = make([]atomic.Int64, pairs)
		s.slice.Store(-1)
		s.gate.Lock() // closed until its turn
	}
	variants := paramVariants(o)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, s := range sides {
		for i, c := range s.conns {
			wg.Add(1)
			go func(s *side, c conn, rec *recorder, next int) {
				defer wg.Done()
				defer c.close()
				for {
					s.gate.RLock()
					if stop.Load() {
						s.gate.RUnlock()
						return
					}
					k := s.slice.Load()
					params := variants[next%len(variants)]
					next++
					t0 := time.Now()
					_, err := c.request(ctx, o.method, o.tool, params)
					d := time.Since(t0)
					s.gate.RUnlock()
					if err != nil {
						if ctx.Err() != nil {
							return
						}
						rec.fail(err)
						time.Sleep(time.Millisecond)
						continue
					}
					if k >= 0 {
						rec.lat = append(rec.lat, d)
						s.counts[k].Add(1)
					}
				}
			}(s, c, &s.recs[i], i*61)
		}
	}
	// run opens s's gate for d and closes it again once its requests in
	// flight are done, returning the wall and CPU time that took.
	run := func(s *side, k int, d time.Duration) (wall, cpu time.Duration, err error) {
		s.slice.Store(int32(k))
		c0, err := cpuTimeThreads(s.srv.pid)
		if err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		s.gate.Unlock()
		time.Sleep(d)
		s.gate.Lock()
		wall = time.Since(t0)
		c1, err := cpuTimeThreads(s.srv.pid)
		return wall, c1 - c0, err
	}
	var err error
	for _, s := range sides { // warmup
		if _, _, err = run(s, -1, o.warmup/2); err != nil {
			break
		}
	}
	for k := 0; k < pairs && err == nil; k++ {
		order := []*side{sides[0], sides[1]}
		if k%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, s := range order {
			var wall, cpu time.Duration
			if wall, cpu, err = run(s, k, slice); err != nil {
				break
			}
			s.wall, s.cpu = append(s.wall, wall), append(s.cpu, cpu)
		}
	}
	stop.Store(true)
	for _, s := range sides {
		s.gate.Unlock()
	}
	wg.Wait()
	if err != nil {
		return err
	}

	var results []*result
	for _, s := range sides {
		var wall, cpu time.Duration
		for k := range s.wall {
			wall, cpu = wall+s.wall[k], cpu+s.cpu[k]
		}
		oo := o
		oo.label = s.label
		r := summarizeRun(oo, s.recs, wall, cpu)
		r.RSSIdle = s.idle
		_, r.RSSPeak, _ = memory(s.srv.pid)
		r.Note = fmt.Sprintf("%d slices of %s", len(s.wall), slice)
		writeJSON(o.jsonOut, r)
		results = append(results, r)
		if r.Errors > 0 {
			return fmt.Errorf("%s: %d errors; the first: %s", s.label, r.Errors, r.FirstError)
		}
	}
	printHeader(o.mode)
	for _, r := range results {
		printResult(r)
	}
	perCPU := func(s *side, k int) float64 {
		if s.cpu[k] <= 0 {
			return 0
		}
		return float64(s.counts[k].Load()) / s.cpu[k].Seconds()
	}
	perSec := func(s *side, k int) float64 { return float64(s.counts[k].Load()) / s.wall[k].Seconds() }
	var cpuRatios, rateRatios []float64
	for k := range sides[0].wall {
		if a := perCPU(sides[0], k); a > 0 {
			cpuRatios = append(cpuRatios, perCPU(sides[1], k)/a)
		}
		if a := perSec(sides[0], k); a > 0 {
			rateRatios = append(rateRatios, perSec(sides[1], k)/a)
		}
	}
	slices.Sort(cpuRatios)
	fmt.Printf("\nsummary over %d interleaved pairs of %s slices (ratio = median of the per-pair ratios %s/%s)\n", len(cpuRatios), slice, labelB, labelA)
	fmt.Printf("%-14s %12s %12s %10s\n", "metric", labelA, labelB, "ratio")
	ra, rb := results[0], results[1]
	fmt.Printf("%-14s %12.0f %12.0f %9.3fx\n", "ops/CPU-s", ra.PerCPU, rb.PerCPU, median(cpuRatios))
	fmt.Printf("%-14s %12.0f %12.0f %9.3fx\n", "ops/s", ra.Rate, rb.Rate, median(rateRatios))
	for _, m := range metricsFor(o.mode)[2:] {
		va, vb := m.get(ra), m.get(rb)
		ratio := 0.0
		if va > 0 {
			ratio = vb / va
		}
		fmt.Printf("%-14s %12.3f %12.3f %9.3fx\n", m.name, va, vb, ratio)
	}
	q := func(p float64) float64 { return cpuRatios[int(p*float64(len(cpuRatios)-1))] }
	fmt.Printf("per-pair ops/CPU-s ratios: min %.3f, quartiles %.3f %.3f %.3f, max %.3f\n",
		cpuRatios[0], q(0.25), q(0.5), q(0.75), cpuRatios[len(cpuRatios)-1])
	return nil
}
