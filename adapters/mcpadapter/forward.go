package mcpadapter

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Completions and resource subscriptions of what an expose block
// contributes, forwarded to the upstream (adapter.Completer,
// adapter.ResourceSubscriber). The config maps mcpd's names to the
// upstream's (a prompt's prefix; URIs and URI templates are exposed as
// they are); the upstream answers.

var (
	_ adapter.Completer          = (*serverConfig)(nil)
	_ adapter.ResourceSubscriber = (*serverConfig)(nil)
)

// Complete forwards completion/complete of an exposed prompt or template
// to the upstream, when it declared the completions capability.
func (c *serverConfig) Complete(ctx context.Context, b adapter.Backend, req *adapter.CompleteRequest) (*mcp.CompletionResultDetails, error) {
	u, ok := b.(*upstream)
	if !ok || c.expose == nil {
		return nil, nil
	}
	ref := *req.Ref
	switch ref.Type {
	case "ref/prompt":
		up, ok := u.exposedPrompt(c.expose, ref.Name)
		if !ok {
			return nil, nil
		}
		ref.Name = up
	case "ref/resource":
		if !c.expose.resources {
			return nil, nil
		}
	default:
		return nil, nil
	}
	params := &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: req.Argument, Value: req.Value}}
	if len(req.Context) > 0 {
		params.Context = &mcp.CompleteContext{Arguments: req.Context}
	}
	return u.complete(ctx, params)
}

// exposedPrompt is the upstream's name of the prompt e exposes as name,
// as ContributedPrompts names it.
func (u *upstream) exposedPrompt(e *exposeConfig, name string) (string, bool) {
	if !e.prompts {
		return "", false
	}
	for _, p := range u.catalog.current().prompts {
		if e.prefix+p.Name == name {
			return p.Name, true
		}
	}
	return "", false
}

// complete sends one completion/complete to the upstream.
func (u *upstream) complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompletionResultDetails, error) {
	ctx = withHTTPAnswer(ctx) // for callError
	ctx, tok, err := u.authorize(ctx)
	if err != nil {
		return nil, err
	}
	cs, release, err := u.sessionFor(ctx, tok)
	if err != nil {
		return nil, err
	}
	defer release()
	if caps := capabilities(cs); caps.Completions == nil {
		return nil, nil
	}
	u.relay.sharedBy(ctx, cs)
	res, err := cs.Complete(ctx, params)
	if err != nil {
		return nil, u.callError(ctx, cs, "completion of "+params.Ref.Name+params.Ref.URI, err)
	}
	u.gate.admitCompletion(&res.Completion)
	return &res.Completion, nil
}

func capabilities(cs *mcp.ClientSession) *mcp.ServerCapabilities {
	if r := cs.InitializeResult(); r != nil && r.Capabilities != nil {
		return r.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

func canSubscribe(cs *mcp.ClientSession) bool {
	r := capabilities(cs).Resources
	return r != nil && r.Subscribe
}

// SubscribeResource subscribes to an exposed resource (or template
// instance) at the upstream.
func (c *serverConfig) SubscribeResource(ctx context.Context, b adapter.Backend, uri string, updated func(string)) (func(), error) {
	u, ok := b.(*upstream)
	if !ok || c.expose == nil || !c.expose.resources {
		return nil, adapter.ErrNotSubscribable
	}
	// URIs are exposed as they are: the upstream's URI is mcpd's.
	return u.subscribe(ctx, uri, func() { updated(uri) })
}

// subscriptions are the upstream resources mcpd's clients are subscribed
// to, held on the upstream's session: one upstream subscription per URI,
// however many subscribers, made again on every new session (the
// supervisor's reconnect), dropped with the last subscriber.
type subscriptions struct {
	// opMu serializes what is sent to the upstream, so that its
	// subscriptions follow want in order.
	opMu sync.Mutex
	on   *mcp.ClientSession // the session have is of (guarded by opMu)
	have map[string]bool    // URIs subscribed on it (guarded by opMu)

	mu   sync.Mutex
	want map[string]map[int]func() // URI → subscriber → relay
	next int
}

// subscribe adds a subscriber to the upstream's uri, whose changes
// relay gets. The first one subscribes at once when the upstream is
// connected, so that its refusal reaches the client; otherwise the
// subscription is made once it connects.
func (u *upstream) subscribe(ctx context.Context, uri string, relay func()) (func(), error) {
	u.conn.ensureStarted()
	s := &u.subs
	s.mu.Lock()
	if s.want == nil {
		s.want = map[string]map[int]func(){}
	}
	id := s.next
	s.next++
	first := s.want[uri] == nil
	if first {
		s.want[uri] = map[int]func(){}
	}
	s.want[uri][id] = relay
	s.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			if u.forget(uri, id) {
				// Unsubscribed in the background: the caller may be a
				// session's end, or a listen stream's, whose context is
				// gone.
				go u.resubscribe()
			}
		})
	}
	if !first {
		return release, nil
	}
	cs := u.conn.current()
	if cs == nil {
		return release, nil
	}
	if !canSubscribe(cs) {
		u.forget(uri, id)
		u.log.Info("the upstream does not declare resources.subscribe; subscribers of its resource will hear of no change", "uri", uri)
		return nil, adapter.ErrNotSubscribable
	}
	u.relay.sharedBy(ctx, cs)
	if err := u.syncSubscriptions(ctx, cs, uri); err != nil {
		u.forget(uri, id)
		return nil, err
	}
	return release, nil
}

// forget removes a subscriber, reporting whether it was the URI's last.
func (u *upstream) forget(uri string, id int) bool {
	s := &u.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.want[uri], id)
	if len(s.want[uri]) > 0 {
		return false
	}
	delete(s.want, uri)
	return true
}

// resubscribe brings the current session's subscriptions in line with
// what is wanted: after a reconnect (a new session has none), or when the
// last subscriber of a URI went.
func (u *upstream) resubscribe() {
	cs := u.conn.current()
	if cs == nil {
		return // the next session's resubscribe does it
	}
	ctx, cancel := context.WithTimeout(u.ctx, u.cfg.connectTimeout)
	defer cancel()
	if err := u.syncSubscriptions(ctx, cs, ""); err != nil {
		u.log.Warn("resource subscriptions at the upstream failed", "err", err)
	}
}

// maxStreams bounds the resource subscription streams mcpd holds to one
// 2026-07-28 upstream (one long-lived request per URI; see
// syncSubscriptions): clients choose the URIs, a template's instances
// are without number, and each stream holds a request open upstream.
const maxStreams = 1024

// syncSubscriptions subscribes cs to the URIs wanted and unsubscribes it
// from the others. It returns the error of focus (a URI, or "" for none);
// the others' are logged.
func (u *upstream) syncSubscriptions(ctx context.Context, cs *mcp.ClientSession, focus string) error {
	s := &u.subs
	s.opMu.Lock()
	defer s.opMu.Unlock()
	// On a new session after one that held subscriptions, what changed
	// while mcpd was away was told to nobody: the subscribers hear that
	// their resources may have changed once they are subscribed again.
	var missed []string
	if s.on != cs {
		if s.on != nil {
			for uri := range s.have {
				missed = append(missed, uri)
			}
		}
		s.on, s.have = cs, map[string]bool{}
	}
	defer func() {
		for _, uri := range missed {
			if s.have[uri] {
				u.relayUpdated(uri)
			}
		}
	}()
	s.mu.Lock()
	want := make(map[string]bool, len(s.want))
	for uri := range s.want {
		want[uri] = true
	}
	s.mu.Unlock()
	if !canSubscribe(cs) {
		if len(want) > 0 {
			u.log.Warn("the upstream does not declare resources.subscribe; its resources' subscribers will hear of no change", "subscribed", len(want))
		}
		return nil
	}
	// A 2026-07-28 upstream on stdio has one session for all the
	// subscriptions/listen streams mcpd opens (one per URI, the SDK
	// client's way), and the go-sdk server (v1.8.0, mcpd's own too) drops a
	// session's list_changed subscriptions when any of its listen streams
	// ends: ending one resource's stream would silence the upstream's tool,
	// prompt and resource list changes. On such a session a resource
	// nobody wants any more keeps its stream (its updates reach nobody)
	// until the session ends (the streams are bounded: maxStreams).
	keep := u.cfg.url == "" && modernSession(cs)
	var focusErr error
	for uri := range want {
		if s.have[uri] {
			continue
		}
		if modernSession(cs) && len(s.have) >= maxStreams {
			err := fmt.Errorf("upstream %s: %d resource subscriptions are open to it, the most mcpd holds; the subscription to %s was not made", u.cfg.name, len(s.have), uri)
			if uri == focus {
				focusErr = err
			} else {
				u.log.Warn("subscribing to an upstream resource failed", "uri", uri, "err", err)
			}
			continue
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			err = u.callError(ctx, cs, "the subscription to "+uri, err)
			if uri == focus {
				focusErr = err
			} else {
				u.log.Warn("subscribing to an upstream resource failed", "uri", uri, "err", err)
			}
			continue
		}
		s.have[uri] = true
	}
	for uri := range s.have {
		if want[uri] || keep {
			continue
		}
		delete(s.have, uri)
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			u.log.Debug("unsubscribing from an upstream resource failed", "uri", uri, "err", u.redact(err.Error()))
		}
	}
	return focusErr
}

// onResourceUpdated relays the upstream's notifications/resources/updated
// to the subscribers of its URI.
func (u *upstream) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params != nil {
		u.relayUpdated(req.Params.URI)
	}
}

// relayUpdated tells the subscribers of uri that it changed.
func (u *upstream) relayUpdated(uri string) {
	s := &u.subs
	s.mu.Lock()
	relays := make([]func(), 0, len(s.want[uri]))
	for _, r := range s.want[uri] {
		relays = append(relays, r)
	}
	s.mu.Unlock()
	for _, r := range relays {
		r()
	}
}
