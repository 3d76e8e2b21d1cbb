package snapshot

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

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/time/rate"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
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

// serverLimits are the server block's defaults for every tool.
type serverLimits struct {
	defaultTimeout time.Duration
	maxTimeout     time.Duration // 0: no cap

	// hasState is true when the server declares a state block; state is
	// its Store (nil when the block's URL is unknown at load: validating
	// without the secrets).
	hasState bool
	state    *sharedstate.Store
}

func compileServerLimits(sv *config.Server) (serverLimits, hcl.Diagnostics) {
	// No engine timeout by default: every adapter already bounds its calls
	// (shell and SQL 30s, HTTP 30s per attempt), and a default here would
	// cut short the tools configured with a longer adapter timeout.
	out := serverLimits{}
	if sv == nil {
		return out, nil
	}
	var diags hcl.Diagnostics
	if sv.MaxTimeout != nil {
		d, dd := staticDuration(sv.MaxTimeout, nil)
		diags = append(diags, dd...)
		if !dd.HasErrors() && d == 0 {
			diags = append(diags, attrDiag(sv.MaxTimeout, "max_timeout must be more than 0s; leave it out for no cap"))
		}
		out.maxTimeout = d
	}
	if sv.DefaultTimeout != nil {
		d, dd := staticDuration(sv.DefaultTimeout, nil)
		diags = append(diags, dd...)
		out.defaultTimeout = d
		if !dd.HasErrors() && d == 0 {
			diags = append(diags, attrDiag(sv.DefaultTimeout, "default_timeout must be more than 0s; leave it out for none"))
		}
		if !dd.HasErrors() && out.maxTimeout > 0 && d > out.maxTimeout {
			diags = append(diags, attrDiag(sv.DefaultTimeout, fmt.Sprintf("default_timeout %s exceeds max_timeout %s", d, out.maxTimeout)))
		}
	} else {
		// A cap with no default is also the default: a tool that sets no
		// timeout must not run longer than one that does.
		out.defaultTimeout = out.maxTimeout
	}
	return out, diags
}

// rateSpec is one "N/period" rate.
type rateSpec struct {
	n      int
	period time.Duration
	text   string
}

func (r rateSpec) limit() rate.Limit {
	return rate.Limit(float64(r.n) / r.period.Seconds())
}

// limitSpec is a tool's compiled limits. Two tools with equal specs behave
// alike, which is what lets a reload keep a tool's limiter state.
type limitSpec struct {
	timeout      time.Duration // 0: none
	maxConc      int           // 0: unlimited
	queueTimeout time.Duration
	perTool      *rateSpec
	perCaller    *rateSpec
	burst        int // 0: each rate's N

	// rateGlobal: the rates hold across the replicas (in the shared
	// state); concGlobal: so does max_concurrency. failMode is what both
	// do while the shared state does not answer.
	rateGlobal bool
	concGlobal bool
	failMode   sharedstate.FailMode
}

// limits is a tool's limit state: its slots and token buckets. It is
// shared by the snapshots that serve the tool with the same limits (see
// carryLimits), so that a reload neither frees slots still in use nor
// refills buckets.
type limits struct {
	spec    limitSpec
	slots   chan struct{} // nil: unlimited
	tool    *rate.Limiter // nil: no per-tool rate
	callers *callerLimiters

	// state holds the global limits (spec.rateGlobal, spec.concGlobal);
	// nil: every limit is this process's. The local slots and buckets
	// above stay ready for a fail-open fallback.
	state *sharedstate.Store
}

func compileLimits(tc *config.Tool, sl serverLimits) (*limits, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	spec := limitSpec{timeout: sl.defaultTimeout, queueTimeout: DefaultQueueTimeout}
	if tc.Timeout != nil {
		d, dd := staticDuration(tc.Timeout, nil)
		diags = append(diags, dd...)
		switch {
		case dd.HasErrors():
		case d == 0:
			diags = append(diags, attrDiag(tc.Timeout, "timeout must be more than 0s"))
		case sl.maxTimeout > 0 && d > sl.maxTimeout:
			diags = append(diags, attrDiag(tc.Timeout, fmt.Sprintf("timeout %s exceeds the server's max_timeout %s", d, sl.maxTimeout)))
		default:
			spec.timeout = d
		}
	}
	if tc.MaxConcurrency != nil {
		n, d := staticCount(tc.MaxConcurrency, 1, 1<<16)
		diags = append(diags, d...)
		spec.maxConc = n
	}
	if tc.QueueTimeout != nil {
		d, dd := staticDuration(tc.QueueTimeout, nil)
		diags = append(diags, dd...)
		if !dd.HasErrors() && tc.MaxConcurrency == nil {
			diags = append(diags, attrDiag(tc.QueueTimeout, "queue_timeout is how long a call waits for one of max_concurrency slots; set max_concurrency too"))
		}
		spec.queueTimeout = d
	}
	if rl := tc.RateLimit; rl != nil {
		if rl.PerTool == nil && rl.PerCaller == nil {
			rng := rl.DeclRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Empty rate_limit", Detail: "A rate_limit block sets per_tool, per_caller or both, such as per_caller = \"60/m\".", Subject: &rng})
		}
		for _, e := range []struct {
			attr *hcl.Attribute
			dst  **rateSpec
		}{{rl.PerTool, &spec.perTool}, {rl.PerCaller, &spec.perCaller}} {
			if e.attr == nil {
				continue
			}
			r, d := staticRate(e.attr)
			diags = append(diags, d...)
			*e.dst = r
		}
		if rl.Burst != nil {
			n, d := staticCount(rl.Burst, 1, 1<<20)
			diags = append(diags, d...)
			spec.burst = n
		}
		// With a state block, rates are global unless the author keeps
		// them per replica: a limit that changes with the replica count
		// is not the limit the author wrote.
		spec.rateGlobal = sl.hasState
		if rl.Scope != nil {
			global, d := staticScope(rl.Scope, sl.hasState)
			diags = append(diags, d...)
			spec.rateGlobal = global
		}
	}
	if tc.ConcurrencyScope != nil {
		// Per replica by default: max_concurrency is mostly there to
		// protect what a replica holds (its connection pool, its CPU, a
		// backend's per-client quota), and a global count costs two round
		// trips and a renewal per call.
		global, d := staticScope(tc.ConcurrencyScope, sl.hasState)
		diags = append(diags, d...)
		if !d.HasErrors() && tc.MaxConcurrency == nil {
			diags = append(diags, attrDiag(tc.ConcurrencyScope, "concurrency_scope says where max_concurrency is counted; set max_concurrency too"))
		}
		spec.concGlobal = global
	}
	spec.failMode = sl.state.OnFailure()
	if tc.OnStateFailure != nil {
		if !sl.hasState {
			diags = append(diags, attrDiag(tc.OnStateFailure, "on_state_failure is what the tool's shared limits do while the shared state does not answer; the server has no state block"))
		} else {
			m, d := sharedstate.ParseFailMode(tc.OnStateFailure, nil)
			diags = append(diags, d...)
			spec.failMode = m
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	l := &limits{spec: spec}
	if (spec.rateGlobal && (spec.perTool != nil || spec.perCaller != nil)) || (spec.concGlobal && spec.maxConc > 0) {
		l.state = sl.state
	}
	if spec.maxConc > 0 {
		l.slots = make(chan struct{}, spec.maxConc)
	}
	if r := spec.perTool; r != nil {
		l.tool = rate.NewLimiter(r.limit(), spec.burstFor(r))
	}
	if r := spec.perCaller; r != nil {
		l.callers = &callerLimiters{limit: r.limit(), burst: spec.burstFor(r), m: map[string]*rate.Limiter{}}
	}
	return l, nil
}

// burstFor is the bucket size of rate r: burst when set, else r's N, so
// that "60/m" allows 60 calls at once and then one a second.
func (s limitSpec) burstFor(r *rateSpec) int {
	if s.burst > 0 {
		return s.burst
	}
	return r.n
}

// carryLimits takes over prev's limiter state where the limits are the
// same, so that a reload does not reset them: the slots when
// max_concurrency is unchanged, the buckets when the rate_limit is.
func carryLimits(next, prev *limits) {
	if next == nil || prev == nil {
		return
	}
	if next.spec.maxConc == prev.spec.maxConc {
		next.slots = prev.slots
	}
	sameRate := func(a, b *rateSpec) bool {
		return (a == nil) == (b == nil) && (a == nil || (a.n == b.n && a.period == b.period))
	}
	if next.spec.burst == prev.spec.burst && sameRate(next.spec.perTool, prev.spec.perTool) && sameRate(next.spec.perCaller, prev.spec.perCaller) {
		next.tool, next.callers = prev.tool, prev.callers
	}
}

// staticScope decodes "global" or "replica". "global" needs the state
// block.
func staticScope(a *hcl.Attribute, hasState bool) (global bool, diags hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return false, d
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return false, hcl.Diagnostics{attrDiag(a, a.Name+" is \"global\" or \"replica\"")}
	}
	switch v.AsString() {
	case "replica":
		return false, nil
	case "global":
		if !hasState {
			return false, hcl.Diagnostics{attrDiag(a, a.Name+" = \"global\" counts across replicas in the shared state, and the server has no state block: add server { state { redis = env(\"MCPD_REDIS_URL\") } } or use \"replica\"")}
		}
		return true, nil
	}
	return false, hcl.Diagnostics{attrDiag(a, fmt.Sprintf("%s is \"global\" (across replicas, in the shared state) or \"replica\" (each process alone), not %q", a.Name, v.AsString()))}
}

// staticCount decodes a whole number in [lo, hi], with the messages every
// adapter gives (adapter.IntValue).
func staticCount(a *hcl.Attribute, lo, hi int) (int, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return 0, d
	}
	n, d := adapter.IntValue(v, a.Expr.Range(), a.Name, int64(lo), int64(hi))
	return int(n), d
}

// staticRate parses "N/s", "N/m", "N/h" or "N/<duration>" ("100/10s").
func staticRate(a *hcl.Attribute) (*rateSpec, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return nil, d
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return nil, hcl.Diagnostics{attrDiag(a, "a rate is a string such as \"10/s\", \"60/m\", \"1000/h\" or \"100/10s\"")}
	}
	r, err := parseRate(v.AsString())
	if err != nil {
		return nil, hcl.Diagnostics{attrDiag(a, err.Error())}
	}
	return r, nil
}

func parseRate(s string) (*rateSpec, error) {
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
	return &rateSpec{n: n, period: period, text: s}, nil
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
func (l *limits) admit(ctx context.Context, tool string, p *principal.Principal, budget *sharedstate.Budget) (release func(), refusal string) {
	if l == nil {
		return func() {}, ""
	}
	local := true
	if l.state != nil && l.spec.rateGlobal && (l.tool != nil || l.callers != nil) {
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
	if l.state != nil && l.spec.concGlobal {
		release, refusal, ok := l.acquireShared(ctx, tool, budget)
		if ok || refusal != "" {
			return release, refusal
		}
	}
	return l.acquireLocal(ctx, tool)
}

// admitLocal applies the rate limits with this process's buckets.
func (l *limits) admitLocal(tool string, p *principal.Principal) (refusal string) {
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

func (l *limits) rateRefusal(tool string, perTool bool, d time.Duration) string {
	if perTool {
		return fmt.Sprintf("tool %s is rate limited (%s for all callers); retry in %s", tool, l.spec.perTool.text, retryIn(d))
	}
	return fmt.Sprintf("tool %s is rate limited (%s per caller) and you have used your share; retry in %s", tool, l.spec.perCaller.text, retryIn(d))
}

// stateRetry is the retry hint of a call refused because the shared state
// does not answer: about the store's longest reconnect backoff.
const stateRetry = 5 * time.Second

// sharedDown handles a shared limit whose store did not answer: it
// returns the refusal of a fail-closed tool, or "" after counting the
// fallback of a fail-open one.
func (l *limits) sharedDown(tool, what string, err error) string {
	if l.spec.failMode == sharedstate.FailClosed {
		l.state.Refused()
		return fmt.Sprintf("tool %s was not run: its %s is shared by every replica of this server and the shared state (Redis) does not answer; retry in %s", tool, what, retryIn(stateRetry))
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
func (l *limits) admitShared(ctx context.Context, tool string, p *principal.Principal, budget *sharedstate.Budget) (ok bool, refusal string) {
	if !l.state.Healthy() || budget.Spent() {
		return false, l.sharedDown(tool, "rate limit", nil)
	}
	var buckets [2]sharedstate.Bucket
	n := 0
	if r := l.spec.perTool; r != nil {
		buckets[n] = sharedstate.Bucket{Key: l.state.Key("rl", tool, "tool"), Interval: r.period / time.Duration(r.n), Burst: l.spec.burstFor(r)}
		n++
	}
	if r := l.spec.perCaller; r != nil {
		buckets[n] = sharedstate.Bucket{Key: l.state.Key("rl", tool, "caller", callerKey(p)), Interval: r.period / time.Duration(r.n), Burst: l.spec.burstFor(r)}
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
	return true, l.rateRefusal(tool, l.spec.perTool != nil && i == 0, retry)
}

// sharedPoll bounds the wait between two tries for a global slot.
const sharedPoll = 100 * time.Millisecond

// acquireShared takes one of the tool's max_concurrency slots counted
// across replicas. ok is false when the store did not answer and the tool
// fails open: the local slots apply.
func (l *limits) acquireShared(ctx context.Context, tool string, budget *sharedstate.Budget) (release func(), refusal string, ok bool) {
	if !l.state.Healthy() || budget.Spent() {
		refusal = l.sharedDown(tool, "max_concurrency", nil)
		return nil, refusal, false
	}
	sem := sharedstate.Semaphore{Key: l.state.Key("conc", tool), Max: l.spec.maxConc}
	wctx, cancel := context.WithTimeout(ctx, l.spec.queueTimeout)
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
		return nil, fmt.Sprintf("tool %s: cancelled while waiting for one of its %d calls running at once to finish", tool, l.spec.maxConc), true
	case errors.Is(err, sharedstate.ErrBusy):
		return nil, l.busy(tool, " across all replicas"), true
	}
	refusal = l.sharedDown(tool, "max_concurrency", err)
	return nil, refusal, false
}

func (l *limits) busy(tool, where string) string {
	return fmt.Sprintf("tool %s is busy: it already runs its maximum of %d calls at once (max_concurrency%s) and none finished within %s; retry in %s", tool, l.spec.maxConc, where, l.spec.queueTimeout, retryIn(max(l.spec.queueTimeout, time.Second)))
}

// acquireLocal takes one of this process's slots.
func (l *limits) acquireLocal(ctx context.Context, tool string) (release func(), refusal string) {
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, ""
	default:
	}
	wait := time.NewTimer(l.spec.queueTimeout)
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

// errTimedOut is the cause of a call's context when the tool's timeout
// fires, to tell it from the client's cancellation.
var errTimedOut = errors.New("tool timeout")

// withTimeout bounds ctx by the tool's timeout.
func (l *limits) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if l == nil || l.spec.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, l.spec.timeout, errTimedOut)
}

// timedOut returns the tool error text for a call whose context ended by
// the tool's timeout, or "" when it ended otherwise.
func (l *limits) timedOut(ctx context.Context, tool string) string {
	if l == nil || !errors.Is(context.Cause(ctx), errTimedOut) {
		return ""
	}
	return fmt.Sprintf("tool %s timed out after %s; narrow the request (fewer rows, a smaller range, a more specific query) and try again", tool, l.spec.timeout)
}

// retryIn rounds a delay up to a tenth of a second, and to at least that:
// "retry in 0.0s" would be read as "now".
func retryIn(d time.Duration) string {
	if d <= 0 || d == rate.InfDuration {
		d = time.Second
	}
	tenths := math.Ceil(d.Seconds() * 10)
	if tenths < 1 {
		tenths = 1
	}
	return strconv.FormatFloat(tenths/10, 'f', 1, 64) + "s"
}
