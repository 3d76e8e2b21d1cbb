package adapter

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tasks of a backend. A call may run as an mcpd task (the 2026-07-28
// tasks extension, engine/tasks): the engine answers the client with a
// task and runs the call in the background. A handler whose backend runs
// calls as tasks of its own (an MCP upstream that declared the
// extension) follows the backend's task instead of holding one request
// for the whole call, in one of two ways:
//
//   - inside an mcpd task (a tool with a task block): the call's context
//     carries a TaskCall (TaskCallOf); the handler starts the backend's
//     task, follows it to its end (reporting its status, asking the
//     client its questions through TaskCall.Ask) and returns its result
//     as Call's, cancelling the backend's task when ctx ends;
//   - in a plain call of a client that uses tasks (Request.Tasks): the
//     backend decides; a handler whose backend answered with a task
//     returns Output.Task, and the engine creates an mcpd task that runs
//     BackendTask.Follow with a TaskCall. Any other answer is the call's.
//
// Either way the backend's task id stays inside the handler: the client
// knows only mcpd's task, bound to its caller.

// A TaskCall is the mcpd task a call runs as, for a handler that follows
// a task of its backend.
type TaskCall interface {
	// Status sets what the task is doing, in words (its statusMessage).
	Status(msg string)
	// Ask puts questions to the task's client (the task is
	// input_required, with them as its inputRequests, until tasks/update
	// answers every one) and returns the answers by the questions' keys.
	// It fails when the task ends first (cancelled: ctx ends too) or no
	// answers come in time.
	Ask(ctx context.Context, questions mcp.InputRequestMap) (mcp.InputResponseMap, error)
}

type taskCallKey struct{}

// WithTaskCall returns ctx carrying tc: the engine sets it on the context
// of a call that runs as an mcpd task.
func WithTaskCall(ctx context.Context, tc TaskCall) context.Context {
	return context.WithValue(ctx, taskCallKey{}, tc)
}

// TaskCallOf is the mcpd task ctx's call runs as, or nil.
func TaskCallOf(ctx context.Context) TaskCall {
	tc, _ := ctx.Value(taskCallKey{}).(TaskCall)
	return tc
}

// BackendTask is a backend's task that a plain call's handler started
// (Output.Task): the engine follows it as an mcpd task.
type BackendTask struct {
	// Follow follows the backend's task to its end and returns its
	// result, as Call would have; ctx ends when the mcpd task is
	// cancelled (Follow then cancels the backend's task) and carries tc.
	Follow func(ctx context.Context, tc TaskCall) (*Output, error)
	// Cancel cancels the backend's task when the engine cannot follow
	// it (it could not create the mcpd task).
	Cancel func()
}

// TaskFailedError ends a call that followed a task of its backend whose
// task failed with a protocol error (not a tool error): the mcpd task
// fails with it too, its error inlined in tasks/get.
type TaskFailedError struct {
	Code    int64
	Message string
}

func (e *TaskFailedError) Error() string { return e.Message }
