package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Relaying an upstream's tasks task for task (the 2026-07-28 tasks
// extension, SEP-2663; adapter.BackendTask says how the engine takes
// them).
//
// A call that runs as an mcpd task (adapter.TaskCallOf), or a plain call
// of a client that uses tasks (Request.Tasks), is sent to an upstream
// that declared the extension with the extension declared: the upstream
// decides whether it answers with a task. A plain answer is the call's,
// as from callTool; its input_required rounds are relayed as callTool
// relays them (to the mcpd task's client through TaskCall.Ask inside a
// task, by rounds otherwise). A task is followed: polled with tasks/get at
// the interval the upstream asks for (clamped), its status message
// reported as the mcpd task's, its questions asked of the mcpd task's
// client and answered with tasks/update, its result (or failure) the
// call's. When the mcpd task is cancelled, the upstream's is cancelled
// with tasks/cancel. An upstream that did not declare the extension gets
// plain calls, which mcpd runs as its own tasks when the tool says so.
//
// The upstream's task id never leaves this file: the client knows mcpd's
// task, bound to its caller, and mcpd follows the upstream's for it. What
// the upstream answers is untrusted: its ids are checked, its status must
// be one of the five, its status message is cut, its poll interval
// clamped, its questions checked as any relayed question, its result
// admitted and bounded as a call's.

const upstreamTasksExtension = "io.modelcontextprotocol/tasks"

// The extension's methods, sent to an upstream as custom methods.
const (
	upTasksGet    = "tasks/get"
	upTasksUpdate = "tasks/update"
	upTasksCancel = "tasks/cancel"
)

// Bounds on what an upstream's task says.
const (
	minTaskPoll       = 100 * time.Millisecond
	maxTaskPoll       = 10 * time.Second
	defaultTaskPoll   = time.Second
	maxTaskIDLen      = 256
	maxTaskMessageLen = 512
	maxTaskQuestions  = 16
	// maxTaskPollErrors is how many polls in a row may fail before the
	// upstream's task is taken to be lost.
	maxTaskPollErrors = 5
	taskCancelTimeout = 10 * time.Second
)

type upTaskParams struct {
	mcp.ParamsBase
	TaskID         string               `json:"taskId"`
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
}

type upTaskResult struct {
	mcp.ResultBase
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result"`
	Error          *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	InputRequests mcp.InputRequestMap `json:"inputRequests"`
}

// addTaskMethods lets the upstream's client send the extension's methods.
func addTaskMethods(c *mcp.Client) {
	for _, m := range []string{upTasksGet, upTasksUpdate, upTasksCancel} {
		if err := mcp.AddSendingCustomMethod[*upTaskParams, *upTaskResult](c, m); err != nil {
			panic(err) // only a standard method's name is refused
		}
	}
}

// declaresTasks reports whether the upstream of session cs declared the
// tasks extension.
func declaresTasks(cs *mcp.ClientSession) bool {
	_, ok := capabilities(cs).Extensions[upstreamTasksExtension]
	return ok
}

// taskRelay is one call relayed as a task: what following the
// upstream's task needs.
type taskRelay struct {
	u    *upstream
	h    *handler
	tok  *callToken
	caps map[string]any // the _meta clientCapabilities sent
	rcap *mcp.ClientCapabilities
}

// callAsTask is handler.Call for a call that may be relayed as a task; ok
// is false when it is not (the upstream did not declare the extension, or
// the call's client is asked within the call), and Call goes on as for
// any call.
func (u *upstream) callAsTask(ctx context.Context, h *handler, args map[string]any, req *adapter.Request, tc adapter.TaskCall) (out *adapter.Output, ok bool, err error) {
	if tc == nil && req.Rounds == nil {
		return nil, false, nil
	}
	x := &exchange{kind: "tool", name: h.upTool, params: &mcp.CallToolParams{Name: h.upTool, Arguments: args}, rounds: req.Rounds}
	params := x.params
	round := 1
	if tc == nil && req.Rounds.State != "" {
		st, err := u.openRound(x, req.Rounds.State)
		if err != nil {
			return nil, true, err
		}
		if st.Held != "" {
			return nil, false, nil
		}
		params, round = answered(params, req.Rounds.Responses, st.State), st.Round+1
	}
	ctx, tok, err := u.authorize(ctx)
	if err != nil {
		return nil, true, err
	}
	cs, release, err := u.sessionFor(ctx, tok)
	if err != nil {
		u.failures.Add(1)
		return nil, true, err
	}
	defer release()
	if !declaresTasks(cs) {
		return nil, false, nil
	}
	var rcaps *mcp.ClientCapabilities
	if req.Rounds != nil {
		rcaps = req.Rounds.Caps
	}
	tr := &taskRelay{u: u, h: h, tok: tok, caps: withTasksExtension(u.fast.capsMeta(rcaps)), rcap: rcaps}
	params.SetMeta(mcp.Meta{mcp.MetaKeyClientCapabilities: tr.caps})
	u.calls.Add(1)
	for ; ; round++ {
		res, err := cs.CallTool(ctx, params.(*mcp.CallToolParams))
		if err != nil {
			u.failures.Add(1)
			return nil, true, u.callError(ctx, cs, h.upTool, err)
		}
		if id, isTask := upstreamTaskOf(res); isTask {
			if id == "" {
				u.failures.Add(1)
				return nil, true, fmt.Errorf("upstream %s answered %s with a task whose id mcpd cannot use", u.cfg.name, h.upTool)
			}
			if tc != nil {
				out, err := tr.follow(ctx, tc, id)
				return out, true, err
			}
			return &adapter.Output{Task: &adapter.BackendTask{
				Follow: func(ctx context.Context, tc adapter.TaskCall) (*adapter.Output, error) {
					if tr.tok != nil {
						ctx = context.WithValue(ctx, callTokenKey{}, tr.tok)
					}
					return tr.follow(ctx, tc, id)
				},
				Cancel: func() { tr.cancel(ctx, id) },
			}}, true, nil
		}
		questions, state, asked := questionsOf(res)
		if !asked {
			out, err := h.output(res, tok)
			return out, true, err
		}
		if round >= maxInputRounds {
			u.failures.Add(1)
			return nil, true, u.tooManyRounds(x.kind, x.name, round)
		}
		if tc == nil {
			ask, err := u.askByRounds(x, round, questions, state)
			if err != nil {
				u.failures.Add(1)
				return nil, true, err
			}
			return &adapter.Output{InputRequired: ask}, true, nil
		}
		responses, err := tr.ask(ctx, tc, questions)
		if err != nil {
			return nil, true, err
		}
		params = answered(params, responses, state)
		params.SetMeta(mcp.Meta{mcp.MetaKeyClientCapabilities: tr.caps})
	}
}

// output is the Output of the upstream's complete result res, checked as
// Call checks it.
func (h *handler) output(res *mcp.CallToolResult, tok *callToken) (*adapter.Output, error) {
	delete(res.Meta, metaRelatedTask) // the upstream's task ids stay here
	redactResult(res, tok)
	h.up.gate.admitToolResult(h.upTool, res)
	if n := resultSize(res); n > h.maxBytes {
		return nil, fmt.Errorf("the upstream's result is %d bytes, over this tool's max_output_bytes %d", n, h.maxBytes)
	}
	out := &adapter.Output{Result: res}
	if h.readsVars {
		out.Vars = resultVars(res)
	}
	return out, nil
}

// metaRelatedTask is the _meta key that names the task a message belongs
// to.
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// withTasksExtension is a copy of the _meta clientCapabilities m that
// declares the tasks extension.
func withTasksExtension(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	ext := map[string]any{}
	if prev, ok := m["extensions"].(map[string]any); ok {
		for k, v := range prev {
			ext[k] = v
		}
	}
	ext[upstreamTasksExtension] = map[string]any{}
	out["extensions"] = ext
	return out
}

// upstreamTaskOf reports whether res is the upstream's CreateTaskResult,
// and its task's id. The SDK decodes a tools/call answer as a
// CallToolResult, which keeps the resultType (in its encoding) and _meta
// but not the task's top-level fields: the id is read from
// _meta["io.modelcontextprotocol/related-task"] (mcpd puts it there); a
// task named only at the top level comes back with id "".
func upstreamTaskOf(res *mcp.CallToolResult) (id string, isTask bool) {
	if res == nil || res.NeedsInput() {
		return "", false
	}
	b, err := json.Marshal(struct {
		Type any `json:"t"`
	}{res})
	if err != nil || !strings.Contains(string(b), `"resultType":"task"`) {
		return "", false
	}
	rel, _ := res.Meta[metaRelatedTask].(map[string]any)
	id, _ = rel["taskId"].(string)
	if !validTaskID(id) {
		return "", true
	}
	return id, true
}

// validTaskID reports whether id is one mcpd sends back to the upstream:
// 1 to 256 printable ASCII characters.
func validTaskID(id string) bool {
	if id == "" || len(id) > maxTaskIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// follow polls the upstream's task id until it ends, relaying its status
// and questions to tc; when ctx ends (the mcpd task was cancelled, or
// mcpd is shutting down) the upstream's task is cancelled.
func (tr *taskRelay) follow(ctx context.Context, tc adapter.TaskCall, id string) (*adapter.Output, error) {
	u := tr.u
	wait := defaultTaskPoll
	failures := 0
	lastMsg := ""
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			tr.cancel(ctx, id)
			return nil, ctx.Err()
		case <-timer.C:
		}
		t, err := tr.send(ctx, upTasksGet, &upTaskParams{TaskID: id})
		if err != nil {
			if ctx.Err() != nil {
				continue // cancelled: the select above cancels the upstream's
			}
			if failures++; failures >= maxTaskPollErrors || isRefusal(err) {
				u.failures.Add(1)
				return nil, fmt.Errorf("upstream %s's task for %s was lost: %s", u.cfg.name, tr.h.upTool, u.redact(err.Error()))
			}
			timer.Reset(wait)
			continue
		}
		failures = 0
		if t.PollIntervalMs > 0 {
			wait = min(max(time.Duration(t.PollIntervalMs)*time.Millisecond, minTaskPoll), maxTaskPoll)
		}
		if msg := taskMessage(u.redact(t.StatusMessage)); msg != "" && msg != lastMsg {
			tc.Status(msg)
			lastMsg = msg
		}
		switch t.Status {
		case "working":
		case "input_required":
			if len(t.InputRequests) == 0 {
				break // answered meanwhile, or nothing asked yet
			}
			responses, err := tr.ask(ctx, tc, t.InputRequests)
			if err != nil {
				if ctx.Err() != nil {
					continue
				}
				return nil, err
			}
			if _, err := tr.send(ctx, upTasksUpdate, &upTaskParams{TaskID: id, InputResponses: responses}); err != nil && ctx.Err() == nil {
				u.failures.Add(1)
				return nil, fmt.Errorf("upstream %s refused the answers to its task's questions: %s", u.cfg.name, u.redact(err.Error()))
			}
			timer.Reset(0)
			continue
		case "completed":
			var res mcp.CallToolResult
			if err := json.Unmarshal(t.Result, &res); err != nil || len(t.Result) == 0 {
				u.failures.Add(1)
				return nil, fmt.Errorf("upstream %s's task for %s completed without a result mcpd can read", u.cfg.name, tr.h.upTool)
			}
			return tr.h.output(&res, tr.tok)
		case "failed":
			msg, code := "no reason given", int64(jsonrpc.CodeInternalError)
			if t.Error != nil {
				if t.Error.Message != "" {
					msg = taskMessage(u.redact(t.Error.Message))
				}
				if t.Error.Code >= -32768 && t.Error.Code <= -32000 {
					code = t.Error.Code // a JSON-RPC error's; any other is internal
				}
			}
			return nil, &adapter.TaskFailedError{Code: code, Message: fmt.Sprintf("upstream %s's task for %s failed: %s", u.cfg.name, tr.h.upTool, msg)}
		case "cancelled":
			return nil, fmt.Errorf("upstream %s cancelled its task for %s", u.cfg.name, tr.h.upTool)
		default:
			u.failures.Add(1)
			return nil, fmt.Errorf("upstream %s's task for %s has a status mcpd does not know", u.cfg.name, tr.h.upTool)
		}
		timer.Reset(wait)
	}
}

// ask relays the questions of the upstream (its task's, or an
// input_required round's) to the mcpd task's client: each must be one
// mcpd relays and the client declared.
func (tr *taskRelay) ask(ctx context.Context, tc adapter.TaskCall, questions mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	if len(questions) > maxTaskQuestions {
		return nil, fmt.Errorf("upstream %s asked %d questions at once; mcpd relays at most %d", tr.u.cfg.name, len(questions), maxTaskQuestions)
	}
	for key, ir := range questions {
		if !validTaskID(key) {
			return nil, fmt.Errorf("upstream %s asked a question under a key mcpd cannot relay", tr.u.cfg.name)
		}
		if err := tr.u.gate.checkForm(ir); err != nil {
			return nil, err
		}
		if err := tr.u.relay.check(ir, tr.rcap); err != nil {
			return nil, fmt.Errorf("tool %s: %w", tr.h.upTool, err)
		}
	}
	return tc.Ask(ctx, questions)
}

// send sends one of the extension's methods to the upstream, declaring
// the extension.
func (tr *taskRelay) send(ctx context.Context, method string, p *upTaskParams) (*upTaskResult, error) {
	cs, release, err := tr.u.sessionFor(ctx, tr.tok)
	if err != nil {
		return nil, err
	}
	defer release()
	p.SetMeta(mcp.Meta{mcp.MetaKeyClientCapabilities: tr.caps})
	return mcp.CallCustomMethod[*upTaskParams, *upTaskResult](ctx, cs, method, p)
}

// cancel cancels the upstream's task id, within taskCancelTimeout of its
// own (ctx may have ended: that is why).
func (tr *taskRelay) cancel(ctx context.Context, id string) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
	defer stop()
	if _, err := tr.send(cctx, upTasksCancel, &upTaskParams{TaskID: id}); err != nil {
		tr.u.log.Warn("cancelling the upstream's task", "upstream", tr.u.cfg.name, "tool", tr.h.upTool, "err", tr.u.redact(err.Error()))
	}
}

// isRefusal reports whether err is the upstream's protocol error (an
// unknown task: it lost it), not a failure to reach it.
func isRefusal(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

// taskMessage is an upstream's status message as mcpd reports it: valid
// UTF-8, one line, cut to maxTaskMessageLen bytes.
func taskMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxTaskMessageLen {
		s = s[:maxTaskMessageLen]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
