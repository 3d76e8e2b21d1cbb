package serve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The composition of input_required rounds and tasks (SEP-2663): a tool
// whose task block says asks = "first" has its ask blocks answered
// through input_required rounds of tools/call (or, in a 2025-11-25
// session, asked while the tools/call waits), as a plain call's are, and
// the task is created on the last round, with every answer; its call then
// asks nothing more of the ask blocks (an upstream's questions still come
// inside the task). A tool with asks = "inside" (the default) creates its
// task at once and asks as input_required on tasks/get.

// askFirst runs the ask loop of t's call before its task is created. It
// returns the requestState the task's first round runs with, or the
// answer to give the tools/call instead (input_required, a refusal, a
// tool error) or its protocol error.
func (s *Server) askFirst(ctx context.Context, t *snapshot.Tool, req *mcp.CallToolRequest, caller *principal.Principal) (string, mcp.Result, error) {
	snap := s.current.Acquire()
	defer snap.Release()
	cr := snapshot.CallRequest{Args: req.Params.Arguments, Caller: caller,
		Answers: s.answers(snap, req.Session, req.ClientCapabilities(), req.Params.InputResponses, req.Params.RequestState, nil)}
	state, res, err := t.AskFirst(ctx, &cr)
	switch {
	case err != nil:
		res, err := callFailed(req.Session, err)
		return "", res, err
	case res == nil:
		return state, nil, nil
	case res.InputRequests != nil:
		return "", newInputRequired(res.InputRequests, res.RequestState), nil
	}
	return "", markCall(req.Session, res), nil
}
