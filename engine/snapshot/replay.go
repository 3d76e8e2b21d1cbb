package snapshot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/config"
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

// rerunnable reports whether a second run of tool tc with the same
// arguments changes nothing, so that a requestState may run it again: it
// has no adapter (its result block is all it does), it only reads (see
// notReadOnly), or its annotations declare it idempotent.
// Only the config's own annotations count: a gateway's tools, whose
// annotations an upstream declares, are never rerunnable (they have no
// tc).
func rerunnable(tc *config.Tool, h adapter.Handler) bool {
	if h == nil || notReadOnly(tc, h) == "" {
		return true
	}
	a := tc.Annotations
	return a != nil && a.Idempotent != nil && *a.Idempotent
}

// errStateDown is a state that could not be claimed across replicas
// because the shared state does not answer, for a tool that fails closed.
var errStateDown = errors.New("the shared state (Redis), which remembers the requestStates used on every replica, does not answer; retry in " + limits.RetryIn(limits.StateRetry))

// claimState claims the requestState token for this run of the tool; an
// error means it must not run.
func (t *Tool) claimState(ctx context.Context, token string, budget *sharedstate.Budget) error {
	id, expires := requeststate.ID(token), requeststate.Expiry(token)
	first, err := t.used.Claim(id, expires)
	if err != nil {
		return err
	}
	if !first {
		t.replayRefused()
		return requeststate.ErrUsed
	}
	st := t.state
	if st == nil {
		return nil
	}
	closed := t.limits.FailMode() == sharedstate.FailClosed
	if st.Healthy() && !budget.Spent() {
		octx, done := budget.Op(ctx)
		first, err = st.Claim(octx, st.Key("rs", id), time.Until(expires)+time.Second)
		done()
		if err == nil && !first {
			t.replayRefused()
			return requeststate.ErrUsed
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			t.used.Forget(id)
			return ctx.Err()
		}
	}
	if closed {
		// The run is refused: the state has not been used.
		t.used.Forget(id)
		st.Refused()
		return errStateDown
	}
	st.FellBack()
	return nil
}

// replayRefused counts a replay refused (mcpd_requeststate_replays_refused_total)
// and logs it, rate-bounded: the client sees only a protocol error, and
// an operator should learn that states are being sent again (a client
// retrying after a lost response, or someone replaying a captured one).
func (t *Tool) replayRefused() {
	t.used.Refused(func(total uint64) {
		slog.Warn("requestState refused: it has already run the tool once (one run per confirmation)",
			"tool", t.Def.Name, "refused_total", total)
	})
}

// ReplaysRefused is the number of requestStates refused because they had
// already run their tool, since the first config was served (the count
// is carried over reloads, as the Used set is).
func (s *Snapshot) ReplaysRefused() uint64 {
	if s == nil || s.used == nil {
		return 0
	}
	return s.used.RefusedTotal()
}

// stateRefused is the answer of a call whose requestState could not be
// claimed: a used state is a protocol error, as the other refused states
// are; the others are tool errors saying when to retry.
func (t *Tool) stateRefused(err error, protoErr *error) *mcp.CallToolResult {
	if errors.Is(err, requeststate.ErrUsed) {
		*protoErr = &ask.StateError{Err: err}
		return toolError(err.Error())
	}
	return toolError(fmt.Sprintf("tool %s was not run: %v", t.Def.Name, err))
}

// initReplay gives every tool that a requestState may run once only the
// snapshot's Used set (prev's, so that a reload forgets nothing) and,
// with a state block, the shared state.
func (s *Snapshot) initReplay(prev *Snapshot) {
	if prev != nil && prev.used != nil {
		s.used = prev.used
	} else {
		s.used = requeststate.NewUsed(requeststate.DefaultMaxUsed)
	}
	for _, t := range s.Tools {
		if t.rerunnable || !t.Asks() {
			continue
		}
		t.used = s.used
		if s.state != nil {
			t.state = s.state
		}
	}
}
