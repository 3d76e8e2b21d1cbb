package mcpadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Requests an upstream sends back to its client while a call runs
// (elicitation/create, sampling/createMessage, roots/list) are relayed to
// the mcpd client that made the call, through the engine's ClientAsker
// (the same Answerer that asks for mcpd's own ask blocks), when that
// client declared the capability; otherwise the upstream gets an error
// that says why, and its tool decides what to do without the answer.
//
// Which call a request (or a log record, logging.go) belongs to: nothing
// of one caller's may reach another, so a message is relayed only to a
// live call it can be attributed to, and one of the same caller as every
// call it may belong to. On the 2025-11-25 protocol a server's request
// carries no reference to the call that caused it, and the SDK hands it
// to the client session's handlers with the connection's context; nor
// does a log record. So a message is attributed:
//
//   - when the handler runs within the call (the questions of a
//     2026-07-28 upstream's input_required rounds: answerInputs);
//   - by the session it came on, when that is a session the call has to
//     itself (a pooled session of an HTTP upstream, pool.go, which serves
//     the calls of one caller only);
//   - on a session shared by calls (a stdio upstream's one session, and
//     an HTTP upstream's for calls whose client can be asked nothing),
//     to the one call in flight on it, and only while every request that
//     ran on that session (calls, and what relays nothing back: sharedBy)
//     was the same caller's: a message sent after its call ended (an
//     upstream's tool may go on in the background) would otherwise reach
//     whichever other caller has a call in flight then.
//
// Everything else is dropped (a request gets an error that says why),
// counted (mcpd_upstream_unattributed_messages_total) and logged at a
// bounded rate: a message on a session no call of it is in flight on (a
// late one, on a pooled session back in the pool, or on the shared one),
// on a shared session that has served more than one caller, or with
// several calls in flight on the shared session.

// relayCall is one upstream call that requests may be relayed to.
type relayCall struct {
	ctx context.Context // the call's, set by withRelay
	// owner is the caller (ownerOf): a message is relayed only to a call
	// of the caller every call it may belong to was made by.
	owner string
	// client asks the caller within the call; held, for a caller asked by
	// input_required rounds, holds the call until its retry (held.go).
	// Neither: the caller cannot be asked.
	client adapter.ClientAsker
	held   *heldCall
	// session is the session to the upstream the call runs on; own, that
	// the call has it to itself (a pooled session): what comes on it is
	// this call's, and no other's.
	session *mcp.ClientSession
	own     bool
	// log receives the upstream's log records that are this call's; nil
	// when its client will not receive them.
	log func(level, message string)
	// asking counts the call's requests being relayed: a session whose
	// call ended with one still out is not pooled again (pool.go).
	asking atomic.Int32
}

type relayCtxKey struct{}

// relays are the upstream's calls in flight, and what the upstream sends
// that is theirs: requests (this file, held.go), progress (progress.go)
// and log records (logging.go), each relayed to the call it belongs to,
// or dropped and counted.
type relays struct {
	name      string // the upstream's, for errors
	log       *slog.Logger
	redact    func(string) string              // the upstream's secrets out of what is relayed
	checkForm func(req mcp.InputRequest) error // refuses a form mcpd does not relay (drop.go)

	mu    sync.Mutex
	calls map[*relayCall]struct{}
	// shared is who made the requests that ran on the latest shared
	// session.
	shared sharedOwners

	progressSeq atomic.Int64
	progress    sync.Map        // progress token (string) -> func(progress, total float64, msg string)
	pending     pendingProgress // progress (and log) notifications read but not yet relayed (progress.go)
	// unattributed counts what the upstream sent that no live call of
	// its caller could be told to own, and was dropped.
	unattributed unattributed
}

func newRelays(name string, log *slog.Logger, redact func(string) string, checkForm func(mcp.InputRequest) error) *relays {
	r := &relays{name: name, log: log, redact: redact, checkForm: checkForm}
	r.unattributed.log.Interval = dropLogInterval
	return r
}

// sharedOwners records the callers whose requests ran on one shared
// session, as much as attribution needs: the first, and whether there
// were others. It is not reset while the session lasts: an upstream may
// send what is a caller's at any time after that caller's request.
type sharedOwners struct {
	set     bool
	session *mcp.ClientSession
	owner   string
	mixed   bool
}

// add records a call of owner on session (which replaces an earlier one:
// the upstream reconnected).
func (o *sharedOwners) add(session *mcp.ClientSession, owner string) {
	switch {
	case !o.set || o.session != session:
		*o = sharedOwners{set: true, session: session, owner: owner}
	case o.owner != owner:
		o.mixed = true
	}
}

// oneCaller reports whether every call that ran on session was one
// caller's (false for a session it knows nothing of).
func (o *sharedOwners) oneCaller(session *mcp.ClientSession) bool {
	return o.set && o.session == session && !o.mixed
}

// withRelay registers c, a call in flight, and returns its context (which
// carries it) and the function that forgets it. c.log, when not nil,
// receives the upstream's log records of the call (logging.go).
func (r *relays) withRelay(ctx context.Context, c *relayCall) (context.Context, func()) {
	c.ctx = ctx
	r.mu.Lock()
	if r.calls == nil {
		r.calls = map[*relayCall]struct{}{}
	}
	r.calls[c] = struct{}{}
	if !c.own {
		r.shared.add(c.session, c.owner)
	}
	r.mu.Unlock()
	return context.WithValue(ctx, relayCtxKey{}, c), func() {
		if c.log != nil {
			// Records a stdio upstream wrote before its result are
			// relayed before the call returns.
			r.pending.drain(logPendingKey, progressDrainWait)
		}
		r.mu.Lock()
		delete(r.calls, c)
		r.mu.Unlock()
	}
}

// sharedBy records that a request of the caller under ctx that relays
// nothing back (a resource read, a completion, a subscription) runs on
// the shared session cs: what the upstream sends later may be that
// request's, and so the caller's.
func (r *relays) sharedBy(ctx context.Context, cs *mcp.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shared.add(cs, ownerOf(ctx))
}

// relayOf is the call ctx carries (withRelay), or nil.
func relayOf(ctx context.Context) *relayCall {
	c, _ := ctx.Value(relayCtxKey{}).(*relayCall)
	return c
}

// target is the call a request (or log record: method) from the upstream,
// which came on session, belongs to. What cannot be attributed is counted
// as dropped.
func (r *relays) target(ctx context.Context, method string, session *mcp.ClientSession) (*relayCall, error) {
	if c := relayOf(ctx); c != nil {
		return c, nil
	}
	c, why := r.attribute(session)
	if c != nil {
		return c, nil
	}
	r.dropped(method, why)
	return nil, fmt.Errorf("mcpd cannot relay %s from upstream %s: %s", method, r.name, why)
}

// attribute finds the call in flight that what came on session belongs
// to, or says why there is none.
func (r *relays) attribute(session *mcp.ClientSession) (*relayCall, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *relayCall
	n := 0
	for c := range r.calls {
		if c.session != session {
			continue
		}
		if c.own {
			return c, ""
		}
		found, n = c, n+1
	}
	switch {
	case n == 0:
		// A late message: of a pooled session between calls, of the
		// shared session with none of its calls in flight, or of the
		// shared session of before a reconnection.
		return nil, "none of its tool calls or prompt gets is in flight on the session it came on"
	case !r.shared.oneCaller(session):
		return nil, "the session it came on has served the calls of more than one caller, and it does not say which call it belongs to"
	case n > 1:
		return nil, fmt.Sprintf("%d of its tool calls and prompt gets are in flight and it does not say which one it belongs to", n)
	}
	return found, ""
}

// dropLogInterval bounds how often dropped messages are logged, per
// upstream: an upstream can send them as fast as it likes.
const dropLogInterval = 10 * time.Second

// unattributed counts, by kind, what an upstream sent that mcpd dropped
// because no live call of its caller could be told to be its owner.
type unattributed struct {
	requests, records, progress atomic.Int64
	log                         rate.Sometimes
}

// dropped counts one message (method) that could not be attributed, and
// logs it at a bounded rate.
func (r *relays) dropped(method, why string) {
	var n *atomic.Int64
	switch method {
	case "notifications/message":
		n = &r.unattributed.records
	case "notifications/progress":
		n = &r.unattributed.progress
	default:
		n = &r.unattributed.requests
	}
	n.Add(1)
	r.unattributed.log.Do(func() {
		r.log.Warn("dropped a message of the upstream that cannot be attributed to a call of its caller (logged at most every "+dropLogInterval.String()+")",
			"method", method, "reason", why,
			"requests", r.unattributed.requests.Load(), "records", r.unattributed.records.Load(), "progress", r.unattributed.progress.Load())
	})
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
func (r *relays) check(req mcp.InputRequest, caps *mcp.ClientCapabilities) error {
	n, ok := needOf(req)
	if !ok {
		return fmt.Errorf("mcpd cannot relay %T from upstream %s", req, r.name)
	}
	if !n.has(caps) {
		return &adapter.MissingCapabilityError{
			Message:      fmt.Sprintf("mcpd cannot relay %s from upstream %s: the calling client did not declare the %s capability", n.method, r.name, n.capName),
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
func (r *relays) relay(ctx context.Context, session *mcp.ClientSession, req mcp.InputRequest) (mcp.InputResponse, error) {
	n, _ := needOf(req)
	if err := r.checkForm(req); err != nil {
		return nil, err
	}
	c, err := r.target(ctx, n.method, session)
	if err != nil {
		return nil, err
	}
	c.asking.Add(1)
	defer c.asking.Add(-1)
	if c.held != nil {
		if err := r.check(req, c.held.capabilities()); err != nil {
			return nil, err
		}
		resp, err := c.held.ask(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("relaying %s from upstream %s: %w", n.method, r.name, err)
		}
		return resp, nil
	}
	if c.client == nil {
		return nil, fmt.Errorf("mcpd cannot relay %s from upstream %s: the calling client cannot be asked while a tool or prompt runs; see docs/gateway.md", n.method, r.name)
	}
	if err := r.check(req, c.client.Capabilities()); err != nil {
		return nil, err
	}
	// The question is put under the call's context, which carries the
	// client's request: the SDK sends it on that request's stream, as it
	// does mcpd's own asks, so that it reaches a client that opened no
	// other (a 2025-11-25 client's GET stream is optional). It lasts as
	// long as both the upstream's request and the call.
	actx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	resp, err := c.client.Ask(actx, req)
	if err != nil {
		return nil, fmt.Errorf("relaying %s from upstream %s: %w", n.method, r.name, err)
	}
	return resp, nil
}

// onElicit relays an upstream's elicitation/create.
func (r *relays) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	resp, err := r.relay(ctx, req.Session, req.Params)
	if err != nil {
		return nil, err
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("relaying elicitation/create from upstream %s: the client answered with %T", r.name, resp)
	}
	return res, nil
}

// onSample relays an upstream's sampling/createMessage.
func (r *relays) onSample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	resp, err := r.relay(ctx, req.Session, req.Params)
	if err != nil {
		return nil, err
	}
	switch res := resp.(type) {
	case *mcp.CreateMessageResult:
		return res, nil
	case *mcp.CreateMessageWithToolsResult:
		// A 2026-07-28 client's answer in inputResponses decodes as the
		// form with a list of content blocks; the request (without
		// tools) takes one.
		if len(res.Content) == 1 {
			return &mcp.CreateMessageResult{Meta: res.Meta, Content: res.Content[0], Model: res.Model, Role: res.Role, StopReason: res.StopReason}, nil
		}
		return nil, fmt.Errorf("relaying sampling/createMessage from upstream %s: the client answered with %d content blocks, where the request takes one", r.name, len(res.Content))
	}
	return nil, fmt.Errorf("relaying sampling/createMessage from upstream %s: the client answered with %T", r.name, resp)
}

// relayRoots answers an upstream's roots/list with the calling client's
// roots: the SDK's client answers roots/list itself from a fixed list,
// so the request is taken before it gets there.
func (r *relays) relayRoots(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		params, _ := req.GetParams().(*mcp.ListRootsParams)
		session, _ := req.GetSession().(*mcp.ClientSession)
		return r.onRoots(ctx, session, params)
	}
}

// onRoots relays an upstream's roots/list.
func (r *relays) onRoots(ctx context.Context, session *mcp.ClientSession, params *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if params == nil {
		params = &mcp.ListRootsParams{}
	}
	resp, err := r.relay(ctx, session, params)
	if err != nil {
		return nil, err
	}
	res, ok := resp.(*mcp.ListRootsResult)
	if !ok {
		return nil, fmt.Errorf("relaying roots/list from upstream %s: the client answered with %T", r.name, resp)
	}
	return res, nil
}

// answerInputs answers the questions of one input_required round of a
// 2026-07-28 upstream, each relayed as the request it stands for.
func (r *relays) answerInputs(ctx context.Context, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	out := make(mcp.InputResponseMap, len(reqs))
	for id, ir := range reqs {
		var resp mcp.InputResponse
		var err error
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			resp, err = r.onElicit(ctx, &mcp.ElicitRequest{Params: p})
		case *mcp.CreateMessageParams:
			resp, err = r.onSample(ctx, &mcp.CreateMessageRequest{Params: p})
		case *mcp.CreateMessageWithToolsParams: // how the SDK decodes every sampling input request
			var base *mcp.CreateMessageParams
			if base, err = samplingParams(p, r.name); err == nil {
				resp, err = r.onSample(ctx, &mcp.CreateMessageRequest{Params: base})
			}
		case *mcp.ListRootsParams:
			resp, err = r.onRoots(ctx, nil, p)
		default:
			err = fmt.Errorf("mcpd cannot relay %T from upstream %s", ir, r.name)
		}
		if err != nil {
			return nil, err
		}
		out[id] = resp
	}
	return out, nil
}
