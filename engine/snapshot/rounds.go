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

// The input_required rounds of a tool's adapter (engine/ask's
// HandlerRounds says how they follow the ask blocks' rounds).

// callAsk is how the adapter of one call may ask its client: within the
// call (client), or by input_required rounds (rounds); neither when the
// client cannot be asked.
type callAsk struct {
	client adapter.ClientAsker
	rounds *ask.HandlerRounds
	// progress and log: the client asked for progress, and may receive
	// log records (adapter.Request's ProgressWanted and LogWanted).
	progress, log bool
	// task receives a task of the backend's (CallRequest.Task); nil: the
	// call does not take one.
	task **adapter.BackendTask
}

// asksByRounds reports whether the tool's adapter may ask this request's
// client by input_required rounds.
func (t *Tool) asksByRounds(in *ask.Answers) bool {
	return t.traits.RelaysClientRequests && in.ByRounds()
}

// inputRequired is the input_required result of an adapter that asked.
func (t *Tool) inputRequired(h *ask.HandlerRounds, ir *adapter.InputRequired) *mcp.CallToolResult {
	state, err := h.Seal(ir)
	if err != nil {
		return t.errorf(err)
	}
	return &mcp.CallToolResult{InputRequests: ir.Requests, RequestState: state}
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
	var rounds *ask.HandlerRounds
	if in.ByRounds() {
		bind := requeststate.BindCaller("prompt", p.Def.Name, anyArgs(req.Args), callerID(req.Caller), nil)
		st, err := in.Open(bind)
		if err != nil {
			return nil, err
		}
		rounds = ask.NewHandlerRounds(0, bind, st, nil, in)
		preq.Rounds = &rounds.Req
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
		state, err := rounds.Seal(out.InputRequired)
		if err != nil {
			return nil, fmt.Errorf("prompt %s: %w", p.Def.Name, err)
		}
		return &mcp.GetPromptResult{InputRequests: out.InputRequired.Requests, RequestState: state}, nil
	}
	return out.Result, nil
}
