package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
)

// Tasks of a backend (adapter.BackendTask): a tool whose backend runs
// calls as tasks of its own (an MCP upstream that declared the tasks
// extension) is relayed task for task. Inside an mcpd task, the call's
// context carries a taskCall, through which the adapter reports its
// backend task's status and relays its questions; a plain call of a
// client that uses tasks lets the backend decide (Request.Tasks), and a
// backend's task becomes an mcpd task here (followTask), bound to the
// caller as any task: the backend's task id never reaches the client.

// taskCall is the adapter's view of the mcpd task a call runs as.
type taskCall struct{ ctx context.Context }

func (c taskCall) Status(msg string) { tasks.Report(c.ctx, msg, false) }

func (c taskCall) Ask(ctx context.Context, q mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	b, err := json.Marshal(q)
	var inputs map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(b, &inputs)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding the task's questions: %w", err)
	}
	answers, err := tasks.Ask(ctx, inputs)
	if err != nil {
		return nil, err
	}
	var out mcp.InputResponseMap
	if b, err = json.Marshal(answers); err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return nil, fmt.Errorf("invalid inputResponses: %w", err)
	}
	return out, nil
}

// withTaskCall is ctx, the context of an mcpd task's call, carrying the
// task for the adapter.
func withTaskCall(ctx context.Context) context.Context {
	return adapter.WithTaskCall(ctx, taskCall{ctx})
}

// followTask answers a plain tools/call of tool t whose backend answered
// with a task of its own: an mcpd task that follows it (tool t's task
// block's ttl, bound and poll interval, or the defaults).
func (s *Server) followTask(ctx context.Context, t *snapshot.Tool, req *mcp.CallToolRequest, caller *principal.Principal, bt *adapter.BackendTask) (mcp.Result, error) {
	p := t.Task()
	if p.Mode == tasks.Never {
		p = tasks.Policy{Mode: tasks.Optional, TTL: tasks.DefaultTTL, MaxPerCaller: tasks.DefaultMaxPerCaller, PollInterval: tasks.DefaultPollInterval}
	}
	name, owner := req.Params.Name, ownerKey(caller)
	args := append(json.RawMessage(nil), req.Params.Arguments...)
	run := func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
		ctx = withTaskCall(ctx)
		out, err := bt.Follow(ctx, taskCall{ctx})
		if failed, ok := backendTaskFailed(err); ok {
			return failed
		}
		res := t.FinishTask(ctx, &snapshot.CallRequest{Args: args, Caller: caller}, out, err)
		b, err := json.Marshal(markCall(nil, res))
		if err != nil {
			return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}}
		}
		return tasks.Outcome{Result: b}
	}
	base := principal.NewContext(context.Background(), caller)
	spec := tasks.Spec{Owner: owner, Caller: event.LocalPrincipal, AuthMethod: "none", Tool: name, Policy: p}
	if caller != nil {
		spec.Caller, spec.AuthMethod = caller.Name, caller.Method
	}
	rec, err := s.tasks.Start(ctx, base, spec, run)
	if err != nil && bt.Cancel != nil {
		bt.Cancel()
	}
	if errors.Is(err, tasks.ErrTooMany) {
		return markCall(req.Session, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("You already have as many tasks that have not ended as tool %s allows (or as many tasks kept as the server allows): wait for one to end, or cancel one with tasks/cancel, then call again.", name),
		}}}), nil
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "creating the task: " + err.Error()}
	}
	out := &createTaskResult{ResultType: "task", taskFields: fieldsOf(rec)}
	out.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": rec.ID}}
	return out, nil
}

// backendTaskFailed is the outcome of a call whose backend's task failed
// with a protocol error: the mcpd task fails with it.
func backendTaskFailed(err error) (tasks.Outcome, bool) {
	var tf *adapter.TaskFailedError
	if !errors.As(err, &tf) {
		return tasks.Outcome{}, false
	}
	return tasks.Outcome{Err: &tasks.Error{Code: tf.Code, Message: tf.Message}}, true
}

// clientUsesTasks reports whether the client of req declared the tasks
// extension, as declaresTasks(req.ClientCapabilities()) does, without
// decoding its capabilities when its _meta holds them as decoded JSON (a
// call of every upstream tool asks: decoding them cost a gateway call
// measurably).
func clientUsesTasks(req *mcp.CallToolRequest) bool {
	if req.Params != nil {
		if caps, ok := req.Params.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
			ext, _ := caps["extensions"].(map[string]any)
			_, declared := ext[tasksExtension]
			return declared
		}
	}
	return declaresTasks(req.ClientCapabilities())
}
