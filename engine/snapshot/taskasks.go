package snapshot

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/requeststate"
)

// AskFirst answers the ask blocks of a call of a tool whose task is
// created only once they are answered (the task block's asks = "first";
// SEP-2663's composition of input_required rounds and tasks): the same
// ask loop as Call's, run before the task exists, so that the client's
// tools/call is answered input_required (round after round) and, on the
// last round, with the task.
//
// It returns the requestState the task's call runs with: sealed, bound to
// the call as Call binds it, past the last round, with every input (the
// task's Call then asks nothing: Asker.ResolveFrom). When the call must be
// answered otherwise, state is "" and res is the answer (input_required
// with the open questions, the refusal of a declined question, a tool
// error), or err is a protocol error (a requestState refused, a question
// the client cannot answer). A tool without ask blocks returns "", nil,
// nil: its task runs with the request's answers as they are.
//
// The client's requestState is spent here (ask.Replay), as Call spends it
// once admitted: a task is created with it once only.
func (t *Tool) AskFirst(ctx context.Context, req *CallRequest) (state string, res *mcp.CallToolResult, err error) {
	if t.asks == nil {
		return "", nil, nil
	}
	var protoErr error
	defer func() {
		if res != nil {
			res = t.redact.Result(redact.Args(t.sensitive, req.Args, res))
		}
		if protoErr != nil {
			state, res, err = "", nil, protoErr
		}
	}()
	if msg := t.refuseCallerArgs(req.Args); msg != "" {
		return "", toolError(msg), nil
	}
	args, verr := t.validator.Validate(req.Args)
	if verr != nil {
		return "", t.invalidArgs(verr), nil
	}
	var bound map[string]any
	if len(t.callerParams) > 0 {
		var msg string
		if bound, msg = t.bindCaller(req.Caller); msg != "" {
			return "", toolError(msg), nil
		}
	}
	in := &req.Answers
	bind := requeststate.BindCaller("tool", t.Def.Name, args, callerID(req.Caller), bound)
	st, aerr := in.Open(bind)
	out := &ask.Outcome{}
	if aerr == nil {
		out, aerr = t.asks.ResolveFrom(ctx, args, bind, st, in)
	}
	if done := t.askFailed(aerr, out, &protoErr); done != nil {
		return "", done, nil
	}
	if t.replay != nil && in.State != "" {
		if cerr := t.replay.Claim(ctx, in.State, t.state.Budget()); cerr != nil {
			return "", stateRefused(t.Def.Name, cerr, &protoErr), nil
		}
	}
	if in.Sealer == nil {
		return "", t.errorf(errors.New("no requestState key to carry the answers into the task")), nil
	}
	sealed, serr := in.Sealer.Seal(requeststate.State{Round: t.asks.Rounds + 1, Answers: out.Inputs, Bind: bind})
	if serr != nil {
		return "", t.errorf(serr), nil
	}
	return sealed, nil, nil
}
