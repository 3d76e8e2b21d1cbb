package snapshot

import (
	"context"
	"errors"
	"fmt"
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
	}
	if diags.HasErrors() {
		return nil, diags
	}
	l := &limits{spec: spec}
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
func (l *limits) admit(ctx context.Context, tool string, p *principal.Principal) (release func(), refusal string) {
	if l == nil {
		return func() {}, ""
	}
	now := time.Now()
	var held *rate.Reservation
	if l.tool != nil {
		r := l.tool.ReserveN(now, 1)
		if d := r.DelayFrom(now); !r.OK() || d > 0 {
			r.CancelAt(now)
			return nil, fmt.Sprintf("tool %s is rate limited (%s for all callers); retry in %s", tool, l.spec.perTool.text, retryIn(d))
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
			return nil, fmt.Sprintf("tool %s is rate limited (%s per caller) and you have used your share; retry in %s", tool, l.spec.perCaller.text, retryIn(d))
		}
	}
	if l.slots == nil {
		return func() {}, ""
	}
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
		return nil, fmt.Sprintf("tool %s is busy: it already runs its maximum of %d calls at once (max_concurrency) and none finished within %s; retry in %s", tool, cap(l.slots), l.spec.queueTimeout, retryIn(max(l.spec.queueTimeout, time.Second)))
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
