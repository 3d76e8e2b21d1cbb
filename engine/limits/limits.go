// Package limits is the admission stage of a call (docs/security.md,
// "Limits"): a tool's rate limits and max_concurrency slots, in this
// process or shared by the replicas in the shared state, and its timeout.
// engine/snapshot compiles a tool's limit attributes into a Spec and a
// Limits with New, and calls Admit, WithTimeout and TimedOut.
package limits

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/sharedstate"
)

// Defaults of the limits (docs/security.md, "Limits").
const (
	// DefaultQueueTimeout is how long a call waits for one of a tool's
	// max_concurrency slots.
	DefaultQueueTimeout = 5 * time.Second
	// maxCallers bounds the per-caller limiters kept per tool.
	maxCallers = 4096
	// localCaller is the rate-limit key of the local user (stdio, or HTTP
	// with authentication off): one caller.
	localCaller = "local"
)

// Rate is one "N/period" rate.
type Rate struct {
	N      int
	Period time.Duration
	Text   string // as written, for the refusals
}

func (r Rate) limit() rate.Limit {
	return rate.Limit(float64(r.N) / r.Period.Seconds())
}

// Spec is a tool's compiled limits. Two tools with equal specs behave
// alike, which is what lets a reload keep a tool's limiter state.
type Spec struct {
	Timeout      time.Duration // 0: none
	MaxConc      int           // 0: unlimited
	QueueTimeout time.Duration
	PerTool      *Rate
	PerCaller    *Rate
	Burst        int // 0: each rate's N

	// RateGlobal: the rates hold across the replicas (in the shared
	// state); ConcGlobal: so does max_concurrency. FailMode is what both
	// do while the shared state does not answer.
	RateGlobal bool
	ConcGlobal bool
	FailMode   sharedstate.FailMode
}

// Limits is a tool's limit state: its slots and token buckets. It is
// shared by the snapshots that serve the tool with the same limits (see
// Carry), so that a reload neither frees slots still in use nor
// refills buckets.
type Limits struct {
	spec    Spec
	slots   chan struct{} // nil: unlimited
	tool    *rate.Limiter // nil: no per-tool rate
	callers *callerLimiters

	// state holds the global limits (spec.RateGlobal, spec.ConcGlobal);
	// nil: every limit is this process's. The local slots and buckets
	// above stay ready for a fail-open fallback.
	state *sharedstate.Store
}

// New makes a tool's limit state from its spec. state is the server's
// shared state (nil without one); the limits use it only when spec makes
// a limit global.
func New(spec Spec, state *sharedstate.Store) *Limits {
	l := &Limits{spec: spec}
	if (spec.RateGlobal && (spec.PerTool != nil || spec.PerCaller != nil)) || (spec.ConcGlobal && spec.MaxConc > 0) {
		l.state = state
	}
	if spec.MaxConc > 0 {
		l.slots = make(chan struct{}, spec.MaxConc)
	}
	if r := spec.PerTool; r != nil {
		l.tool = rate.NewLimiter(r.limit(), spec.burstFor(r))
	}
	if r := spec.PerCaller; r != nil {
		l.callers = &callerLimiters{limit: r.limit(), burst: spec.burstFor(r), m: map[string]*rate.Limiter{}}
	}
	return l
}

// OnlyTimeout is limits that only bound a call's time (a resource read by
// the server's default_timeout).
func OnlyTimeout(d time.Duration) *Limits {
	return &Limits{spec: Spec{Timeout: d}}
}

// State is the shared state the limits use, nil when every limit is this
// process's.
func (l *Limits) State() *sharedstate.Store { return l.state }

// FailMode is what the tool's shared limits do while the shared state
// does not answer.
func (l *Limits) FailMode() sharedstate.FailMode { return l.spec.FailMode }

// Timeout is the tool's timeout, 0 for none.
func (l *Limits) Timeout() time.Duration { return l.spec.Timeout }

// burstFor is the bucket size of rate r: burst when set, else r's N, so
// that "60/m" allows 60 calls at once and then one a second.
func (s Spec) burstFor(r *Rate) int {
	if s.Burst > 0 {
		return s.Burst
	}
	return r.N
}

// Carry takes over prev's limiter state where the limits are the
// same, so that a reload does not reset them: the slots when
// max_concurrency is unchanged, the buckets when the rate_limit is.
func Carry(next, prev *Limits) {
	if next == nil || prev == nil {
		return
	}
	if next.spec.MaxConc == prev.spec.MaxConc {
		next.slots = prev.slots
	}
	sameRate := func(a, b *Rate) bool {
		return (a == nil) == (b == nil) && (a == nil || (a.N == b.N && a.Period == b.Period))
	}
	if next.spec.Burst == prev.spec.Burst && sameRate(next.spec.PerTool, prev.spec.PerTool) && sameRate(next.spec.PerCaller, prev.spec.PerCaller) {
		next.tool, next.callers = prev.tool, prev.callers
	}
}

func ParseRate(s string) (*Rate, error) {
	bad := fmt.Errorf("%q is not a rate such as \"10/s\", \"60/m\", \"1000/h\" or \"100/10s\"", s)
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return nil, bad
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 1 {
		return nil, bad
	}
	var period time.Duration
	switch per = strings.TrimSpace(per); per {
	case "s":
		period = time.Second
	case "m":
		period = time.Minute
	case "h":
		period = time.Hour
	default:
		period, err = time.ParseDuration(per)
		if err != nil || period <= 0 {
			return nil, bad
		}
	}
	return &Rate{N: n, Period: period, Text: s}, nil
}

// callerLimiters are one tool's per-caller buckets, keyed by the caller.
type callerLimiters struct {
	limit rate.Limit
	burst int

	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// get returns the bucket of caller key, making room when the map is full:
// first by dropping the buckets that have refilled (a full bucket is the
// same as a new one, so nothing is lost), then, if every caller is active,
// by dropping an arbitrary one, which starts afresh on its next call.
func (c *callerLimiters) get(key string, now time.Time) *rate.Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.m[key]; ok {
		return l
	}
	if len(c.m) >= maxCallers {
		for k, l := range c.m {
			if l.TokensAt(now) >= float64(c.burst) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < maxCallers {
				break
			}
			delete(c.m, k)
		}
	}
	l := rate.NewLimiter(c.limit, c.burst)
	c.m[key] = l
	return l
}

// callerKey names p for the per-caller buckets.
func callerKey(p *principal.Principal) string {
	if p == nil {
		return localCaller
	}
	return p.Method + ":" + p.Name
}

// admit applies the rate limits and takes a concurrency slot. It returns
// the function that frees the slot, or the tool error text to answer
// with: when to retry, in words a model can act on.
//
// Global limits go to the shared state; while it does not answer, a
// fail-open tool falls back to this replica's own buckets and slots (the
// limits hold per replica for that while), and a fail-closed one is
// refused. Their operations on the shared state are charged to budget,
// the call's (see sharedstate.Budget).
func (l *Limits) Admit(ctx context.Context, tool string, p *principal.Principal, budget *sharedstate.Budget) (release func(), refusal string) {
	if l == nil {
		return func() {}, ""
	}
	local := true
	if l.state != nil && l.spec.RateGlobal && (l.tool != nil || l.callers != nil) {
		var ok bool
		if ok, refusal = l.admitShared(ctx, tool, p, budget); refusal != "" {
			return nil, refusal
		}
		local = !ok
	}
	if local {
		if refusal = l.admitLocal(tool, p); refusal != "" {
			return nil, refusal
		}
	}
	if l.slots == nil {
		return func() {}, ""
	}
	if l.state != nil && l.spec.ConcGlobal {
		release, refusal, ok := l.acquireShared(ctx, tool, budget)
		if ok || refusal != "" {
			return release, refusal
		}
	}
	return l.acquireLocal(ctx, tool)
}

// admitLocal applies the rate limits with this process's buckets.
func (l *Limits) admitLocal(tool string, p *principal.Principal) (refusal string) {
	now := time.Now()
	var held *rate.Reservation
	if l.tool != nil {
		r := l.tool.ReserveN(now, 1)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			return l.rateRefusal(tool, true, d)
		}
		held = r
	}
	if l.callers != nil {
		r := l.callers.get(callerKey(p), now).ReserveN(now, 1)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			if held != nil {
				// This call will not run: give the tool's token back.
				held.CancelAt(now)
			}
			return l.rateRefusal(tool, false, d)
		}
	}
	return ""
}

func (l *Limits) rateRefusal(tool string, perTool bool, d time.Duration) string {
	if perTool {
		return fmt.Sprintf("tool %s is rate limited (%s for all callers); retry in %s", tool, l.spec.PerTool.Text, RetryIn(d))
	}
	return fmt.Sprintf("tool %s is rate limited (%s per caller) and you have used your share; retry in %s", tool, l.spec.PerCaller.Text, RetryIn(d))
}

// StateRetry is the retry hint of a call refused because the shared state
// does not answer: about the store's longest reconnect backoff.
const StateRetry = 5 * time.Second

// sharedDown handles a shared limit whose store did not answer: it
// returns the refusal of a fail-closed tool, or "" after counting the
// fallback of a fail-open one.
func (l *Limits) sharedDown(tool, what string, err error) string {
	if l.spec.FailMode == sharedstate.FailClosed {
		l.state.Refused()
		return fmt.Sprintf("tool %s was not run: its %s is shared by every replica of this server and the shared state (Redis) does not answer; retry in %s", tool, what, RetryIn(StateRetry))
	}
	l.state.FellBack()
	if err != nil && !sharedstate.IsUnavailable(err) {
		// Redis answered with an error: not an outage, a bug or a
		// misconfiguration (a read-only replica, a key of the wrong type)
		// that the logs must show.
		slog.Error("shared limit failed; falling back to this replica's limits", "tool", tool, "limit", what, "err", err)
	} else {
		slog.Debug("shared state down; this replica's limits apply", "tool", tool, "limit", what)
	}
	return ""
}

// admitShared applies the rate limits in the shared state, in one round
// trip. ok is false when the store did not answer and the tool fails open:
// the local buckets apply.
func (l *Limits) admitShared(ctx context.Context, tool string, p *principal.Principal, budget *sharedstate.Budget) (ok bool, refusal string) {
	if !l.state.Healthy() || budget.Spent() {
		return false, l.sharedDown(tool, "rate limit", nil)
	}
	var buckets [2]sharedstate.Bucket
	n := 0
	if r := l.spec.PerTool; r != nil {
		buckets[n] = sharedstate.Bucket{Key: l.state.Key("rl", tool, "tool"), Interval: r.Period / time.Duration(r.N), Burst: l.spec.burstFor(r)}
		n++
	}
	if r := l.spec.PerCaller; r != nil {
		buckets[n] = sharedstate.Bucket{Key: l.state.Key("rl", tool, "caller", callerKey(p)), Interval: r.Period / time.Duration(r.N), Burst: l.spec.burstFor(r)}
		n++
	}
	octx, done := budget.Op(ctx)
	i, retry, err := l.state.Take(octx, buckets[:n]...)
	done()
	if err != nil {
		if ctx.Err() != nil {
			return false, fmt.Sprintf("tool %s: cancelled while checking its rate limit", tool)
		}
		return false, l.sharedDown(tool, "rate limit", err)
	}
	if i < 0 {
		return true, ""
	}
	return true, l.rateRefusal(tool, l.spec.PerTool != nil && i == 0, retry)
}

// sharedPoll bounds the wait between two tries for a global slot.
const sharedPoll = 100 * time.Millisecond

// acquireShared takes one of the tool's max_concurrency slots counted
// across replicas. ok is false when the store did not answer and the tool
// fails open: the local slots apply.
func (l *Limits) acquireShared(ctx context.Context, tool string, budget *sharedstate.Budget) (release func(), refusal string, ok bool) {
	if !l.state.Healthy() || budget.Spent() {
		refusal = l.sharedDown(tool, "max_concurrency", nil)
		return nil, refusal, false
	}
	sem := sharedstate.Semaphore{Key: l.state.Key("conc", tool), Max: l.spec.MaxConc}
	wctx, cancel := context.WithTimeout(ctx, l.spec.QueueTimeout)
	defer cancel()
	lease, err := l.state.Acquire(wctx, sem, sharedPoll, budget)
	switch {
	case err == nil:
		return func() {
			// Released when the call ends, however it ended; within
			// what is left of the call's budget.
			rctx, done := budget.Op(context.WithoutCancel(ctx))
			lease.ReleaseContext(rctx)
			done()
		}, "", true
	case ctx.Err() != nil:
		return nil, fmt.Sprintf("tool %s: cancelled while waiting for one of its %d calls running at once to finish", tool, l.spec.MaxConc), true
	case errors.Is(err, sharedstate.ErrBusy):
		return nil, l.busy(tool, " across all replicas"), true
	}
	refusal = l.sharedDown(tool, "max_concurrency", err)
	return nil, refusal, false
}

func (l *Limits) busy(tool, where string) string {
	return fmt.Sprintf("tool %s is busy: it already runs its maximum of %d calls at once (max_concurrency%s) and none finished within %s; retry in %s", tool, l.spec.MaxConc, where, l.spec.QueueTimeout, RetryIn(max(l.spec.QueueTimeout, time.Second)))
}

// acquireLocal takes one of this process's slots.
func (l *Limits) acquireLocal(ctx context.Context, tool string) (release func(), refusal string) {
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, ""
	default:
	}
	wait := time.NewTimer(l.spec.QueueTimeout)
	defer wait.Stop()
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, ""
	case <-ctx.Done():
		return nil, fmt.Sprintf("tool %s: cancelled while waiting for one of its %d calls running at once to finish", tool, cap(l.slots))
	case <-wait.C:
		return nil, l.busy(tool, "")
	}
}

// ErrTimedOut is the cause of a call's context when the tool's timeout
// fires, to tell it from the client's cancellation.
var ErrTimedOut = errors.New("tool timeout")

// withTimeout bounds ctx by the tool's timeout.
func (l *Limits) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if l == nil || l.spec.Timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, l.spec.Timeout, ErrTimedOut)
}

// timedOut returns the tool error text for a call whose context ended by
// the tool's timeout, or "" when it ended otherwise.
func (l *Limits) TimedOut(ctx context.Context, tool string) string {
	if l == nil || !errors.Is(context.Cause(ctx), ErrTimedOut) {
		return ""
	}
	return fmt.Sprintf("tool %s timed out after %s; narrow the request (fewer rows, a smaller range, a more specific query) and try again", tool, l.spec.Timeout)
}

// RetryIn rounds a delay up to a tenth of a second, and to at least that:
// "retry in 0.0s" would be read as "now".
func RetryIn(d time.Duration) string {
	if d <= 0 || d == rate.InfDuration {
		d = time.Second
	}
	tenths := math.Ceil(d.Seconds() * 10)
	if tenths < 1 {
		tenths = 1
	}
	return strconv.FormatFloat(tenths/10, 'f', 1, 64) + "s"
}
