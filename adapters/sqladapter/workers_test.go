package sqladapter

import (
	"sync"
	"testing"
	"time"
)

func TestWorkersRunEveryJobAndStayBounded(t *testing.T) {
	w := newWorkers(3)
	defer w.close()
	var mu sync.Mutex
	ran := 0
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.do(func() {
				if n := w.started.Load(); n > 3 {
					t.Errorf("%d workers", n)
				}
				time.Sleep(time.Millisecond)
				mu.Lock()
				ran++
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	if ran != 50 {
		t.Errorf("%d of 50 jobs ran", ran)
	}
	// A job's results are visible to the caller once do returns.
	x := 0
	w.do(func() { x = 42 })
	if x != 42 {
		t.Errorf("x = %d", x)
	}
}

func TestWorkerPanicReachesTheCaller(t *testing.T) {
	w := newWorkers(1)
	defer w.close()
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want boom", r)
		}
		// The worker survived its job's panic.
		done := false
		w.do(func() { done = true })
		if !done {
			t.Error("the worker did not run the next job")
		}
	}()
	w.do(func() { panic("boom") })
	t.Fatal("do returned after a panic")
}

func TestClosedWorkersEnd(t *testing.T) {
	w := newWorkers(2)
	w.do(func() {})
	w.close()
	deadline := time.Now().Add(5 * time.Second)
	for w.started.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers still running after close", w.started.Load())
		}
		time.Sleep(time.Millisecond)
	}
	// A backend closed while a call is in flight still answers it.
	ran := false
	w.do(func() { ran = true })
	if !ran {
		t.Error("a job after close did not run")
	}
	w.close() // twice is fine
}
