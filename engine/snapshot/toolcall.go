package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// Calling a tool (compiling it is tool.go): Tool.Call, the one
// orchestration of a call's stages.

// Call runs one call of the tool: validate, bind the caller, answer the
// ask blocks, answer from the result cache when the tool is cached and
// the result is there (engine/cache), admit (rate limits, concurrency), call
// the adapter under the
// tool's timeout, shape, redact. Every failure of the tool, including a
// panic, is a tool error the model can read, in the result. The error is
// a protocol error, about the request rather than the tool: a
// *StateError (a requestState refused) or a *MissingCapabilityError (a
// question the client cannot answer). A result with InputRequests set is
// input_required: the client answers and retries with req.Answers'
// Responses and State.
func (t *Tool) Call(ctx context.Context, req *CallRequest) (*mcp.CallToolResult, error) {
	var protoErr error
	res := t.call(ctx, req, &protoErr)
	if protoErr != nil {
		return nil, protoErr
	}
	return res, nil
}

// AsksMetaKey marks, in the _meta of a tool or prompt that asks its user
// (confirm or ask blocks), that a call may answer input_required first: a
// client such as mcpd's console can say so before the first call.
const AsksMetaKey = "mcpd/asks"

// Asks reports whether Call reads its request's Answers: the tool has ask
// blocks, or its adapter may ask the client while it runs
// (Traits.RelaysClientRequests).
func (t *Tool) Asks() bool {
	return t.asks != nil || t.traits.RelaysClientRequests
}

// call is the body of Call; a protocol error goes to *protoErr (and the
// result is then meaningless): returned as a second value, it would make
// every frame below carry it.
//
// It runs on the goroutine the SDK starts for each request, which begins
// with a small stack: call and what it calls keep their frames small (the
// rare branches are in functions of their own), so that a plain call does
// not make that stack grow, which copies it.
func (t *Tool) call(ctx context.Context, req *CallRequest, protoErr *error) (res *mcp.CallToolResult) {
	raw := req.Args
	var fill *cache.Fill
	cacheStatus := ""
	budget := t.state.Budget()
	// Registered first, so it runs last: over every result, errors and the
	// panic message included; a cache hit was redacted when stored. The
	// result is stored redacted.
	defer func() {
		if cacheStatus == cache.Hit {
			return
		}
		res = t.redact.Result(redact.Args(t.sensitive, raw, res))
		if cacheStatus != "" {
			res = t.cache.Fill(ctx, t.Def.Name, fill, cacheStatus, res, budget)
		}
		if t.lendsBuffers() {
			resultbuf.From(ctx).Bind(res)
		}
	}()
	defer t.recoverCall(&res)
	progress := req.Progress
	if progress == nil {
		progress = noProgress
	} else if t.redact != nil {
		progress = t.redactProgress(progress)
	}
	if msg := t.refuseCallerArgs(raw); msg != "" {
		return toolError(msg)
	}
	log := req.Log
	if log == nil {
		log = noLog
	} else {
		log = t.redactLog(raw, log)
	}
	args, err := t.validator.Validate(raw)
	if err != nil {
		return t.invalidArgs(err)
	}
	caller := req.Caller
	var bound map[string]any
	if len(t.callerParams) > 0 {
		var msg string
		if bound, msg = t.bindCaller(caller); msg != "" {
			return toolError(msg)
		}
	}
	var inputs map[string]any
	var rounds *ask.HandlerRounds
	if t.asks != nil || t.asksByRounds(&req.Answers) {
		var done *mcp.CallToolResult
		if inputs, rounds, done = t.resolveAsks(ctx, args, caller, bound, &req.Answers, protoErr); done != nil {
			return done
		}
	}
	for k, v := range bound {
		args[k] = v
	}
	if t.cache != nil {
		// After validation, binding and the asks, which the key covers;
		// before the limits, which a hit does not need (engine/cache).
		var hit *mcp.CallToolResult
		if hit, fill, cacheStatus = t.cache.Lookup(ctx, t.Def.Name, args, inputs, cacheCaller(t.cache, caller), budget); hit != nil {
			return hit
		}
	}
	release, refusal := t.limits.Admit(ctx, t.Def.Name, caller, budget)
	if refusal != "" {
		return toolError(refusal)
	}
	defer release()
	if t.replay != nil && req.Answers.State != "" {
		// Admitted and about to run: the requestState is spent now
		// (ask.Replay), not before a limit refused the call.
		if err := t.replay.Claim(ctx, req.Answers.State, budget); err != nil {
			return stateRefused(t.Def.Name, err, protoErr)
		}
	}
	ctx, cancel := t.limits.WithTimeout(ctx)
	defer cancel()
	ask := callAsk{client: req.Answers.ClientAsker(), rounds: rounds, progress: req.Progress != nil, log: req.Log != nil}
	if req.Tasks && t.cache == nil {
		ask.task = &req.Task
	}
	return t.run(ctx, args, inputs, progress, log, ask, protoErr)
}

// run is call once the arguments are valid and the call admitted; a
// protocol error goes to *protoErr, as in call.
func (t *Tool) run(ctx context.Context, args, inputs map[string]any, progress ProgressFunc, log LogFunc, asking callAsk, protoErr *error) *mcp.CallToolResult {
	if t.logs != nil {
		t.sendLogs(true, map[string]any{"args": args}, log)
	}
	if t.progress != nil {
		if err := t.progress.run(ctx, progress); err != nil {
			return t.failed(ctx, err, false)
		}
	}
	var ectx *hcl.EvalContext
	if t.needsEval {
		ectx = t.scope.CallContextInputs(args, inputs)
		adapter.BindContext(ectx, ctx) // a long for expression stops at the timeout
	}
	var out *adapter.Output
	if t.handler != nil {
		var err error
		if out, err = t.callAdapter(ctx, args, ectx, progress, log, asking); err != nil {
			var me *adapter.MissingCapabilityError
			if asking.rounds != nil && errors.As(err, &me) {
				// As for the ask blocks: the client is told, by the
				// protocol's error, what it must declare.
				*protoErr = &ask.MissingCapabilityError{What: "tool " + t.Def.Name, Asks: me.Asks, Capabilities: me.Capabilities, Message: me.Message}
				return toolError(me.Message)
			}
			var tf *adapter.TaskFailedError
			if errors.As(err, &tf) { // the backend's task failed (taskrelay.go)
				*protoErr = tf
				return toolError(tf.Message)
			}
			return t.failed(ctx, err, true)
		}
		if out.InputRequired != nil {
			return t.inputRequired(asking.rounds, out.InputRequired)
		}
		if out.Task != nil {
			return t.handOver(asking.task, out.Task)
		}
	}
	if t.logs != nil {
		t.logResult(args, out, log)
	}
	res, err := t.shape(args, inputs, out, ectx)
	if err != nil {
		return t.errorf(err)
	}
	return res
}

func noProgress(float64, float64, string) {}

func noLog(string, string) {}

// recoverCall turns a panic of a call into a tool error.
func (t *Tool) recoverCall(res **mcp.CallToolResult) {
	if r := recover(); r != nil {
		slog.Error("panic in tool call", "tool", t.Def.Name, "panic", t.redact.String(fmt.Sprint(r)), "stack", string(debug.Stack()))
		*res = toolError(fmt.Sprintf("internal error in tool %s; the server log has details", t.Def.Name))
	}
}

// redactProgress redacts progress messages, which can come from a
// program's output (the shell adapter's progress block): they reach the
// client too.
func (t *Tool) redactProgress(report ProgressFunc) ProgressFunc {
	r := t.redact
	return func(p, total float64, msg string) { report(p, total, r.String(msg)) }
}

func (t *Tool) invalidArgs(err error) *mcp.CallToolResult {
	return toolError(fmt.Sprintf("invalid arguments for tool %s: %v", t.Def.Name, err))
}

func (t *Tool) errorf(err error) *mcp.CallToolResult {
	return toolError(fmt.Sprintf("tool %s: %v", t.Def.Name, err))
}

// failed is the tool error of a progress block or, with adapter, an
// adapter that failed.
func (t *Tool) failed(ctx context.Context, err error, adapter bool) *mcp.CallToolResult {
	if adapter && unavailable(err) {
		return t.errorf(err) // what failed, not the timeout that ended the wait
	}
	if msg := t.limits.TimedOut(ctx, t.Def.Name); msg != "" {
		return toolError(msg)
	}
	if adapter && ctx.Err() != nil {
		return toolError(fmt.Sprintf("tool %s: cancelled: %v", t.Def.Name, err))
	}
	return t.errorf(err)
}

// unavailable reports whether err is an adapter's failure to reach its
// backend at all (adapter.UnavailableError).
func unavailable(err error) bool {
	var u *adapter.UnavailableError
	return errors.As(err, &u)
}

// resolveAsks answers the tool's ask blocks: their inputs, or the result
// to answer with instead of running; and, for a client asked by
// input_required rounds, what its adapter's rounds need (nil otherwise).
// The requestState is bound to the tool, its arguments, the caller and
// what is bound from it.
func (t *Tool) resolveAsks(ctx context.Context, args map[string]any, caller *principal.Principal, bound map[string]any, in *ask.Answers, protoErr *error) (map[string]any, *ask.HandlerRounds, *mcp.CallToolResult) {
	bind := requeststate.BindCaller("tool", t.Def.Name, args, callerID(caller), bound)
	st, err := in.Open(bind)
	out := &ask.Outcome{}
	if err == nil && t.asks != nil {
		out, err = t.asks.ResolveFrom(ctx, args, bind, st, in)
	}
	if done := t.askFailed(err, out, protoErr); done != nil {
		return nil, nil, done
	}
	if !t.asksByRounds(in) {
		return out.Inputs, nil, nil
	}
	askRounds := 0
	if t.asks != nil {
		askRounds = t.asks.Rounds
	}
	return out.Inputs, ask.NewHandlerRounds(askRounds, bind, st, out.Inputs, in), nil
}

// askFailed is the result a call answers with when its asks did not give
// every input: an error, a refusal, or open questions; nil when they did.
func (t *Tool) askFailed(err error, out *ask.Outcome, protoErr *error) *mcp.CallToolResult {
	var se *ask.StateError
	var me *ask.MissingCapabilityError
	var ae *ask.AnswerError
	var nv *ask.NoValidAnswer
	switch {
	case errors.As(err, &se) || errors.As(err, &me):
		*protoErr = err
		return toolError(err.Error())
	case errors.As(err, &ae):
		return toolError(fmt.Sprintf("tool %s did not run: %v", t.Def.Name, err))
	case errors.As(err, &nv):
		return toolError(fmt.Sprintf("tool %s: %v; it did not run", t.Def.Name, err))
	case err != nil:
		return t.errorf(err)
	case out.Declined != "":
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Declined}}}
	case out.Requests != nil:
		return &mcp.CallToolResult{InputRequests: out.Requests, RequestState: out.State}
	}
	return nil
}

func (t *Tool) callAdapter(ctx context.Context, args map[string]any, ectx *hcl.EvalContext, progress ProgressFunc, log LogFunc, ask callAsk) (*adapter.Output, error) {
	actx, span := t.adapterSpan(ctx)
	req := &adapter.Request{Tool: t.Def.Name, Args: args, Eval: ectx, Progress: progress, Log: log, Client: ask.client,
		ProgressWanted: ask.progress, LogWanted: ask.log, Tasks: ask.task != nil}
	if t.lendsBuffers() {
		req.Buffers = resultbuf.From(ctx)
	}
	if ask.rounds != nil {
		req.Rounds = &ask.rounds.Req
	}
	out, err := t.handler.Call(actx, req)
	endAdapterSpan(span, err)
	if err == nil && out == nil {
		out = &adapter.Output{}
	}
	return out, err
}

// lendsBuffers reports whether the adapter may build the result in the
// buffers the call's writer lends (engine/resultbuf): only when nothing
// but the answer holds the result. A cached result is stored; the
// expressions of a result or logs block may keep part of a text (a
// substring shares its bytes) in the result or a log record.
func (t *Tool) lendsBuffers() bool {
	return t.cache == nil && t.result == nil && t.logs == nil
}

// logResult sends the log records of the tool's logs block after a call.
func (t *Tool) logResult(args map[string]any, out *adapter.Output, log LogFunc) {
	env := map[string]any{"args": args}
	if out != nil {
		for k, v := range out.Vars {
			env[k] = v
		}
	}
	t.sendLogs(false, env, log)
}

func (p *progressSpec) run(ctx context.Context, report ProgressFunc) error {
	for i, step := range p.steps {
		if i > 0 && p.interval > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(p.interval):
			}
		}
		report(step, p.total, p.message)
	}
	return nil
}

// shape turns the adapter's output (nil for declarative tools) into the
// result the model sees.
func (t *Tool) shape(args, inputs map[string]any, out *adapter.Output, ectx *hcl.EvalContext) (*mcp.CallToolResult, error) {
	r := t.result
	// The expressions' environment: the adapter's variables and args. Only
	// built when an expression will run.
	var env map[string]any
	if r != nil && (r.errorWhen != nil || r.structured != nil || r.text != nil) {
		var vars map[string]any
		if out != nil {
			vars = out.Vars
		}
		env = make(map[string]any, len(vars)+1)
		for k, v := range vars {
			env[k] = v
		}
		env["args"] = args
		if t.asks != nil {
			env["inputs"] = inputs
		}
	}

	if r != nil && r.errorWhen != nil {
		v, err := r.errorWhen.Run(env)
		if err != nil {
			return nil, err
		}
		if truthy(v) {
			msg := "the tool reported an error"
			if r.errorMessage != nil {
				m, err := r.errorMessage.Run(env)
				if err != nil {
					return nil, err
				}
				msg = stringify(m)
			}
			return toolError(msg), nil
		}
	}

	if out != nil && out.Result != nil && (r == nil || (r.structured == nil && r.text == nil && len(r.contents) == 0)) {
		return t.passThrough(out.Result)
	}

	var structured map[string]any
	hasStructured := false
	if r != nil && r.structured != nil {
		v, err := r.structured.Run(env)
		if err != nil {
			return nil, err
		}
		structured, hasStructured = asObject(v), true
	} else if out != nil && out.Structured != nil {
		structured, hasStructured = out.Structured, true
	}

	n := 1
	if out != nil {
		n += len(out.Media)
	}
	if r != nil {
		n += len(r.contents)
	}
	res := &mcp.CallToolResult{Content: make([]mcp.Content, 0, n)}
	switch {
	case r != nil && r.text != nil:
		v, err := r.text.Run(env)
		if err != nil {
			return nil, err
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: stringify(v)})
	case out != nil && out.Text != "" && !(r != nil && r.structured != nil):
		res.Content = append(res.Content, &mcp.TextContent{Text: out.Text})
	case hasStructured:
		// Clients that do not read structuredContent still see the data,
		// as the spec recommends.
		b, err := json.Marshal(structured)
		if err != nil {
			return nil, fmt.Errorf("encoding structured result: %w", err)
		}
		// b is not written again: the text shares it rather than doubling
		// what the call holds.
		res.Content = append(res.Content, &mcp.TextContent{Text: unsafe.String(unsafe.SliceData(b), len(b))})
	}
	if out != nil {
		for _, m := range out.Media {
			res.Content = append(res.Content, media(m))
		}
	}
	if r != nil {
		for _, c := range r.contents {
			content, err := c.Eval(ectx)
			if err != nil {
				return nil, err
			}
			res.Content = append(res.Content, content)
		}
	}
	if hasStructured {
		res.StructuredContent = structured
	}
	if t.output != nil {
		if !hasStructured {
			return nil, fmt.Errorf("the tool declares an output_schema but produced no structured result")
		}
		if err := t.output.Validate(structured); err != nil {
			return nil, fmt.Errorf("the structured result does not match the tool's output_schema: %v", err)
		}
	}
	return res, nil
}

// passThrough is the result of an adapter that proxies an MCP server's
// tool (adapter.Output.Result): its content blocks, structuredContent and
// isError as they are, in a new result (redaction replaces contents, it
// must not change the adapter's). A tool's output_schema still holds.
func (t *Tool) passThrough(up *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	res := &mcp.CallToolResult{
		Content:           append(make([]mcp.Content, 0, len(up.Content)), up.Content...),
		StructuredContent: up.StructuredContent,
		IsError:           up.IsError,
	}
	if t.output != nil && !up.IsError {
		structured, ok := up.StructuredContent.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the tool declares an output_schema but the upstream result has no structured content object")
		}
		if err := t.output.Validate(structured); err != nil {
			return nil, fmt.Errorf("the structured result does not match the tool's output_schema: %v", err)
		}
	}
	return res, nil
}

func media(m adapter.Media) mcp.Content {
	if len(m.MIMEType) >= 6 && m.MIMEType[:6] == "audio/" {
		return &mcp.AudioContent{Data: m.Data, MIMEType: m.MIMEType}
	}
	return &mcp.ImageContent{Data: m.Data, MIMEType: m.MIMEType}
}

// asObject makes a structured result an object, as structuredContent must
// be for clients of the 2025 protocol: anything else is wrapped.
func asObject(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"result": v}
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	}
	return true
}

func stringify(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// rawJSON encodes a schema once. The values come from JSON or HCL and always
// encode.
func rawJSON(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encoding a schema: %v", err))
	}
	return b
}

// refuseCallerArgs refuses arguments that try to set a caller-bound param,
// with a message naming it: the schema's additionalProperties: false would
// refuse them too, but as an unknown argument, which does not tell the
// model why.
func (t *Tool) refuseCallerArgs(raw json.RawMessage) string {
	if len(t.callerParams) == 0 || len(raw) == 0 {
		return ""
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return "" // not an object: the validator says so
	}
	for _, cp := range t.callerParams {
		if _, ok := keys[cp.Name]; ok {
			return fmt.Sprintf("invalid arguments for tool %s: %s is set from the authenticated caller; do not pass it", t.Def.Name, cp.Name)
		}
	}
	return ""
}

// bindCaller returns the values of the caller-bound params, from p,
// checked against their declared rules; or the tool error text when p
// (nil for the local user) lacks what a param needs.
func (t *Tool) bindCaller(p *principal.Principal) (map[string]any, string) {
	bound := make(map[string]any, len(t.callerParams))
	for _, cp := range t.callerParams {
		v, ok := p.Lookup(cp.Path)
		if !ok || v == nil {
			if cp.Path == "name" {
				return nil, fmt.Sprintf("tool %s needs an authenticated caller", t.Def.Name)
			}
			return nil, fmt.Sprintf("tool %s needs an authenticated caller with %s", t.Def.Name, cp.What())
		}
		x, err := cp.Bind(v)
		if err != nil {
			return nil, fmt.Sprintf("tool %s: %v", t.Def.Name, err)
		}
		bound[cp.Name] = x
	}
	return bound, ""
}
