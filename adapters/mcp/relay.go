package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Requests an upstream sends back to its client while a call runs
// (elicitation/create, sampling/createMessage, roots/list) are relayed to
// the mcpd client that made the call, through the engine's ClientAsker
// (the same Answerer that asks for mcpd's own ask blocks), when that
// client declared the capability; otherwise the upstream gets an error
// that says why, and its tool decides what to do without the answer.
//
// Which call a request belongs to: on the 2025-11-25 protocol a server's
// request carries no reference to the call that caused it, and the SDK
// hands it to the client session's handlers with the connection's
// context. A request is relayed only when it can be told apart: when the
// handler runs within the call (the SDK's multi-round-trip client does
// that for a 2026-07-28 upstream), when it comes on a session the call
// has to itself (a call of an HTTP upstream whose client can be asked
// runs on a pooled session: pool.go), or when exactly one call of this
// upstream is in flight on the shared session (a stdio upstream's calls,
// and those whose client cannot be asked). With several calls in flight
// there the request is refused rather than shown to a user who may not be
// the one it was meant for.

// relayCall is one upstream call that requests may be relayed to.
type relayCall struct {
	ctx context.Context
	// client asks the caller within the call; held, for a caller asked by
	// input_required rounds, holds the call until its retry (held.go).
	// Neither: the caller cannot be asked.
	client adapter.ClientAsker
	held   *heldCall
	// session, when not nil, is the call's own session to the upstream:
	// the requests that come on it are this call's, and no other's.
	session *mcp.ClientSession
	// log receives the upstream's log records that are this call's; nil
	// when its client will not receive them.
	log func(level, message string)
	// asking counts the call's requests being relayed: a session whose
	// call ended with one still out is not pooled again (pool.go).
	asking atomic.Int32
}

type relayCtxKey struct{}

// relays are the upstream's calls in flight.
type relays struct {
	mu    sync.Mutex
	calls map[*relayCall]struct{}
}

// withRelay registers a call in flight, and returns its context (which
// carries it) and the function that forgets it.
// log, when not nil, receives the upstream's log records of the call
// (logging.go).
func (u *upstream) withRelay(ctx context.Context, client adapter.ClientAsker, held *heldCall, session *mcp.ClientSession, log func(level, message string)) (context.Context, func()) {
	c := &relayCall{ctx: ctx, client: client, held: held, session: session, log: log}
	u.relays.mu.Lock()
	if u.relays.calls == nil {
		u.relays.calls = map[*relayCall]struct{}{}
	}
	u.relays.calls[c] = struct{}{}
	u.relays.mu.Unlock()
	return context.WithValue(ctx, relayCtxKey{}, c), func() {
		if log != nil {
			// Records a stdio upstream wrote before its result are
			// relayed before the call returns.
			u.pending.drain(logPendingKey, progressDrainWait)
		}
		u.relays.mu.Lock()
		delete(u.relays.calls, c)
		u.relays.mu.Unlock()
	}
}

// relayOf is the call ctx carries (withRelay), or nil.
func relayOf(ctx context.Context) *relayCall {
	c, _ := ctx.Value(relayCtxKey{}).(*relayCall)
	return c
}

// target is the call a request from the upstream, which came on session,
// belongs to.
func (u *upstream) target(ctx context.Context, method string, session *mcp.ClientSession) (*relayCall, error) {
	if c := relayOf(ctx); c != nil {
		return c, nil
	}
	u.mu.Lock()
	shared := u.cs
	u.mu.Unlock()
	u.relays.mu.Lock()
	defer u.relays.mu.Unlock()
	var found *relayCall
	n := 0
	for c := range u.relays.calls {
		if c.session != nil {
			if c.session == session {
				return c, nil
			}
			continue // its requests come on its own session
		}
		found, n = c, n+1
	}
	if session != nil && session != shared {
		// A pooled session between calls, or the shared session of
		// before a reconnection: no call in flight is its.
		return nil, fmt.Errorf("mcpd cannot relay %s from upstream %s: no tool call of it runs on the session the request came on", method, u.cfg.name)
	}
	switch n {
	case 0:
		return nil, fmt.Errorf("mcpd relays %s from upstream %s only while one of its tool calls or prompt gets runs, and none does", method, u.cfg.name)
	case 1:
		return found, nil
	}
	return nil, fmt.Errorf("mcpd cannot relay %s from upstream %s: %d of its tool calls and prompt gets are in flight and the request does not say which one it belongs to", method, u.cfg.name, n)
}

// need is what relaying one request takes of the client: its method (for
// messages) and the capability it must have declared.
type need struct {
	method, capName string
	has             func(*mcp.ClientCapabilities) bool
}

// needOf is the need of one request of the upstream.
func needOf(req mcp.InputRequest) (need, bool) {
	switch p := req.(type) {
	case *mcp.ElicitParams:
		if p != nil && p.Mode == "url" {
			return need{"elicitation/create", "elicitation.url", func(c *mcp.ClientCapabilities) bool {
				return c != nil && c.Elicitation != nil && c.Elicitation.URL != nil
			}}, true
		}
		return need{"elicitation/create", "elicitation", func(c *mcp.ClientCapabilities) bool {
			return c != nil && c.Elicitation != nil // {} means form
		}}, true
	case *mcp.CreateMessageParams:
		return need{"sampling/createMessage", "sampling", func(c *mcp.ClientCapabilities) bool {
			return c != nil && c.Sampling != nil
		}}, true
	case *mcp.CreateMessageWithToolsParams: // how the SDK decodes a 2026-07-28 upstream's sampling question
		if p != nil && (len(p.Tools) > 0 || p.ToolChoice != nil) {
			return need{"sampling/createMessage", "sampling.tools", func(c *mcp.ClientCapabilities) bool {
				return c != nil && c.Sampling != nil && c.Sampling.Tools != nil
			}}, true
		}
		return need{"sampling/createMessage", "sampling", func(c *mcp.ClientCapabilities) bool {
			return c != nil && c.Sampling != nil
		}}, true
	case *mcp.ListRootsParams:
		return need{"roots/list", "roots", func(c *mcp.ClientCapabilities) bool {
			return c != nil && (c.RootsV2 != nil || c.Roots.ListChanged)
		}}, true
	}
	return need{}, false
}

// check refuses a request the client did not declare the capability for.
func (u *upstream) check(req mcp.InputRequest, caps *mcp.ClientCapabilities) error {
	n, ok := needOf(req)
	if !ok {
		return fmt.Errorf("mcpd cannot relay %T from upstream %s", req, u.cfg.name)
	}
	if !n.has(caps) {
		return &adapter.MissingCapabilityError{
			Message:      fmt.Sprintf("mcpd cannot relay %s from upstream %s: the calling client did not declare the %s capability", n.method, u.cfg.name, n.capName),
			Asks:         []string{n.method},
			Capabilities: []string{strings.SplitN(n.capName, ".", 2)[0]},
		}
	}
	return nil
}

// capsMeta is a client's capabilities as the _meta of a 2026-07-28
// request carries them (io.modelcontextprotocol/clientCapabilities), so
// that the upstream asks only what the calling client can answer.
// mcp.ClientCapabilities always encodes "roots"; it is declared here only
// when the client declared it.
func capsMeta(c *mcp.ClientCapabilities) map[string]any {
	m := map[string]any{}
	if c == nil {
		return m
	}
	if b, err := json.Marshal(c); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	delete(m, "roots")
	switch {
	case c.RootsV2 != nil:
		m["roots"] = c.RootsV2
	case c.Roots.ListChanged:
		m["roots"] = map[string]any{"listChanged": true}
	}
	return m
}

// relay puts one request of the upstream to the client of the call it
// belongs to. The question lasts as long as both the upstream's request
// and the call.
func (u *upstream) relay(ctx context.Context, session *mcp.ClientSession, req mcp.InputRequest) (mcp.InputResponse, error) {
	n, _ := needOf(req)
	if err := u.checkForm(req); err != nil {
		return nil, err
	}
	c, err := u.target(ctx, n.method, session)
	if err != nil {
		return nil, err
	}
	c.asking.Add(1)
	defer c.asking.Add(-1)
	if c.held != nil {
		if err := u.check(req, c.held.capabilities()); err != nil {
			return nil, err
		}
		resp, err := c.held.ask(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("relaying %s from upstream %s: %w", n.method, u.cfg.name, err)
		}
		return resp, nil
	}
	if c.client == nil {
		return nil, fmt.Errorf("mcpd cannot relay %s from upstream %s: the calling client cannot be asked while a tool or prompt runs; see docs/gateway.md", n.method, u.cfg.name)
	}
	if err := u.check(req, c.client.Capabilities()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	resp, err := c.client.Ask(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("relaying %s from upstream %s: %w", n.method, u.cfg.name, err)
	}
	return resp, nil
}

// onElicit relays an upstream's elicitation/create.
func (u *upstream) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	resp, err := u.relay(ctx, req.Session, req.Params)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("relaying elicitation/create from upstream %s: the client answered with %T", u.cfg.name, resp)
	}
	return r, nil
}

// onSample relays an upstream's sampling/createMessage.
func (u *upstream) onSample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	resp, err := u.relay(ctx, req.Session, req.Params)
	if err != nil {
		return nil, err
	}
	switch r := resp.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		// A 2026-07-28 client's answer in inputResponses decodes as the
		// form with a list of content blocks; the request (without
		// tools) takes one.
		if len(r.Content) == 1 {
			return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
		}
		return nil, fmt.Errorf("relaying sampling/createMessage from upstream %s: the client answered with %d content blocks, where the request takes one", u.cfg.name, len(r.Content))
	}
	return nil, fmt.Errorf("relaying sampling/createMessage from upstream %s: the client answered with %T", u.cfg.name, resp)
}

// relayRoots answers an upstream's roots/list with the calling client's
// roots: the SDK's client answers roots/list itself from a fixed list,
// so the request is taken before it gets there.
func (u *upstream) relayRoots(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		params, _ := req.GetParams().(*mcp.ListRootsParams)
		session, _ := req.GetSession().(*mcp.ClientSession)
		return u.onRoots(ctx, session, params)
	}
}

// onRoots relays an upstream's roots/list.
func (u *upstream) onRoots(ctx context.Context, session *mcp.ClientSession, params *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if params == nil {
		params = &mcp.ListRootsParams{}
	}
	resp, err := u.relay(ctx, session, params)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*mcp.ListRootsResult)
	if !ok {
		return nil, fmt.Errorf("relaying roots/list from upstream %s: the client answered with %T", u.cfg.name, resp)
	}
	return r, nil
}

// answerInputs answers the questions of one input_required round of a
// 2026-07-28 upstream, each relayed as the request it stands for.
func (u *upstream) answerInputs(ctx context.Context, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(reqs))
	for id, ir := range reqs {
		var resp mcp.InputResponse
		var err error
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			resp, err = u.onElicit(ctx, &mcp.ElicitRequest{Params: p})
		case *mcp.CreateMessageParams:
			resp, err = u.onSample(ctx, &mcp.CreateMessageRequest{Params: p})
		case *mcp.CreateMessageWithToolsParams: // how the SDK decodes every sampling input request
			var base *mcp.CreateMessageParams
			if base, err = samplingParams(p, u.cfg.name); err == nil {
				resp, err = u.onSample(ctx, &mcp.CreateMessageRequest{Params: base})
			}
		case *mcp.ListRootsParams:
			resp, err = u.onRoots(ctx, nil, p)
		default:
			err = fmt.Errorf("mcpd cannot relay %T from upstream %s", ir, u.cfg.name)
		}
		if err != nil {
			return nil, err
		}
		out[id] = resp
	}
	return out, nil
}
