package sharedstate

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A Budget is the time one call may spend on the shared state, all its
// operations together: reading the cache, taking rate-limit tokens,
// leasing and releasing a concurrency slot, storing the result, checking a
// confirmation. The state block's timeout bounds them as one, so that a
// Redis that stops answering holds a call for at most that long, not that
// long per operation (a call that found the store up, read the cache and
// then waited on its rate limit took twice the timeout before).
//
// A nil *Budget is valid and bounds nothing (no shared state). A Budget
// is for one call; its operations may run one after another or at once.
type Budget struct {
	mu   sync.Mutex
	left time.Duration
}

// ErrBudgetSpent is the cause of an operation's context whose call has
// spent its time on the shared state (see Budget).
var ErrBudgetSpent = errors.New("the call's time for the shared state (state { timeout }) is spent")

// Budget returns a new call's budget: the state block's timeout. Nil for
// a nil Store.
func (s *Store) Budget() *Budget {
	if s == nil {
		return nil
	}
	return &Budget{left: s.settings.Options.ReadTimeout}
}

// Spent reports whether nothing is left: the call's users of the shared
// state then act as if it were down (their fail modes), without trying.
func (b *Budget) Spent() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left <= 0
}

// Op returns the context of one operation, ending with ctx or when the
// budget is spent (with ErrBudgetSpent as its cause), and the function
// that ends the operation and charges its time to the budget.
func (b *Budget) Op(ctx context.Context) (context.Context, func()) {
	if b == nil {
		return ctx, func() {}
	}
	b.mu.Lock()
	left := b.left
	b.mu.Unlock()
	start := time.Now()
	octx, cancel := context.WithDeadlineCause(ctx, start.Add(left), ErrBudgetSpent)
	return octx, func() {
		cancel()
		spent := time.Since(start)
		b.mu.Lock()
		b.left -= spent
		b.mu.Unlock()
	}
}

// budgetSpent reports whether ctx ended because its call's budget was
// spent.
func budgetSpent(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrBudgetSpent)
}
