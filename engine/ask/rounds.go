package ask

import (
	"errors"
	"fmt"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/requeststate"
)

// The input_required rounds of a tool's adapter. An adapter that relays
// its backend's questions (Traits.RelaysClientRequests: an MCP upstream's
// elicitation, sampling, roots) asks a 2026-07-28 client the way the ask
// blocks do: the call ends with input_required, and the client retries
// with its answers and the requestState. Those rounds come after every
// round of the ask blocks, through the same requestState: sealed, bound to
// the tool, its arguments and the caller, expiring, and carrying the ask
// blocks' answers (so they are not asked again) and the adapter's own
// state (adapter.InputRequired.State).

// HandlerRounds is what the adapter's rounds of one call need: what the
// retry brought for the adapter (Req), and what the next round's state
// holds.
type HandlerRounds struct {
	Req    adapter.Rounds
	sealer *requeststate.Sealer
	bind   string
	// round is the state's Round for the adapter's questions: one past the
	// ask blocks' last, so that a retry with it skips them.
	round  int
	inputs map[string]any // the ask blocks' answers
}

// NewHandlerRounds builds the adapter's rounds of a call whose requestState
// opened as st (round 1 on a first call), after askRounds rounds of ask
// blocks. The client's responses are the adapter's only when the state is
// one the adapter asked with; otherwise they answered the ask blocks,
// which took them.
func NewHandlerRounds(askRounds int, bind string, st requeststate.State, inputs map[string]any, in *Answers) *HandlerRounds {
	h := &HandlerRounds{Req: adapter.Rounds{Caps: in.Caps}, sealer: in.Sealer, bind: bind, round: askRounds + 1, inputs: inputs}
	switch {
	case in.State != "" && st.Round > askRounds:
		h.Req.Responses, h.Req.State = in.Responses, st.Handler
	case in.State == "" && askRounds == 0:
		// Answers sent with a first call (no requestState) are the
		// adapter's to pass on or ignore, as its backend would if called
		// directly: the tool has no questions of its own to take them.
		h.Req.Responses = in.Responses
	}
	return h
}

// Seal is the requestState of the adapter's questions ir (h nil: the
// engine gave the adapter no Rounds, so it must not ask so).
func (h *HandlerRounds) Seal(ir *adapter.InputRequired) (string, error) {
	if h == nil {
		return "", errors.New("the adapter asked for input the client cannot be asked for in this call")
	}
	if len(ir.Requests) == 0 {
		return "", errors.New("the adapter asked for input with no question")
	}
	state, err := h.sealer.Seal(requeststate.State{Round: h.round, Answers: h.inputs, Handler: ir.State, Bind: h.bind})
	if err != nil {
		return "", fmt.Errorf("sealing the requestState: %w", err)
	}
	return state, nil
}
