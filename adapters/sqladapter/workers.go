package sqladapter

import (
	"sync"
	"sync/atomic"
)

// workers run SQLite statements on goroutines of their own, kept between
// calls. The SDK starts a goroutine for every request, with a small stack;
// SQLite's code (translated from C) needs a deep one, so every call's
// goroutine grew its stack, copying it each time it doubled: 5-7 % of a
// point query's CPU. A worker's stack has grown once (until a garbage
// collection shrinks an idle one), and handing it a statement costs two
// goroutine switches.
//
// There are at most max workers; a call that finds none idle and the
// limit reached runs on its own goroutine, so a call never waits for a
// worker. A panic in a worker is re-raised on the caller's goroutine, where
// the engine recovers it as it would have without workers.
type workers struct {
	max     int32
	started atomic.Int32
	jobs    chan *job
	stop    chan struct{}
	once    sync.Once
}

type job struct {
	run   func()
	done  chan struct{}
	panic any
}

func newWorkers(max int) *workers {
	return &workers{max: int32(max), jobs: make(chan *job), stop: make(chan struct{})}
}

// do runs f on an idle worker, a new one, or the caller's goroutine.
func (w *workers) do(f func()) {
	j := &job{run: f, done: make(chan struct{})}
	select {
	case w.jobs <- j:
	default:
		if !w.start() {
			f()
			return
		}
		go w.loop(j)
	}
	<-j.done
	if j.panic != nil {
		panic(j.panic)
	}
}

// start counts one more worker, unless there are max already.
func (w *workers) start() bool {
	for {
		n := w.started.Load()
		if n >= w.max {
			return false
		}
		if w.started.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (w *workers) loop(j *job) {
	defer w.started.Add(-1)
	for {
		j.exec()
		select {
		case j = <-w.jobs:
		case <-w.stop:
			return
		}
	}
}

func (j *job) exec() {
	defer close(j.done)
	defer func() { j.panic = recover() }()
	j.run()
}

// close ends the idle workers; the busy ones end after their job.
func (w *workers) close() { w.once.Do(func() { close(w.stop) }) }
