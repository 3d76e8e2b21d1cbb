package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Run runs one round of a task's call: with the answers to the questions
// of the round before and the state it left (none at first). The context
// ends when the task is cancelled.
type Run func(ctx context.Context, answers map[string]json.RawMessage, state string) Outcome

// Outcome is how one round of a call ended: with a result (completed, a
// tool error included), with questions for the user (input_required, and
// the state the next round needs), or with a protocol error (failed).
type Outcome struct {
	Result json.RawMessage
	Inputs map[string]json.RawMessage
	State  string
	Err    *Error
}

// Event is a change in a task's life, for the audit log and the metrics:
// Kind is "created", or the status it ended in.
type Event struct {
	Kind   string
	Record *Record
}

// Options configure a Manager.
type Options struct {
	// Replica names this process in the records of the tasks it runs
	// (default: a random id).
	Replica string
	// Lease is how long a task is held by its replica without a renewal
	// (default 15s); Renew how often the replica renews it, and looks
	// for a cancellation or answers made on another replica (default
	// Lease/3).
	Lease, Renew time.Duration
	// MaxResultBytes bounds a result kept in the store (default 4 MiB):
	// a larger one fails the task.
	MaxResultBytes int
	// MaxKeptPerCaller bounds the tasks of one caller in the store, ended
	// ones kept for their TTL included (default 1000); a tool's
	// max_per_caller bounds those not ended.
	MaxKeptPerCaller int
	// Logger gets the manager's errors (default slog.Default()).
	Logger *slog.Logger
	// Observe, when not nil, hears of each task created and ended.
	Observe func(Event)
	// OnStatus, when not nil, hears of each change of a task's status made
	// by this process (input_required, working again after the answers,
	// and its end), with the record as it is after: for the 2025-11-25
	// notifications/tasks/status. It must not block.
	OnStatus func(*Record)
	// Now is the clock (default time.Now), for tests.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultMaxResultBytes   = 4 << 20
	DefaultMaxKeptPerCaller = 1000
)

// Manager creates, runs, answers and cancels tasks on a Store.
type Manager struct {
	store Store
	opts  Options

	mu      sync.Mutex
	runs    map[string]*local // the tasks this process runs, by id
	closing bool
	wg      sync.WaitGroup
}

// local is a task this process runs.
type local struct {
	started time.Time
	cancel  context.CancelFunc
	wake    chan struct{} // answers arrived
}

// NewManager returns a manager of the tasks in store.
func NewManager(store Store, opts Options) *Manager {
	if opts.Replica == "" {
		opts.Replica = newID()[:12]
	}
	if opts.Lease <= 0 {
		opts.Lease = 15 * time.Second
	}
	if opts.Renew <= 0 || opts.Renew >= opts.Lease {
		opts.Renew = opts.Lease / 3
	}
	if opts.MaxKeptPerCaller <= 0 {
		opts.MaxKeptPerCaller = DefaultMaxKeptPerCaller
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Manager{store: store, opts: opts, runs: map[string]*local{}}
}

// Store is the manager's store.
func (m *Manager) Store() Store { return m.store }

// Start creates a task of owner's for tool and runs it in the background
// with base's values (not its cancellation): the record is in the store
// before Start returns, so that a tasks/get that follows at once finds it.
func (m *Manager) Start(ctx context.Context, base context.Context, spec Spec, run Run) (*Record, error) {
	owner, p := spec.Owner, spec.Policy
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return nil, errors.New("mcpd is shutting down")
	}
	now := m.opts.Now()
	r := &Record{
		ID: newID(), Owner: owner, Caller: spec.Caller, AuthMethod: spec.AuthMethod, Tool: spec.Tool, Status: Working,
		Created: now, Updated: now, TTL: p.TTL, Poll: p.PollInterval,
		Replica: m.opts.Replica, Lease: now.Add(m.opts.Lease),
	}
	r.Expires = r.Lease.Add(r.TTL)
	max := p.MaxPerCaller
	if max <= 0 {
		max = DefaultMaxPerCaller
	}
	if err := m.store.Create(ctx, r, max, m.opts.MaxKeptPerCaller); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(base), handleKey{}, &handle{m: m, owner: owner, id: r.ID}))
	l := &local{cancel: cancel, wake: make(chan struct{}, 1), started: now}
	m.mu.Lock()
	m.runs[r.ID] = l
	m.wg.Add(1)
	m.mu.Unlock()
	m.observe("created", r)
	go m.run(runCtx, l, clone(r), run)
	return r, nil
}

// Get returns owner's task id. A task whose replica stopped renewing its
// lease is marked failed first.
func (m *Manager) Get(ctx context.Context, owner, id string) (*Record, error) {
	r, err := m.store.Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	now := m.opts.Now()
	if expireLost(clone(r), now) {
		r, err = m.store.Update(ctx, owner, id, func(r *Record) bool { return expireLost(r, now) })
		if err == nil && r.Status == Failed {
			m.observe(string(Failed), r)
		}
	}
	return r, err
}

// Cancel cancels owner's task id: it is cancelled at once in the store,
// and its call's context ends on the replica that runs it (at once here,
// within Renew elsewhere). A task that has ended already stays as it is.
func (m *Manager) Cancel(ctx context.Context, owner, id string) (*Record, error) {
	now := m.opts.Now()
	changed := false
	r, err := m.store.Update(ctx, owner, id, func(r *Record) bool {
		if expireLost(r, now) {
			return true
		}
		if r.Status.Terminal() {
			return false
		}
		end(r, now, Cancelled, "cancelled by the client")
		changed = true
		return true
	})
	if err != nil {
		return nil, err
	}
	if changed {
		m.observe(string(Cancelled), r)
	}
	m.mu.Lock()
	l := m.runs[id]
	m.mu.Unlock()
	if l != nil {
		l.cancel()
	}
	return r, nil
}

// Answer records answers to the questions owner's task id waits for:
// those that answer no pending question are ignored. Once every question
// is answered the task is working again, and its replica runs the next
// round.
func (m *Manager) Answer(ctx context.Context, owner, id string, answers map[string]json.RawMessage) (*Record, error) {
	now := m.opts.Now()
	resumed := false
	r, err := m.store.Update(ctx, owner, id, func(r *Record) bool {
		resumed = false // a retried update runs this again
		if r.Status != InputRequired {
			return false
		}
		took := false
		for k, v := range answers {
			if _, ok := r.Inputs[k]; !ok {
				continue
			}
			if r.Answers == nil {
				r.Answers = map[string]json.RawMessage{}
			}
			r.Answers[k] = v
			delete(r.Inputs, k)
			took = true
		}
		if len(r.Inputs) == 0 {
			r.Status, r.Inputs, r.Message = Working, nil, ""
			resumed = true
		}
		r.Updated = now
		return took
	})
	if err != nil {
		return nil, err
	}
	if r.Status == Working && resumed {
		m.status(r)
	}
	m.mu.Lock()
	l := m.runs[id]
	m.mu.Unlock()
	if l != nil && r.Status == Working {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return r, nil
}

// progressEvery is how often a task's progress is written to the store
// at most.
const progressEvery = 250 * time.Millisecond

// handle is a running task, as its call's context carries it (Report).
type handle struct {
	m         *Manager
	owner, id string
	mu        sync.Mutex
	last      time.Time
}

type handleKey struct{}

// Report records msg as the message of the task whose call ctx is (its
// progress, in words), at most every 250ms unless final; outside a task
// it does nothing.
func Report(ctx context.Context, msg string, final bool) {
	h, _ := ctx.Value(handleKey{}).(*handle)
	if h == nil {
		return
	}
	h.mu.Lock()
	now := time.Now()
	due := final || now.Sub(h.last) >= progressEvery
	if due {
		h.last = now
	}
	h.mu.Unlock()
	if due {
		h.m.progress(context.WithoutCancel(ctx), h.owner, h.id, msg)
	}
}

// progress sets the message of a running task.
func (m *Manager) progress(ctx context.Context, owner, id, msg string) {
	now := m.opts.Now()
	_, err := m.store.Update(ctx, owner, id, func(r *Record) bool {
		if r.Status.Terminal() {
			return false
		}
		r.Message, r.Updated = msg, now
		return true
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		m.opts.Logger.Debug("task progress", "task", id, "err", err)
	}
}

// List returns at most n tasks that have not expired.
func (m *Manager) List(ctx context.Context, n int) ([]*Record, error) {
	return m.store.List(ctx, n)
}

// Running is the number of tasks this process runs.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs)
}

// Oldest is the age of the oldest task this process runs; 0 for none.
func (m *Manager) Oldest() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first time.Time
	for _, l := range m.runs {
		if first.IsZero() || l.started.Before(first) {
			first = l.started
		}
	}
	if first.IsZero() {
		return 0
	}
	return m.opts.Now().Sub(first)
}

// Shutdown refuses new tasks and waits until ctx ends for the tasks this
// process runs; those still running then are cancelled and end failed (a
// client cannot resume them elsewhere), given shutdownWait to record it.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	n := len(m.runs)
	for _, l := range m.runs {
		l.cancel()
	}
	m.mu.Unlock()
	m.opts.Logger.Warn("cancelling the tasks still running", "tasks", n)
	t := time.NewTimer(shutdownWait)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errors.New("some tasks did not end in time")
	}
}

// shutdownWait is how long Shutdown waits for cancelled tasks to end.
const shutdownWait = 5 * time.Second

// run runs task r to its end: rounds of the call, each after the answers
// to the questions of the one before, while a heartbeat renews the lease
// and watches for a cancellation made on another replica.
func (m *Manager) run(ctx context.Context, l *local, r *Record, run Run) {
	defer m.wg.Done()
	defer func() {
		l.cancel()
		m.mu.Lock()
		delete(m.runs, r.ID)
		m.mu.Unlock()
	}()
	go m.heartbeat(ctx, l, r.Owner, r.ID)
	var answers map[string]json.RawMessage
	state := ""
	for {
		out := m.round(ctx, run, answers, state)
		if ctx.Err() != nil {
			// Cancelled (the record says so already) or shut down.
			m.finish(r, Outcome{Err: &Error{Code: codeInternal, Message: "the task was stopped: mcpd shut down"}})
			return
		}
		if out.Inputs == nil {
			m.finish(r, out)
			return
		}
		if !m.ask(ctx, r, out.Inputs) {
			return
		}
		state = out.State
		var stop *Error
		if answers, stop = m.awaitAnswers(ctx, l, r); answers == nil {
			if stop == nil {
				stop = &Error{Code: codeInternal, Message: "the task was stopped: mcpd shut down"}
			}
			m.finish(r, Outcome{Err: stop})
			return
		}
	}
}

// round runs one round, a panic in it a protocol error.
func (m *Manager) round(ctx context.Context, run Run, answers map[string]json.RawMessage, state string) (out Outcome) {
	defer func() {
		if v := recover(); v != nil {
			m.opts.Logger.Error("task panicked", "panic", v, "stack", string(debug.Stack()))
			out = Outcome{Err: &Error{Code: codeInternal, Message: fmt.Sprintf("internal error: %v", v)}}
		}
	}()
	return run(ctx, answers, state)
}

// ask puts the task's questions in its record: input_required. It reports
// false when the task has ended meanwhile (cancelled).
func (m *Manager) ask(ctx context.Context, r *Record, inputs map[string]json.RawMessage) bool {
	now := m.opts.Now()
	rec, err := m.store.Update(context.WithoutCancel(ctx), r.Owner, r.ID, func(rec *Record) bool {
		if rec.Status.Terminal() {
			return false
		}
		rec.Status, rec.Inputs, rec.Answers, rec.Updated = InputRequired, inputs, nil, now
		rec.Message = "waiting for the user's answers"
		return true
	})
	if err == nil && rec.Status == InputRequired {
		m.status(rec)
	}
	return err == nil && rec.Status == InputRequired
}

// awaitAnswers waits until every question is answered (the record is
// working again with answers), and takes the answers. It gives up when
// the task ends (cancelled: nil, nil), or after the task's TTL (at least
// a minute) without answers (nil and why).
func (m *Manager) awaitAnswers(ctx context.Context, l *local, r *Record) (map[string]json.RawMessage, *Error) {
	t := time.NewTicker(m.opts.Renew)
	defer t.Stop()
	wait := max(r.TTL, time.Minute)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, &Error{Code: codeInternal, Message: fmt.Sprintf("no answers to the task's questions within %s", wait)}
		case <-l.wake:
		case <-t.C:
		}
		var answers map[string]json.RawMessage
		rec, err := m.store.Update(ctx, r.Owner, r.ID, func(rec *Record) bool {
			if rec.Status != Working || rec.Answers == nil {
				return false
			}
			answers, rec.Answers = rec.Answers, nil
			rec.Message = ""
			return true
		})
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return nil, nil
			}
			continue
		}
		if rec.Status.Terminal() {
			return nil, nil
		}
		if answers != nil {
			return answers, nil
		}
	}
}

// finish records how the task ended, unless it has ended already
// (cancelled, or failed by a poller that found its lease run out).
func (m *Manager) finish(r *Record, out Outcome) {
	now := m.opts.Now()
	if out.Err == nil && !json.Valid(out.Result) {
		out = Outcome{Err: &Error{Code: codeInternal, Message: "the task's result is not JSON"}}
	}
	if out.Err == nil && len(out.Result) > m.opts.MaxResultBytes {
		out = Outcome{Err: &Error{Code: codeInternal, Message: fmt.Sprintf("the task's result of %d bytes is larger than the %d bytes a task may keep", len(out.Result), m.opts.MaxResultBytes)}}
	}
	changed := false
	rec, err := m.store.Update(context.Background(), r.Owner, r.ID, func(rec *Record) bool {
		if rec.Status.Terminal() {
			return false
		}
		if out.Err != nil {
			end(rec, now, Failed, out.Err.Message)
			rec.Error = out.Err
		} else {
			end(rec, now, Completed, "")
			rec.Result = out.Result
		}
		changed = true
		return true
	})
	if err != nil {
		m.opts.Logger.Warn("recording the end of a task", "task", r.ID, "tool", r.Tool, "err", err)
		return
	}
	if changed {
		m.observe(string(rec.Status), rec)
	}
}

// heartbeat renews the lease of a task this process runs, and cancels
// its call when the record says it was cancelled (on any replica), until
// the run ends.
func (m *Manager) heartbeat(ctx context.Context, l *local, owner, id string) {
	t := time.NewTicker(m.opts.Renew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := m.opts.Now()
		rec, err := m.store.Update(ctx, owner, id, func(r *Record) bool {
			if r.Status.Terminal() {
				return false
			}
			r.Lease = now.Add(m.opts.Lease)
			r.Expires = r.Lease.Add(r.TTL)
			return true
		})
		switch {
		case errors.Is(err, ErrNotFound):
			l.cancel()
			return
		case err != nil:
			m.opts.Logger.Warn("renewing a task's lease", "task", id, "err", err)
		case rec.Status.Terminal():
			l.cancel()
			return
		case rec.Status == Working && rec.Answers != nil:
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

// end puts r in terminal status st at now: kept for its TTL from now.
func end(r *Record, now time.Time, st Status, msg string) {
	r.Status, r.Message, r.Updated = st, msg, now
	r.Inputs, r.Answers, r.Lease = nil, nil, time.Time{}
	r.Expires = now.Add(r.TTL)
}

func (m *Manager) observe(kind string, r *Record) {
	if m.opts.Observe != nil {
		m.opts.Observe(Event{Kind: kind, Record: r})
	}
	if kind != "created" {
		m.status(r)
	}
}

// status tells OnStatus of r's new status.
func (m *Manager) status(r *Record) {
	if m.opts.OnStatus != nil {
		m.opts.OnStatus(clone(r))
	}
}

// ListOwner returns at most n of owner's tasks that have not expired, in
// the order of their ids, from the first id after after ("" from the
// start), and whether more follow. A task whose replica stopped renewing
// its lease is shown failed. It fails on a store that cannot list by
// owner.
func (m *Manager) ListOwner(ctx context.Context, owner, after string, n int) ([]*Record, bool, error) {
	ol, ok := m.store.(OwnerLister)
	if !ok {
		return nil, false, errors.New("this task store cannot list a caller's tasks")
	}
	recs, more, err := ol.ListOwner(ctx, owner, after, n)
	if err != nil {
		return nil, false, err
	}
	now := m.opts.Now()
	for _, r := range recs {
		expireLost(r, now)
	}
	return recs, more, nil
}
