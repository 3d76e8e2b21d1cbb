package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// Tools as tasks: the io.modelcontextprotocol/tasks extension (SEP-2663,
// 2026-07-28). A tool with a task block answers the tools/call of a client
// that declared the extension (in its request's _meta, or in its
// initialize capabilities) with a task at once, and the call runs on in
// the background through the same Tool.Call as a plain call (validation,
// asks, limits and timeout, redaction); tasks/get polls it (its result
// inlined once it ends), tasks/update carries the answers to what it asks
// (MRTR rounds, each round's questions as the task's inputRequests), and
// tasks/cancel ends its call's context, so the backend stops. engine/tasks
// keeps the records and runs the calls; this file is the wire.
//
// The extension's methods are registered on every endpoint's SDK server as
// custom methods, so that they run through the same middleware (caller,
// observe) on every transport; over HTTP the front checks their Mcp-Name
// header against params.taskId first (taskHeaders), which the SDK checks
// for the core methods alone.

// tasksExtension is the extension's identifier, in capabilities.extensions.
const tasksExtension = "io.modelcontextprotocol/tasks"

// The extension's methods. tasks/result and tasks/list of the 2025-11-25
// experimental tasks are tasks_legacy.go's.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskFields are the Task of SEP-2663, as CreateTaskResult and tasks/get
// carry them at the top level.
type taskFields struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// createTaskResult answers a tools/call that created a task.
type createTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskFields
}

// detailedTask answers tasks/get: the task, with its result once
// completed, its error once failed, its questions while input_required.
type detailedTask struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskFields
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         *tasks.Error               `json:"error,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// taskAck answers tasks/update and tasks/cancel: the state they lead to
// is for the next tasks/get.
type taskAck struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

func fieldsOf(r *tasks.Record) taskFields {
	return taskFields{
		TaskID: r.ID, Status: string(r.Status), StatusMessage: r.Message,
		CreatedAt: r.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: r.Updated.UTC().Format(time.RFC3339Nano),
		TTLMs: max(r.TTL.Milliseconds(), 1), PollIntervalMs: r.Poll.Milliseconds(),
	}
}

// addTaskMethods registers the extension's methods on an endpoint's SDK
// server.
func (s *Server) addTaskMethods(srv *mcp.Server) {
	must := func(err error) {
		if err != nil {
			panic(err) // only a standard method's name is refused
		}
	}
	must(mcp.AddReceivingCustomMethod(srv, methodTasksGet, s.tasksGet))
	must(mcp.AddReceivingCustomMethod(srv, methodTasksUpdate, s.tasksUpdate))
	must(mcp.AddReceivingCustomMethod(srv, methodTasksCancel, s.tasksCancel))
}

// taskRequest checks what every method of the extension needs: that the
// client declared it, and a task id; it returns the caller's key.
func (s *Server) taskRequest(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (string, error) {
	if p == nil || !declaresTasks((&mcp.ServerRequest[*taskParams]{Session: ss, Params: p}).ClientCapabilities()) {
		return "", missingTasksExtension("this method belongs to the tasks extension")
	}
	if p.TaskID == "" {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "taskId is required"}
	}
	return ownerKey(principal.FromContext(ctx)), nil
}

func (s *Server) tasksGet(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*detailedTask, error) {
	owner, err := s.taskRequest(ctx, ss, p)
	if err != nil {
		return nil, err
	}
	r, err := s.tasks.Get(ctx, owner, p.TaskID)
	if err != nil {
		return nil, taskError(err)
	}
	out := &detailedTask{ResultType: "complete", taskFields: fieldsOf(r)}
	switch r.Status {
	case tasks.Completed:
		out.Result = r.Result
	case tasks.Failed:
		out.Error = r.Error
	case tasks.InputRequired:
		out.InputRequests = r.Inputs
	}
	return out, nil
}

func (s *Server) tasksUpdate(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*taskAck, error) {
	owner, err := s.taskRequest(ctx, ss, p)
	if err != nil {
		return nil, err
	}
	if _, err := s.tasks.Answer(ctx, owner, p.TaskID, p.InputResponses); err != nil {
		return nil, taskError(err)
	}
	return &taskAck{ResultType: "complete"}, nil
}

func (s *Server) tasksCancel(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*taskAck, error) {
	owner, err := s.taskRequest(ctx, ss, p)
	if err != nil {
		return nil, err
	}
	if _, err := s.tasks.Cancel(ctx, owner, p.TaskID); err != nil {
		return nil, taskError(err)
	}
	return &taskAck{ResultType: "complete"}, nil
}

// taskError is the protocol error of a failed task operation: an unknown
// task (or another caller's) is invalid params, as SEP-2663 says.
func taskError(err error) error {
	if errors.Is(err, tasks.ErrNotFound) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task store did not answer: " + err.Error()}
}

// declaresTasks reports whether client capabilities declare the tasks
// extension.
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// missingTasksExtension is SEP-2575's -32021, naming the extension.
func missingTasksExtension(why string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: why + ": declare the " + tasksExtension + " extension in the client capabilities", Data: data}
}

// ownerKey is the key a task is bound to: the verified caller, hashed
// (it names a key in the shared state), or "" for the local user.
func ownerKey(p *principal.Principal) string {
	if p == nil {
		return ""
	}
	h := sha256.Sum256([]byte(p.Method + "\x00" + p.Name))
	return hex.EncodeToString(h[:16])
}

// callAsTask answers a tools/call of tool t as a task when the tool and
// the client both use tasks, and refuses it when the tool requires tasks
// and the client does not use them; handled is false for a plain call.
func (s *Server) callAsTask(ctx context.Context, t *snapshot.Tool, req *mcp.CallToolRequest, caller *principal.Principal, hold *callHold) (res mcp.Result, err error, handled bool) {
	caps := clientCaps(ctx, req) // fastmeta.go: decoded once per request
	if usesLegacyTasks(req.Session, caps) {
		return s.callAsLegacyTask(ctx, t, req, caller, hold) // tasks_legacy.go
	}
	p := t.Task()
	if p.Mode == tasks.Never {
		return nil, nil, false
	}
	if !declaresTasks(caps) {
		if p.Mode == tasks.Required {
			return nil, missingTasksExtension(fmt.Sprintf("tool %q runs only as a task", req.Params.Name)), true
		}
		return nil, nil, false
	}
	name, owner := req.Params.Name, ownerKey(caller)
	args := append(json.RawMessage(nil), req.Params.Arguments...)
	first := "" // the requestState of the task's first round (tasks_compose.go)
	if p.AsksFirst {
		var done mcp.Result
		if first, done, err = s.askFirst(ctx, t, req, caller); done != nil || err != nil {
			return done, err, true
		}
	}
	run := func(ctx context.Context, answers map[string]json.RawMessage, state string) tasks.Outcome {
		if state == "" && answers == nil {
			state = first
		}
		return s.taskRound(ctx, name, args, caller, caps, answers, state)
	}
	base := principal.NewContext(context.Background(), caller)
	spec := tasks.Spec{Owner: owner, Caller: event.LocalPrincipal, AuthMethod: "none", Tool: name, Policy: p}
	if caller != nil {
		spec.Caller, spec.AuthMethod = caller.Name, caller.Method
	}
	slot, err := s.takeTaskSlot(hold) // tasklimits.go
	if err != nil {
		return nil, err, true
	}
	rec, err := s.tasks.Start(ctx, base, spec, s.slotted(slot, run))
	if err != nil {
		s.giveBackTaskSlot(slot, hold)
	}
	if errors.Is(err, tasks.ErrTooMany) {
		return markCall(req.Session, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("You already have %d tasks that have not ended, as many as tool %s allows (or as many tasks kept as the server allows): wait for one to end, or cancel one with tasks/cancel, then call again.", p.MaxPerCaller, name),
		}}}), nil, true
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "creating the task: " + err.Error()}, true
	}
	out := &createTaskResult{ResultType: "task", taskFields: fieldsOf(rec)}
	// The task's id in _meta too, where a client whose SDK decodes a
	// tools/call answer as a CallToolResult (and drops the Task's fields:
	// the Go SDK's) still finds it.
	out.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": rec.ID}}
	return out, nil, true
}

// metaRelatedTask is the _meta key of 2025-11-25's tasks that names the
// task a message belongs to.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// taskRound runs one round of a task's call: the tool as the current
// snapshot has it, with the answers to the round before.
func (s *Server) taskRound(ctx context.Context, name string, args json.RawMessage, caller *principal.Principal, caps *mcp.ClientCapabilities, answers map[string]json.RawMessage, state string) tasks.Outcome {
	snap := s.current.Acquire()
	defer snap.Release()
	t, ok := snap.ToolFor(name, caller)
	if !ok {
		return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool %q is gone (the config was reloaded)", name)}}
	}
	ctx = withTaskCall(ctx) // a backend's task is followed inside this one (tasks_relay.go)
	cr := snapshot.CallRequest{Args: args, Caller: caller, Progress: taskProgress(ctx)}
	if t.Asks() {
		var responses mcp.InputResponseMap
		if answers != nil {
			b, _ := json.Marshal(answers)
			if err := json.Unmarshal(b, &responses); err != nil {
				return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid inputResponses: " + err.Error()}}
			}
		}
		cr.Answers = s.answers(snap, nil, caps, responses, state, nil)
	}
	res, release, err := s.taskCall(ctx, t, &cr) // tasklimits.go: the output budget
	defer release()
	if err != nil {
		if out, ok := backendTaskFailed(err); ok {
			return out
		}
		var je *jsonrpc.Error
		if errors.As(protocolError(err), &je) {
			return tasks.Outcome{Err: &tasks.Error{Code: je.Code, Message: je.Message}}
		}
		return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
	}
	if res.InputRequests != nil {
		b, err := json.Marshal(res.InputRequests)
		var inputs map[string]json.RawMessage
		if err == nil {
			err = json.Unmarshal(b, &inputs)
		}
		if err != nil {
			return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the task's questions: " + err.Error()}}
		}
		return tasks.Outcome{Inputs: inputs, State: res.RequestState}
	}
	b, err := json.Marshal(markCall(nil, res))
	if err != nil {
		return tasks.Outcome{Err: &tasks.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}}
	}
	return tasks.Outcome{Result: b}
}

// taskProgress records a task's progress as its statusMessage.
func taskProgress(ctx context.Context) snapshot.ProgressFunc {
	return func(p, total float64, msg string) {
		text := strconv.FormatFloat(p, 'g', -1, 64)
		if total > 0 {
			text += "/" + strconv.FormatFloat(total, 'g', -1, 64)
		}
		if msg != "" {
			text += ": " + msg
		}
		tasks.Report(ctx, text, total > 0 && p >= total)
	}
}

// taskHeaders checks the Mcp-Name header of a tasks/get, tasks/update or
// tasks/cancel request against its params.taskId (SEP-2663 extends
// SEP-2243's routing headers to them) and answers a mismatch with 400 and
// -32020; it reports whether the request goes on. A request without the
// header goes on: the SDK's own clients do not send it for custom methods.
func taskHeaders(w http.ResponseWriter, r *http.Request, maxBody int64) bool {
	switch r.Header.Get("Mcp-Method") {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
	default:
		return true
	}
	name := strings.TrimSpace(r.Header.Get("Mcp-Name"))
	if name == "" || r.Body == nil {
		return true
	}
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body = readBack{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || int64(len(body)) > maxBody {
		return true // the SDK meets the same and answers it
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			TaskID *string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Params.TaskID == nil || !validID(msg.ID) {
		return true // not one request, or no taskId: the SDK's answer
	}
	if *msg.Params.TaskID != name {
		out, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"id":      msg.ID,
			"error": map[string]any{"code": mcp.CodeHeaderMismatch,
				"message": fmt.Sprintf("header mismatch: the Mcp-Name header %q does not match params.taskId %q", name, *msg.Params.TaskID)},
		})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(append(out, '\n'))
		return false
	}
	return true
}

// validID reports whether a JSON-RPC id is one to echo: a string or a
// number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

// stopTasks shuts down the tasks this process runs: they get the
// shutdown's grace to end, then are cancelled and end failed.
func (s *Server) stopTasks(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, s.opts.ShutdownGrace)
	defer cancel()
	return s.tasks.Shutdown(gctx)
}

// newTaskManager returns the manager of the tasks of a server that was
// given none: new tasks in the shared state while the current config has
// a state block, so that every replica answers for every task, in memory
// otherwise; a reload that adds, changes or removes the block takes
// effect for the tasks created after it (tasks.Follow).
func (s *Server) newTaskManager() *tasks.Manager {
	current := s.current
	state := func() *sharedstate.Store { return current.Load().State() }
	store := tasks.NewFollow(tasks.NewMemory(0), tasks.NewRedis(state, 0), func() bool { return state() != nil })
	var m *tasks.Manager
	record := s.opts.Metrics.Tasks(func() telemetry.TaskStats { return telemetry.TaskStats{Running: m.Running(), Oldest: m.Oldest()} })
	m = tasks.NewManager(store, tasks.Options{Logger: s.opts.Logger, Observe: func(ev tasks.Event) { s.taskEvent(ev, record) },
		OnStatus: s.ltasks.status})
	return m
}

// taskEvent records a task's creation or end: in the metrics, and as one
// audit line (Kind "task", the event as Outcome, how long it ran as
// Duration), on the replica where it happened.
func (s *Server) taskEvent(ev tasks.Event, record func(string, time.Duration)) {
	r := ev.Record
	age := r.Updated.Sub(r.Created)
	if ev.Kind == "created" {
		age = 0
	}
	record(ev.Kind, age)
	if s.opts.Audit == nil {
		return
	}
	e := &audit.Entry{Time: time.Now(), Principal: r.Caller, AuthMethod: r.AuthMethod, Kind: "task", Name: r.Tool,
		Outcome: ev.Kind, Duration: age, Task: r.ID}
	if r.Status == tasks.Failed && r.Error != nil {
		e.Error = r.Error.Message
	}
	if s.opts.Generation != nil {
		e.Generation = s.opts.Generation()
	}
	s.opts.Audit.Record(e)
}
