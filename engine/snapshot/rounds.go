package snapshot

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/requeststate"
)

// The input_required rounds of a tool's adapter. An adapter that relays
// its backend's questions (adapter.ClientRelayer: an MCP upstream's
// elicitation, sampling, roots) asks a 2026-07-28 client the way the ask
// blocks do: the call ends with input_required, and the client retries
// with its answers and the requestState. Those rounds come after every
// round of the ask blocks, through the same requestState: sealed, bound to
// the tool, its arguments and the caller, expiring, and carrying the ask
// blocks' answers (so they are not asked again) and the adapter's own
// state (adapter.InputRequired.State).

// callAsk is how the adapter of one call may ask its client: within the
// call (client), or by input_required rounds (rounds); neither when the
// client cannot be asked.
type callAsk struct {
	client adapter.ClientAsker
	rounds *handlerRounds
	// progress and log: the client asked for progress, and may receive
	// log records (adapter.Request's ProgressWanted and LogWanted).
	progress, log bool
}

// handlerRounds is what the adapter's rounds of one call need: what the
// retry brought for the adapter, and what the next round's state holds.
type handlerRounds struct {
	req    adapter.Rounds
	sealer *requeststate.Sealer
	bind   string
	// round is the state's Round for the adapter's questions: one past the
	// ask blocks' last, so that a retry with it skips them.
	round  int
	inputs map[string]any // the ask blocks' answers
}

// asksByRounds reports whether the tool's adapter may ask this request's
// client by input_required rounds.
func (t *Tool) asksByRounds(in *ask.Answers) bool {
	r, ok := t.handler.(adapter.ClientRelayer)
	return ok && r.RelaysClientRequests() && in.ByRounds()
}

// newHandlerRounds builds the adapter's rounds of a call whose requestState
// opened as st (round 1 on a first call), after askRounds rounds of ask
// blocks. The client's responses are the adapter's only when the state is
// one the adapter asked with; otherwise they answered the ask blocks,
// which took them.
func newHandlerRounds(askRounds int, bind string, st requeststate.State, inputs map[string]any, in *ask.Answers) *handlerRounds {
	h := &handlerRounds{req: adapter.Rounds{Caps: in.Caps}, sealer: in.Sealer, bind: bind, round: askRounds + 1, inputs: inputs}
	switch {
	case in.State != "" && st.Round > askRounds:
		h.req.Responses, h.req.State = in.Responses, st.Handler
	case in.State == "" && askRounds == 0:
		// Answers sent with a first call (no requestState) are the
		// adapter's to pass on or ignore, as its backend would if called
		// directly: the tool has no questions of its own to take them.
		h.req.Responses = in.Responses
	}
	return h
}

// inputRequired is the input_required result of an adapter that asked.
func (t *Tool) inputRequired(h *handlerRounds, ir *adapter.InputRequired) *mcp.CallToolResult {
	state, err := h.seal(ir)
	if err != nil {
		return t.errorf(err)
	}
	return &mcp.CallToolResult{InputRequests: ir.Requests, RequestState: state}
}

// seal is the requestState of the adapter's questions ir (h nil: the
// engine gave the adapter no Rounds, so it must not ask so).
func (h *handlerRounds) seal(ir *adapter.InputRequired) (string, error) {
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

// A contributed prompt's backend asks the client as a tool's adapter does
// (an MCP upstream's prompt that answers input_required, or asks while its
// get waits): within the get for a client that has an Answerer, otherwise
// by the rounds above, with the requestState bound to the prompt, its
// arguments and the caller. A contributed prompt has no ask blocks: every
// round is the backend's.

// getRemote gets a contributed prompt.
func (p *Prompt) getRemote(ctx context.Context, req *GetRequest) (*mcp.GetPromptResult, error) {
	in := &req.Answers
	preq := &adapter.PromptRequest{Prompt: p.Def.Name, Args: req.Args, Client: in.ClientAsker()}
	var rounds *handlerRounds
	if in.ByRounds() {
		bind := requeststate.BindCaller("prompt", p.Def.Name, anyArgs(req.Args), callerID(req.Caller), nil)
		st, err := in.Open(bind)
		if err != nil {
			return nil, err
		}
		rounds = newHandlerRounds(0, bind, st, nil, in)
		preq.Rounds = &rounds.req
	}
	out, err := p.remote(ctx, preq)
	var me *adapter.MissingCapabilityError
	switch {
	case errors.As(err, &me):
		// As for the prompt's own ask blocks: the protocol's error names
		// what the client must declare.
		return nil, &ask.MissingCapabilityError{What: "prompt " + p.Def.Name, Asks: me.Asks, Capabilities: me.Capabilities, Message: me.Message}
	case err != nil:
		return nil, err
	case out == nil || out.InputRequired == nil && out.Result == nil:
		return nil, fmt.Errorf("prompt %s: its backend returned nothing", p.Def.Name)
	case out.InputRequired != nil:
		state, err := rounds.seal(out.InputRequired)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", p.Def.Name, err)
		}
		return &mcp.GetPromptResult{InputRequests: out.InputRequired.Requests, RequestState: state}, nil
	}
	return out.Result, nil
}
