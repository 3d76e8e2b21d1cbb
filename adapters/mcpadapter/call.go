package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

const (
	defaultMaxOutput = 1 << 20
	maxMaxOutput     = 32 << 20
)

// handler is one tool's mcp block: a call of one upstream tool.
type handler struct {
	tool     string // mcpd's tool name, for messages
	upTool   string // the upstream's tool name
	up       *upstream
	fixed    []fixedArg // evaluated per call; they override the model's
	forward  bool       // pass the validated arguments on (default)
	maxBytes int64
	// readsVars: the tool has a result or log block (ToolBlock.ReadsVars);
	// without one its Vars, a copy of the whole result, are not made.
	readsVars bool
}

type fixedArg struct {
	name string
	expr hcl.Expression
}

// Vars are the variables a result block sees: the upstream's result.
func (h *handler) Vars() []string { return []string{"content", "structured", "is_error", "text"} }

// Traits: only arguments computed per call need the evaluation context;
// the upstream's elicitation, sampling and roots requests go to the
// call's client (relay.go); one upstream result is capped; it acts as the
// caller when the upstream's identity is the caller's (identity.go).
func (h *handler) Traits() adapter.Traits {
	return adapter.Traits{ReadsEval: len(h.fixed) > 0, RelaysClientRequests: true, MaxOutputBytes: h.maxBytes,
		ActsAsCaller: h.up != nil && h.up.perCaller()}
}

// CompileTool decodes a tool's mcp block.
func (a *Adapter) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	d := adapter.NewDecoder(b.Scope)
	content, ok := d.Content(b.Body, toolSchema)
	if !ok {
		return nil, d.Diags
	}
	attrs := content.Attributes
	h := &handler{tool: b.Tool, upTool: b.Tool, forward: true, maxBytes: defaultMaxOutput, readsVars: b.ReadsVars}
	if attr := attrs["server"]; attr != nil {
		h.up, _ = adapter.LookupBackend[*upstream](d, b, attr, "mcp_server", `mcp_server %q { command = ["..."] }`)
	}
	if attr := attrs["tool"]; attr != nil {
		if s, ok := d.String(attr, "tool"); ok {
			if s == "" {
				d.Errorf(attr.Expr.Range(), "Invalid tool", "tool is the upstream tool's name; it must not be empty.")
			}
			h.upTool = s
		}
	}
	if attr := attrs["arguments"]; attr != nil {
		h.fixed = decodeArguments(d, attr)
	}
	if attr := attrs["max_output_bytes"]; attr != nil {
		if n, ok := d.Int(attr, "max_output_bytes", 1, maxMaxOutput); ok {
			h.maxBytes = n
		}
	}
	if d.HasErrors() {
		return nil, d.Diags
	}
	return h, d.Diags
}

// decodeArguments reads `arguments = { name = expr, ... }`: each value is
// evaluated per call (it may use args) and set in the upstream's
// arguments, over what the model sent.
func decodeArguments(d *adapter.Decoder, attr *hcl.Attribute) []fixedArg {
	obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		d.Errorf(attr.Expr.Range(), "Invalid arguments", `arguments is an object of the upstream's argument names and their values, such as { owner = "acme", repo = args.repo }.`)
		return nil
	}
	var out []fixedArg
	seen := map[string]bool{}
	for _, item := range obj.Items {
		key, diags := item.KeyExpr.Value(nil)
		if diags.HasErrors() || key.IsNull() || !key.Type().Equals(ctyString) {
			d.Errorf(item.KeyExpr.Range(), "Invalid arguments", "An argument's name must be a literal string.")
			continue
		}
		name := key.AsString()
		if seen[name] {
			d.Errorf(item.KeyExpr.Range(), "Duplicate argument", "The argument %q is set twice.", name)
			continue
		}
		seen[name] = true
		if d.Add(d.Scope.Check(item.ValueExpr)) {
			out = append(out, fixedArg{name: name, expr: item.ValueExpr})
		}
	}
	return out
}

// Call calls the upstream tool and returns its result as it is.
func (h *handler) Call(ctx context.Context, req *adapter.Request) (*adapter.Output, error) {
	args := make(map[string]any, len(req.Args)+len(h.fixed))
	if h.forward {
		for k, v := range req.Args {
			args[k] = v
		}
	}
	for _, f := range h.fixed {
		v, err := adapter.Eval(f.expr, req.Eval)
		if err != nil {
			return nil, fmt.Errorf("argument %s: %w", f.name, err)
		}
		if v == nil {
			delete(args, f.name) // an optional argument that was not given
			continue
		}
		args[f.name] = v
	}
	if tc := adapter.TaskCallOf(ctx); tc != nil || req.Tasks {
		// Relayed task for task when the upstream declared tasks (taskrelay.go).
		if out, ok, err := h.up.callAsTask(ctx, h, args, req, tc); ok {
			return out, err
		}
	}
	res, ask, err := h.up.callTool(ctx, h.upTool, args, req)
	if err != nil {
		return nil, err
	}
	if ask != nil {
		return &adapter.Output{InputRequired: ask}, nil
	}
	if n := resultSize(res); n > h.maxBytes {
		return nil, fmt.Errorf("the upstream's result is %d bytes, over this tool's max_output_bytes %d", n, h.maxBytes)
	}
	out := &adapter.Output{Result: res}
	if h.readsVars {
		out.Vars = resultVars(res)
	}
	return out, nil
}

// callTool calls one upstream tool, relaying its progress and its
// questions to the client of req (roundTrip).
func (u *upstream) callTool(ctx context.Context, name string, args map[string]any, req *adapter.Request) (*mcp.CallToolResult, *adapter.InputRequired, error) {
	x := &exchange{kind: "tool", name: name, params: &mcp.CallToolParams{Name: name, Arguments: args},
		client: req.Client, rounds: req.Rounds}
	if req.ProgressWanted {
		x.progress = req.Progress
	}
	if req.LogWanted {
		x.log = req.Log // the upstream's log records (logging.go)
	}
	res, ask, err := u.roundTrip(ctx, x)
	if err != nil || ask != nil {
		return nil, ask, err
	}
	r := res.(*mcp.CallToolResult)
	u.gate.admitToolResult(name, r) // its links' names and URIs reach screens (admit.go)
	return r, nil, nil
}

// roundTrip sends one request to the upstream (a tool call or a prompt
// get), relaying its questions to the client of x. A client asked by
// input_required rounds (x.rounds: a 2026-07-28 client) gets the
// questions as the answer (the *adapter.InputRequired), and its retry
// continues the request (rounds.go).
func (u *upstream) roundTrip(ctx context.Context, x *exchange) (mcp.Result, *adapter.InputRequired, error) {
	u.calls.Add(1)
	ctx = withHTTPAnswer(ctx) // for callError
	params := x.params
	round := 1
	if x.rounds != nil && x.rounds.State != "" {
		st, err := u.openRound(x, x.rounds.State)
		if err != nil {
			u.failures.Add(1)
			return nil, nil, err
		}
		if st.Held != "" {
			return u.resume(ctx, x, st)
		}
		params, round = answered(params, x.rounds.Responses, st.State), st.Round+1
	} else if x.rounds != nil {
		params = answered(params, x.rounds.Responses, "") // sent with a first request: the upstream's to use or ignore
	}
	if u.user != nil {
		if err := u.authorizeCaller(ctx, x); err != nil { // userauth.go
			u.failures.Add(1)
			return nil, nil, err
		}
	}
	ctx, tok, err := u.authorize(ctx)
	if err != nil {
		return nil, nil, err
	}
	cs, release, err := u.sessionFor(ctx, tok)
	if err != nil {
		u.failures.Add(1)
		return nil, nil, err
	}
	held := false
	defer func() {
		if !held {
			release()
		}
	}()
	owner := ownerOf(ctx) // whose the upstream's messages of this request are (relay.go)
	// The upstream sees what the calling client can answer, not what mcpd
	// could relay: it asks only that (or refuses, as mcpd would), whether it
	// asks by rounds or within the request.
	switch {
	case x.rounds != nil:
		params.SetMeta(mcp.Meta{mcp.MetaKeyClientCapabilities: u.fast.capsMeta(x.rounds.Caps)})
	case x.client != nil:
		params.SetMeta(mcp.Meta{mcp.MetaKeyClientCapabilities: u.fast.capsMeta(x.client.Capabilities())})
	}
	if x.rounds != nil && protocolOf(cs) < "2026-07-28" {
		// A 2025-11-25 upstream asks within the request: hold it for the
		// client's answers (held.go), on a pooled session when the
		// upstream can have several and the client can answer.
		var s *pooledSession
		if u.pooled(cs, x.rounds.Caps, x.log != nil) {
			if s, err = u.pool.take(ctx); err != nil {
				return nil, nil, err
			}
		}
		h := u.startHeld(owner, cs, s, x, params, tok)
		// The caller's session is in use until the held call ends,
		// whenever its client answers.
		held = true
		go func() { <-h.done; release() }()
		return u.await(ctx, h)
	}
	// Progress and log records only when the client will receive them: a
	// request that asks for neither is one a 2026-07-28 upstream answers
	// cheaply (mcpd's own fast path, engine/serve/fastpath.go).
	if x.log != nil && modernSession(cs) {
		meta := params.GetMeta()
		if meta == nil {
			meta = mcp.Meta{}
		}
		meta[mcp.MetaKeyLogLevel] = string(upstreamLogLevel)
		params.SetMeta(meta)
	}
	if x.progress != nil {
		token, forget := u.relay.progressToken(x.progress)
		defer forget()
		params.SetProgressToken(token)
	}
	if !modernSession(cs) && u.pooled(cs, capabilitiesOf(x.client), x.log != nil) {
		// The upstream's requests and log records are this request's
		// when they come on a session it has to itself (pool.go).
		s, err := u.pool.take(ctx)
		if err != nil {
			return nil, nil, err
		}
		res, cs, err := u.pool.call(ctx, s, params, func(ctx context.Context, cs *mcp.ClientSession) (context.Context, func()) {
			return u.relay.withRelay(ctx, &relayCall{owner: owner, client: x.client, session: cs, own: true, log: x.log})
		})
		if err != nil {
			u.failures.Add(1)
			return nil, nil, u.callError(ctx, cs, x.name, err)
		}
		redactResult(res, tok)
		return res, nil, nil
	}
	// A 2026-07-28 upstream's log records are this request's when they
	// come on a session it has to itself; its questions come in its
	// results, on any session.
	own := false
	var sendErr error // the last request's
	if modernSession(cs) && u.pooled(cs, nil, x.log != nil) {
		s, err := u.pool.take(ctx)
		if err != nil {
			return nil, nil, err
		}
		cs, own = s.cs, true
		defer func() { u.pool.giveBack(ctx, s, cleanEnd(ctx, sendErr)) }()
	}
	rctx, forget := u.relay.withRelay(ctx, &relayCall{owner: owner, client: x.client, session: cs, own: own, log: x.log})
	defer forget()
	for ; ; round++ {
		res, err := u.sendOnce(rctx, cs, params) // fastcall.go
		sendErr = err
		if err != nil {
			u.failures.Add(1)
			return nil, nil, u.callError(ctx, cs, x.name, err)
		}
		questions, state, asked := questionsOf(res)
		if !asked {
			redactResult(res, tok)
			return res, nil, nil
		}
		// A 2026-07-28 upstream asks by input_required: its questions are
		// relayed like a 2025-11-25 upstream's requests, and the request
		// retried with the answers and the upstream's requestState.
		if round >= maxInputRounds {
			u.failures.Add(1)
			return nil, nil, u.tooManyRounds(x.kind, x.name, round)
		}
		if x.rounds != nil {
			ask, err := u.askByRounds(x, round, questions, state)
			if err != nil {
				u.failures.Add(1)
			}
			return nil, ask, err
		}
		responses, err := u.relay.answerInputs(rctx, questions)
		if err != nil {
			u.failures.Add(1)
			return nil, nil, err
		}
		params = answered(params, responses, state)
	}
}

// sessionFor is the session of the call under ctx, whose token is tok
// (nil: the upstream has no identity): its caller's own with a per-caller
// identity (callers.go), the supervisor's otherwise. release ends the
// call's use of it.
func (u *upstream) sessionFor(ctx context.Context, tok *callToken) (cs *mcp.ClientSession, release func(), err error) {
	if tok == nil || !u.perCaller() {
		cs, err = u.session(ctx)
		return cs, func() {}, err
	}
	return u.callers.get(ctx, tok)
}

// maxInputRounds bounds the input_required rounds of one upstream call.
const maxInputRounds = 10

// callError says why a call failed, in terms the model can act on; a
// broken transport makes the supervisor connect again.
func (u *upstream) callError(ctx context.Context, cs *mcp.ClientSession, name string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rpcErr, ok := upstreamRefusal(err); ok {
		msg := fmt.Sprintf("upstream %s refused %s: %s", u.cfg.name, name, u.redact(rpcErr.Message))
		if rpcErr.Code == mcp.CodeMissingRequiredClientCapabilities {
			// The calling client lacks what the upstream's tool must ask
			// (its capabilities went with the call): the client is told
			// so in the protocol's terms, as by mcpd's own tools.
			return missingCapabilities(msg, rpcErr.Data)
		}
		// The upstream answered with a protocol error (an unknown tool,
		// arguments it refused): its message is what the model needs.
		return errors.New(msg)
	}
	if rpcErr := new(jsonrpc.Error); !errors.As(err, &rpcErr) {
		// Not the SDK's "rejected by transport", after which it keeps the
		// session: the transport is broken.
		u.broken(cs)
	}
	return fmt.Errorf("upstream %s failed on %s: %s", u.cfg.name, name, u.transportFailure(ctx, err))
}

// missingCapabilities is an upstream's -32021 error as mcpd's: data is
// its {"requiredCapabilities": {...}}.
func missingCapabilities(msg string, data json.RawMessage) error {
	var d struct {
		Required map[string]any `json:"requiredCapabilities"`
	}
	_ = json.Unmarshal(data, &d)
	caps := make([]string, 0, len(d.Required))
	for k, v := range d.Required {
		if ext, ok := v.(map[string]any); ok && k == "extensions" && len(ext) > 0 && len(ext) <= maxTaskQuestions {
			// Each extension by its identifier (ask.MissingCapabilityError).
			for id := range ext {
				if validTaskID(id) {
					caps = append(caps, "extensions:"+id)
				}
			}
			continue
		}
		caps = append(caps, k)
	}
	sort.Strings(caps)
	return &adapter.MissingCapabilityError{Message: msg, Capabilities: caps}
}

// resultSize is about what a result holds in memory: its texts, binary
// data and structured content.
func resultSize(res *mcp.CallToolResult) int64 {
	var n int64
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			n += int64(len(c.Text))
		case *mcp.ImageContent:
			n += int64(len(c.Data))
		case *mcp.AudioContent:
			n += int64(len(c.Data))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				n += int64(len(c.Resource.Text) + len(c.Resource.Blob))
			}
		default:
			n += 256
		}
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			n += int64(len(b))
		}
	}
	return n
}

// resultVars are the variables a result block reads: the upstream's
// content blocks (as JSON objects), structuredContent, isError, and its
// text blocks joined.
func resultVars(res *mcp.CallToolResult) map[string]any {
	content := make([]any, 0, len(res.Content))
	text := ""
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if text != "" {
				text += "\n"
			}
			text += t.Text
		}
		b, err := json.Marshal(c)
		if err != nil {
			continue
		}
		var m any
		if json.Unmarshal(b, &m) == nil {
			content = append(content, m)
		}
	}
	return map[string]any{"content": content, "structured": res.StructuredContent, "is_error": res.IsError, "text": text}
}

// capabilitiesOf is what client declared; nil without a client.
func capabilitiesOf(client adapter.ClientAsker) *mcp.ClientCapabilities {
	if client == nil {
		return nil
	}
	return client.Capabilities()
}

// cleanEnd reports whether a request that ended with err left its session
// fit for another: it was answered (a result, or the upstream's protocol
// error), and not cancelled.
func cleanEnd(ctx context.Context, err error) bool {
	var rpcErr *jsonrpc.Error
	return (err == nil || errors.As(err, &rpcErr)) && ctx.Err() == nil
}
