package ask

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpd/mcpd/engine/limits"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/sharedstate"
)

// One run per requestState (engine/requeststate/used.go says what a
// confirmation authorises, and why). A 2026-07-28 retry that brings a
// requestState and runs a tool that may change something claims the
// state first: in this process's Used set, and, when the server has a
// state block, in Redis (SET NX with the state's remaining life), so that
// a replay to another replica is refused too. A state already claimed is
// refused with requeststate.ErrUsed, a protocol error like the other
// refused states. The claim is made once the call is admitted (a call
// its rate limit refused has not used its confirmation) and before the
// adapter runs.
//
// While Redis does not answer, the tool's fail mode (on_state_failure,
// the state block's on_failure by default) decides: open runs the tool on
// this replica's claim alone (a replay to another replica is not caught
// for that while), closed refuses the call.

// errStateDown is a state that could not be claimed across replicas
// because the shared state does not answer, for a tool that fails closed.
var errStateDown = errors.New("the shared state (Redis), which remembers the requestStates used on every replica, does not answer; retry in " + limits.RetryIn(limits.StateRetry))

// Replay is what a tool that a requestState may run once only needs to
// claim one: the snapshot's Used set and, with a state block, the shared
// state and the tool's limits, whose fail mode says what to do while it
// does not answer.
type Replay struct {
	Tool   string
	Used   *requeststate.Used
	State  *sharedstate.Store // nil: no state block
	Limits *limits.Limits
}

// Claim claims the requestState token for this run of the tool; an
// error means it must not run.
func (r *Replay) Claim(ctx context.Context, token string, budget *sharedstate.Budget) error {
	id, expires := requeststate.ID(token), requeststate.Expiry(token)
	first, err := r.Used.Claim(id, expires)
	if err != nil {
		return err
	}
	if !first {
		r.refused()
		return requeststate.ErrUsed
	}
	st := r.State
	if st == nil {
		return nil
	}
	closed := r.Limits.FailMode() == sharedstate.FailClosed
	if st.Healthy() && !budget.Spent() {
		octx, done := budget.Op(ctx)
		first, err = st.Claim(octx, st.Key("rs", id), time.Until(expires)+time.Second)
		done()
		if err == nil && !first {
			r.refused()
			return requeststate.ErrUsed
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			r.Used.Forget(id)
			return ctx.Err()
		}
	}
	if closed {
		// The run is refused: the state has not been used.
		r.Used.Forget(id)
		st.Refused()
		return errStateDown
	}
	st.FellBack()
	return nil
}

// refused counts a replay refused (mcpd_requeststate_replays_refused_total)
// and logs it, rate-bounded: the client sees only a protocol error, and
// an operator should learn that states are being sent again (a client
// retrying after a lost response, or someone replaying a captured one).
func (r *Replay) refused() {
	r.Used.Refused(func(total uint64) {
		slog.Warn("requestState refused: it has already run the tool once (one run per confirmation)",
			"tool", r.Tool, "refused_total", total)
	})
}

// Refusal is the answer of a call whose requestState could not be
// claimed: a used state is a protocol error (a *StateError, returned as
// protoErr), as the other refused states are; the others are tool errors
// saying when to retry. msg is the tool error's text either way.
func Refusal(tool string, err error) (msg string, protoErr error) {
	if errors.Is(err, requeststate.ErrUsed) {
		return err.Error(), &StateError{Err: err}
	}
	return fmt.Sprintf("tool %s was not run: %v", tool, err), nil
}
