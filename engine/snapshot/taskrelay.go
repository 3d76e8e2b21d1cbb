package snapshot

import (
	"context"
	"errors"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/redact"
)

// A backend's task as a call's answer (adapter.BackendTask): the call
// that started it ends at once, with the task in CallRequest.Task, and
// the engine follows the task as an mcpd task, whose result FinishTask
// makes as the call would have.

// handOver puts the backend's task in the call's slot, or, when the call
// takes none, cancels it and fails the call.
func (t *Tool) handOver(slot **adapter.BackendTask, bt *adapter.BackendTask) *mcp.CallToolResult {
	if slot == nil {
		if bt.Cancel != nil {
			bt.Cancel()
		}
		return t.errorf(errors.New("the backend answered with a task, which this call cannot take"))
	}
	*slot = bt
	return &mcp.CallToolResult{Content: []mcp.Content{}}
}

// FinishTask is the result of the call req whose backend's task ended
// with out or err (BackendTask.Follow's): shaped, checked and redacted as
// Call's would be.
func (t *Tool) FinishTask(ctx context.Context, req *CallRequest, out *adapter.Output, err error) (res *mcp.CallToolResult) {
	defer func() { res = t.redact.Result(redact.Args(t.sensitive, req.Args, res)) }()
	defer t.recoverCall(&res)
	if err != nil {
		return t.failed(ctx, err, true)
	}
	if out == nil {
		out = &adapter.Output{}
	}
	args, verr := t.validator.Validate(req.Args)
	if verr != nil {
		return t.invalidArgs(verr)
	}
	var ectx *hcl.EvalContext
	if t.needsEval {
		ectx = t.scope.CallContextInputs(args, nil)
	}
	res, serr := t.shape(args, nil, out, ectx)
	if serr != nil {
		return t.errorf(serr)
	}
	return res
}
