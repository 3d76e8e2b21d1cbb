package serve

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
)

// Tools as tasks for clients of 2025-11-25: that revision's experimental
// tasks. The server declares the tasks capability (tasks/list,
// tasks/cancel, task-augmented tools/call) in its initialize result, and
// each tool its execution.taskSupport in tools/list ("optional" or
// "required" from its task block; absent, i.e. forbidden, otherwise). A
// tools/call whose params carry `task` is answered with a CreateTaskResult
// at once and runs on through engine/tasks exactly as a 2026-07-28 task
// (taskRound: the same call, asks, limits and redaction; the same store,
// leases and cancellation); tasks/get and tasks/cancel answer with the
// Task, tasks/list with the caller's tasks, and tasks/result blocks until
// the task ends and answers with what the call would have answered. A task
// that asks its user something is input_required; tasks/result then sends
// the questions to the client as requests (elicitation/create and the
// like) carrying the task in _meta io.modelcontextprotocol/related-task,
// and the answers resume the task. A status change made on this replica is
// sent as notifications/tasks/status to the session that created the task
// when it has a stream for it (a stdio connection, an HTTP session's GET
// stream).
//
// Only the wire differs from tasks.go's. A 2025-11-25 client that
// declared the 2026-07-28 extension in its initialize capabilities gets the
// extension's wire instead, as before; a 2026-07-28 client never sees this
// one.
//
// The SDK decodes a tools/call's params into CallToolParamsRaw, which has
// no `task`: the HTTP front (legacyTaskFront) and the stdio connection
// (taskConn) move it into _meta under metaLegacyTask before the SDK reads
// the request, with the key of the stream notifications of the task go to,
// and remove that key from anything a client sent itself.

// metaLegacyTask is the private _meta key of a tools/call whose params
// carried a task: {"task": params.task, "via": stream key}.
const metaLegacyTask = "io.mcpd/legacy-task"

// Methods of 2025-11-25's tasks the 2026-07-28 extension does not have.
const (
	methodTasksResult = "tasks/result"
	methodTasksList   = "tasks/list"
	notifyTaskStatus  = "notifications/tasks/status"
)

// legacyTaskCaps is the tasks capability of a 2025-11-25 server.
var legacyTaskCaps = json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

// legacyTask is the Task of 2025-11-25.
type legacyTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// legacyCreateTask answers a task-augmented tools/call.
type legacyCreateTask struct {
	mcp.ResultBase
	Task legacyTask `json:"task"`
}

// legacyTaskResult answers tasks/get and tasks/cancel: the Task itself.
type legacyTaskResult struct {
	mcp.ResultBase
	legacyTask
}

// legacyTaskList answers tasks/list.
type legacyTaskList struct {
	mcp.ResultBase
	Tasks      []legacyTask `json:"tasks"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

// rawResult is a result already encoded.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// legacyIDParams are the params of tasks/result.
type legacyIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// legacyListParams are the params of tasks/list.
type legacyListParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// legacyTaskOf returns r as 2025-11-25 has it. A tool call that completed
// with isError is failed there.
func legacyTaskOf(r *tasks.Record) legacyTask {
	st := string(r.Status)
	if r.Status == tasks.Completed && resultIsError(r.Result) {
		st = string(tasks.Failed)
	}
	return legacyTask{
		TaskID: r.ID, Status: st, StatusMessage: r.Message,
		CreatedAt: r.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: r.Updated.UTC().Format(time.RFC3339Nano),
		TTL: max(r.TTL.Milliseconds(), 1), PollInterval: r.Poll.Milliseconds(),
	}
}

func resultIsError(res json.RawMessage) bool {
	if !bytes.Contains(res, []byte(`"isError"`)) {
		return false
	}
	var v struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(res, &v) == nil && v.IsError
}

// usesLegacyTasks reports whether a request's client gets 2025-11-25's
// tasks: a session of that era whose client did not declare the
// 2026-07-28 extension.
func usesLegacyTasks(ss *mcp.ServerSession, caps *mcp.ClientCapabilities) bool {
	return ss != nil && !isModernSession(ss) && !declaresTasks(caps)
}

// legacyTaskRequest is what the front moved out of a tools/call's params.
type legacyTaskRequest struct {
	Task struct {
		TTL *float64 `json:"ttl"`
	} `json:"task"`
	Via string `json:"via"`
}

// takeLegacyTask removes the task the front moved into a tools/call's
// _meta, and returns it.
func takeLegacyTask(p *mcp.CallToolParamsRaw) (*legacyTaskRequest, bool) {
	if p == nil || p.Meta == nil {
		return nil, false
	}
	v, ok := p.Meta[metaLegacyTask]
	if !ok {
		return nil, false
	}
	delete(p.Meta, metaLegacyTask)
	b, err := json.Marshal(v)
	var lt legacyTaskRequest
	if err != nil || json.Unmarshal(b, &lt) != nil {
		return &legacyTaskRequest{}, true
	}
	return &lt, true
}

// callAsLegacyTask is callAsTask for a client of 2025-11-25's tasks.
func (s *Server) callAsLegacyTask(ctx context.Context, t *snapshot.Tool, req *mcp.CallToolRequest, caller *principal.Principal, hold *callHold) (mcp.Result, error, bool) {
	p := t.Task()
	name := req.Params.Name
	lt, asked := takeLegacyTask(req.Params)
	if !asked {
		if p.Mode == tasks.Required {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q runs only as a task: call it with params.task (its execution.taskSupport is required)", name)}, true
		}
		return nil, nil, false
	}
	if p.Mode == tasks.Never {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q does not run as a task (its execution.taskSupport is forbidden): call it without params.task", name)}, true
	}
	// The requested ttl may shorten how long the task is kept, never
	// lengthen it past the tool's.
	if ttl := lt.Task.TTL; ttl != nil && *ttl > 0 {
		if d := time.Duration(*ttl * float64(time.Millisecond)); d < p.TTL {
			p.TTL = max(d, time.Second)
		}
	}
	caps := req.ClientCapabilities()
	owner := ownerKey(caller)
	args := append(json.RawMessage(nil), req.Params.Arguments...)
	run := func(ctx context.Context, answers map[string]json.RawMessage, state string) tasks.Outcome {
		return s.taskRound(ctx, name, args, caller, caps, answers, state)
	}
	base := principal.NewContext(context.Background(), caller)
	spec := tasks.Spec{Owner: owner, Caller: event.LocalPrincipal, AuthMethod: "none", Tool: name, Policy: p}
	if caller != nil {
		spec.Caller, spec.AuthMethod = caller.Name, caller.Method
	}
	// Watch before the task runs: its first change may come at once.
	slot, err := s.takeTaskSlot(hold) // tasklimits.go: as the 2026-07-28 path
	if err != nil {
		return nil, err, true
	}
	rec, err := s.tasks.Start(ctx, base, spec, s.slotted(slot, run))
	if err != nil {
		s.giveBackTaskSlot(slot, hold)
	}
	if errors.Is(err, tasks.ErrTooMany) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("you already have %d tasks that have not ended, as many as tool %s allows (or as many tasks kept as the server allows): wait for one to end, or cancel one with tasks/cancel, then call again", p.MaxPerCaller, name)}, true
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "creating the task: " + err.Error()}, true
	}
	if lt.Via != "" {
		s.ltasks.watch(rec, lt.Via)
	}
	out := &legacyCreateTask{Task: legacyTaskOf(rec)}
	out.Meta = mcp.Meta{metaRelatedTask: map[string]any{"taskId": rec.ID}}
	return out, nil, true
}

// addLegacyTaskMethods registers the methods 2025-11-25's tasks have and
// the extension has not; tasks/get and tasks/cancel, which both have, are
// registered by addTaskMethods and answered for 2025-11-25 clients by
// legacyTaskMiddleware.
func (s *Server) addLegacyTaskMethods(srv *mcp.Server) {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(mcp.AddReceivingCustomMethod(srv, methodTasksResult, s.tasksResult))
	must(mcp.AddReceivingCustomMethod(srv, methodTasksList, s.tasksList))
}

// legacyTaskMiddleware answers tasks/get and tasks/cancel of 2025-11-25
// clients, and adds the tasks capability to the initialize result of a
// 2025-11-25 session. It is outside the middleware that puts the caller in
// the context.
func (s *Server) legacyTaskMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "initialize":
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && ir.ProtocolVersion < protocol2026 {
				return &legacyInit{InitializeResult: ir}, nil
			}
			return res, err
		case methodTasksGet, methodTasksCancel:
			r, ok := req.(*mcp.ServerRequest[*taskParams])
			if !ok || !usesLegacyTasks(r.Session, r.ClientCapabilities()) {
				return next(ctx, method, req)
			}
			if r.Params == nil || r.Params.TaskID == "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "taskId is required"}
			}
			owner := ownerKey(callerFor(ctx, req))
			if method == methodTasksGet {
				rec, err := s.tasks.Get(ctx, owner, r.Params.TaskID)
				if err != nil {
					return nil, taskError(err)
				}
				return &legacyTaskResult{legacyTask: legacyTaskOf(rec)}, nil
			}
			return s.legacyCancel(ctx, owner, r.Params.TaskID)
		}
		return next(ctx, method, req)
	}
}

// legacyCancel cancels a task; one that has ended already is refused with
// -32602, as 2025-11-25 says.
func (s *Server) legacyCancel(ctx context.Context, owner, id string) (mcp.Result, error) {
	rec, err := s.tasks.Get(ctx, owner, id)
	if err != nil {
		return nil, taskError(err)
	}
	if rec.Status.Terminal() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("cannot cancel task: it has ended already (%s)", legacyTaskOf(rec).Status)}
	}
	if rec, err = s.tasks.Cancel(ctx, owner, id); err != nil {
		return nil, taskError(err)
	}
	return &legacyTaskResult{legacyTask: legacyTaskOf(rec)}, nil
}

// legacyOnly refuses a method of 2025-11-25's tasks to any other client,
// as the SDK refused it before: method not found.
func legacyOnly(ss *mcp.ServerSession, method string) error {
	var caps *mcp.ClientCapabilities
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			caps = ip.Capabilities
		}
	}
	if usesLegacyTasks(ss, caps) {
		return nil
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is 2025-11-25's; with the tasks extension, poll with tasks/get", method)}
}

// tasksList answers tasks/list: the caller's tasks, a page at a time, in
// the order of their ids; the cursor is the last id of the page before.
func (s *Server) tasksList(ctx context.Context, ss *mcp.ServerSession, p *legacyListParams) (*legacyTaskList, error) {
	if err := legacyOnly(ss, methodTasksList); err != nil {
		return nil, err
	}
	after := ""
	if p != nil && p.Cursor != "" {
		if len(p.Cursor) != 32 || !isHex(p.Cursor) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		after = p.Cursor
	}
	n := s.opts.PageSize
	if n <= 0 {
		n = 100
	}
	recs, more, err := s.tasks.ListOwner(ctx, ownerKey(principal.FromContext(ctx)), after, n)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "listing the tasks: " + err.Error()}
	}
	out := &legacyTaskList{Tasks: make([]legacyTask, 0, len(recs))}
	for _, r := range recs {
		out.Tasks = append(out.Tasks, legacyTaskOf(r))
	}
	if more && len(recs) > 0 {
		out.NextCursor = recs[len(recs)-1].ID
	}
	return out, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// tasksResult answers tasks/result: it waits until the task ends and
// answers with what its tools/call would have answered (the result, or the
// JSON-RPC error). While the task waits for its user, the questions are
// sent to the client on this request and the answers given to the task.
func (s *Server) tasksResult(ctx context.Context, ss *mcp.ServerSession, p *legacyIDParams) (*rawResult, error) {
	if err := legacyOnly(ss, methodTasksResult); err != nil {
		return nil, err
	}
	if p == nil || p.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "taskId is required"}
	}
	owner := ownerKey(principal.FromContext(ctx))
	var asked time.Time // the input_required round already asked
	for {
		woken, stop := s.ltasks.wake(p.TaskID)
		rec, err := s.tasks.Get(ctx, owner, p.TaskID)
		if err != nil {
			stop()
			return nil, taskError(err)
		}
		switch {
		case rec.Status.Terminal():
			stop()
			return legacyPayload(rec)
		case rec.Status == tasks.InputRequired && len(rec.Inputs) > 0 && !rec.Updated.Equal(asked):
			stop()
			asked = rec.Updated
			if err := s.askForTask(ctx, ss, owner, rec); err != nil {
				return nil, err
			}
			continue
		}
		// A change made here wakes the wait at once (OnStatus); one made
		// on another replica is seen at the next look.
		wait := min(max(rec.Poll/4, 50*time.Millisecond), 250*time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			stop()
			return nil, ctx.Err()
		case <-woken:
			t.Stop()
		case <-t.C:
		}
		stop()
	}
}

// legacyPayload is what tasks/result answers for an ended task.
func legacyPayload(rec *tasks.Record) (*rawResult, error) {
	switch rec.Status {
	case tasks.Failed:
		e := rec.Error
		if e == nil {
			e = &tasks.Error{Code: jsonrpc.CodeInternalError, Message: rec.Message}
		}
		return nil, &jsonrpc.Error{Code: e.Code, Message: e.Message}
	case tasks.Cancelled:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task was cancelled"}
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(rec.Result, &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading the task's result: " + err.Error()}
	}
	delete(res, "resultType") // kept as a 2026-07-28 result
	var meta map[string]json.RawMessage
	if m, ok := res["_meta"]; ok {
		_ = json.Unmarshal(m, &meta)
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta[metaRelatedTask], _ = json.Marshal(map[string]string{"taskId": rec.ID})
	res["_meta"], _ = json.Marshal(meta)
	b, err := json.Marshal(res)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the task's result: " + err.Error()}
	}
	return &rawResult{raw: b}, nil
}

// askForTask sends the questions of an input_required task to its client,
// each request carrying the task in _meta, and gives the answers to the
// task.
func (s *Server) askForTask(ctx context.Context, ss *mcp.ServerSession, owner string, rec *tasks.Record) error {
	b, err := json.Marshal(rec.Inputs)
	var reqs mcp.InputRequestMap
	if err == nil {
		err = json.Unmarshal(b, &reqs)
	}
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "reading the task's questions: " + err.Error()}
	}
	related := map[string]any{"taskId": rec.ID}
	answers := map[string]json.RawMessage{}
	for key, ir := range reqs {
		var res any
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			p.Meta = withMeta(p.Meta, related)
			res, err = ss.Elicit(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			p.Meta = withMeta(p.Meta, related)
			res, err = ss.CreateMessageWithTools(ctx, p)
		case *mcp.CreateMessageParams:
			p.Meta = withMeta(p.Meta, related)
			res, err = ss.CreateMessage(ctx, p)
		case *mcp.ListRootsParams:
			p.Meta = withMeta(p.Meta, related)
			res, err = ss.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("a question of type %T", ir)
		}
		if err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("asking the client for task %s: %v", rec.ID, err)}
		}
		if answers[key], err = json.Marshal(res); err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding an answer: " + err.Error()}
		}
	}
	if _, err := s.tasks.Answer(ctx, owner, rec.ID, answers); err != nil {
		return taskError(err)
	}
	return nil
}

func withMeta(m mcp.Meta, related map[string]any) mcp.Meta {
	if m == nil {
		m = mcp.Meta{}
	}
	m[metaRelatedTask] = related
	return m
}

// legacyInit is an initialize result with 2025-11-25's tasks capability,
// which mcp.ServerCapabilities has no field for.
type legacyInit struct {
	*mcp.InitializeResult
}

func (r *legacyInit) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	var caps map[string]json.RawMessage
	if c, ok := m["capabilities"]; ok {
		_ = json.Unmarshal(c, &caps)
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tasks"] = legacyTaskCaps
	if m["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// legacyToolList is a tools/list result for a 2025-11-25 client with each
// tool's execution.taskSupport; like legacyTools, without the 2026-only
// cache fields.
type legacyToolList struct {
	*mcp.ListToolsResult
	support []string // by tool: "" for forbidden
}

type toolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

type toolWithExecution struct {
	*mcp.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

func (r legacyToolList) MarshalJSON() ([]byte, error) {
	tools := make([]toolWithExecution, len(r.Tools))
	for i, t := range r.Tools {
		tools[i].Tool = t
		if r.support[i] != "" {
			tools[i].Execution = &toolExecution{TaskSupport: r.support[i]}
		}
	}
	return json.Marshal(struct {
		Meta       mcp.Meta            `json:"_meta,omitempty"`
		NextCursor string              `json:"nextCursor,omitempty"`
		Tools      []toolWithExecution `json:"tools"`
	}{r.Meta, r.NextCursor, tools})
}

// withExecution returns a tools/list page (the snapshot's tools page)
// with each tool's execution.taskSupport for a 2025-11-25 client of
// tasks, when a tool of the page runs as a task; res as it is otherwise.
func withExecution(ss *mcp.ServerSession, res *mcp.ListToolsResult, page []*snapshot.Tool) mcp.Result {
	if ss == nil || isModernSession(ss) {
		return res
	}
	var support []string
	for i, t := range page {
		if m := t.Task().Mode; m != tasks.Never {
			if support == nil {
				support = make([]string, len(page))
			}
			support[i] = m.String()
		}
	}
	if support == nil {
		return res
	}
	return legacyToolList{ListToolsResult: res, support: support}
}

// legacyTasks routes notifications/tasks/status: each task created by a
// 2025-11-25 client with a stream is watched, under the key of that
// stream (an HTTP session's id, a stdio connection's token), until it
// ends. The zero value is ready.
type legacyTasks struct {
	mu      sync.Mutex
	streams map[string]*legacyStream              // by stream key
	watched map[string]string                     // task id → stream key
	waiters map[string]map[chan struct{}]struct{} // task id → tasks/result waiting
}

// wake returns a channel that is closed at the next status change of task
// id made here, and the func that stops waiting.
func (l *legacyTasks) wake(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiters == nil {
		l.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if l.waiters[id] == nil {
		l.waiters[id] = map[chan struct{}]struct{}{}
	}
	l.waiters[id][ch] = struct{}{}
	return ch, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if w := l.waiters[id]; w != nil {
			delete(w, ch)
			if len(w) == 0 {
				delete(l.waiters, id)
			}
		}
	}
}

func (l *legacyTasks) watch(rec *tasks.Record, via string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watched == nil {
		l.watched = map[string]string{}
	}
	l.watched[rec.ID] = via
}

// attach makes send the stream of key; the func returned detaches it
// (unless another stream of the key was attached since).
func (l *legacyTasks) attach(key string, send func([]byte)) func() {
	st := &legacyStream{send: send}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams == nil {
		l.streams = map[string]*legacyStream{}
	}
	l.streams[key] = st
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.streams[key] == st {
			delete(l.streams, key)
		}
	}
}

type legacyStream struct{ send func([]byte) }

// status sends a watched task's new status to its stream (Manager's
// OnStatus); the task is no longer watched once it has ended.
func (l *legacyTasks) status(rec *tasks.Record) {
	l.mu.Lock()
	for ch := range l.waiters[rec.ID] {
		close(ch)
	}
	delete(l.waiters, rec.ID)
	via, ok := l.watched[rec.ID]
	var send func([]byte)
	if ok {
		if st := l.streams[via]; st != nil {
			send = st.send
		}
		if rec.Status.Terminal() {
			delete(l.watched, rec.ID)
		}
	}
	l.mu.Unlock()
	if send == nil {
		return
	}
	params, err := json.Marshal(legacyTaskOf(rec))
	if err != nil {
		return
	}
	msg := make([]byte, 0, len(params)+64)
	msg = append(msg, `{"jsonrpc":"2.0","method":"`+notifyTaskStatus+`","params":`...)
	msg = append(msg, params...)
	msg = append(msg, '}')
	send(msg)
}

// moveTaskParam rewrites the params of a tools/call for the SDK, which
// drops params.task: the task goes into _meta[metaLegacyTask] with via,
// and a metaLegacyTask a client sent itself is removed. It reports false
// (and params unchanged) when there is nothing to do.
func moveTaskParam(params json.RawMessage, via string) (json.RawMessage, bool) {
	if !bytes.Contains(params, []byte(`"task"`)) && !bytes.Contains(params, []byte(metaLegacyTask)) {
		return params, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params, false // the SDK's to refuse
	}
	task, hasTask := m["task"]
	var meta map[string]json.RawMessage
	if raw, ok := m["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params, false
	}
	_, forged := meta[metaLegacyTask]
	if !hasTask && !forged {
		return params, false
	}
	delete(m, "task")
	delete(meta, metaLegacyTask)
	if hasTask && !bytes.Equal(bytes.TrimSpace(task), []byte("null")) {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[metaLegacyTask], _ = json.Marshal(struct {
			Task json.RawMessage `json:"task"`
			Via  string          `json:"via,omitempty"`
		}{task, via})
	}
	if meta != nil {
		m["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return params, false
	}
	return out, true
}

// moveTaskInMessage is moveTaskParam for one JSON-RPC message as the
// HTTP body has it: a tools/call request alone is rewritten.
func moveTaskInMessage(body []byte, via string) ([]byte, bool) {
	if !bytes.Contains(body, []byte(`"tools/call"`)) {
		return body, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body, false
	}
	var method string
	if json.Unmarshal(m["method"], &method) != nil || method != "tools/call" || len(m["params"]) == 0 {
		return body, false
	}
	p, ok := moveTaskParam(m["params"], via)
	if !ok {
		return body, false
	}
	m["params"] = p
	out, err := json.Marshal(m)
	if err != nil {
		return body, false
	}
	return out, true
}
