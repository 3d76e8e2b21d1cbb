package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Resource subscriptions, and why mcpd keeps its own account of them.
//
// The SDK records which session subscribed to which URI (resources/subscribe
// in a 2025-11-25 session; a 2026-07-28 subscriptions/listen naming
// resources, which the SDK turns into the same handler calls) and fans
// resources/updated out to them. The config's own resources change only by
// a reload, which notifies their subscribers itself (reload → ResourceUpdated).
// A resource a backend contributes (an MCP upstream's) changes when the
// backend says so: while at least one of mcpd's sessions is subscribed to
// its URI, on any endpoint, mcpd holds one subscription to it at the
// backend (adapter.ResourceSubscriber) and relays each change as
// ResourceUpdated. The SDK tells mcpd that a subscription ended by the
// unsubscribe handler (an unsubscribe, or the end of a listen stream) but
// not when a session closed with subscriptions, so mcpd waits on each
// subscribing session and lets its subscriptions go when it ends.
//
// A subscription to a URI the caller may not see (a scope it lacks, a
// toolset that does not hold it) is accepted, as one to an unknown URI is,
// so that the answer tells nothing of what is hidden; it is muted: the
// sending middleware drops its resources/updated, and no backend is asked.

// After every reload (Reloaded), each subscription is resolved again in
// the new snapshot, with the caller and endpoint it was made by: a reload
// may replace the backend that answers a URI (its upstream's address
// changed), add one where there was none, or hide a resource from a
// subscriber (its scopes changed) or show it again. The new backends'
// subscriptions are made before the old ones are released, so that a
// backend the reload kept holds its subscription throughout.

// subscriptions is the server's account of its sessions' subscriptions.
type subscriptions struct {
	// opMu serializes the changes that may subscribe or release at a
	// backend, so that a URI's first subscriber and its last are never
	// handled at once. It is not held to read sessions (mu).
	opMu sync.Mutex
	held map[string]*heldSub // by URI, guarded by opMu

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]map[string]*sessionSub // session → URI

	// rehoming is set while a rehome runs, again when another was asked
	// for meanwhile (guarded by mu).
	rehoming, again bool
}

// sessionSub is one session's subscription to one URI.
type sessionSub struct {
	caller  *principal.Principal // who subscribed
	toolset string               // the endpoint it subscribed on
	// muted: it may not see what answers the URI, and must hear nothing
	// of it (guarded by mu). A reload changes it at once, before any
	// notification of what the reload changed is sent.
	muted bool
	// counted: it is counted in held (guarded by opMu). It is !muted as
	// of the latest add or rehome; between a reload and its rehome the
	// two may differ.
	counted bool
}

// heldSub is what mcpd holds for one URI.
type heldSub struct {
	n       int    // sessions subscribed and not muted
	release func() // the backend's subscription; nil: none held
}

func newSubscriptions() *subscriptions {
	return &subscriptions{held: map[string]*heldSub{}, sessions: map[*mcp.ServerSession]map[string]*sessionSub{}}
}

// subscribeTarget resolves a subscription to uri by caller on the
// endpoint of toolset in snap: where to subscribe at a backend (nil:
// nowhere), and whether the subscriber is muted.
func subscribeTarget(snap *snapshot.Snapshot, caller *principal.Principal, toolset, uri string) (snapshot.SubscribeFunc, bool) {
	_, ts, usable := viewFor(snap, toolset, caller)
	at, hidden := snap.SubscribeTarget(&snapshot.ReadRequest{URI: uri, Caller: caller, Toolset: ts})
	return at, hidden || !usable
}

// maxSessionSubs bounds the URIs one session may be subscribed to. A
// subscription to an unknown URI is accepted (a reload may add it), so
// without a bound a client could make the server remember URIs without
// end; the SDK's own record of them is bounded with mcpd's, since the SDK
// records only what mcpd accepted.
const maxSessionSubs = 1024

// subscribe handles resources/subscribe on the endpoint of toolset.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest, toolset string) error {
	if req.Params == nil || req.Params.URI == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/subscribe needs a uri"}
	}
	snap := s.current.Acquire()
	defer snap.Release()
	sub := &sessionSub{caller: principal.FromContext(ctx), toolset: toolset}
	at, muted := subscribeTarget(snap, sub.caller, toolset, req.Params.URI)
	sub.muted = muted
	return s.subs.add(ctx, req.Session, req.Params.URI, sub, at, s.resourceUpdated)
}

// unsubscribe handles resources/unsubscribe, and the end of a listen
// stream's resource subscriptions.
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Params != nil {
		s.subs.remove(req.Session, req.Params.URI)
	}
	return nil
}

// Reloaded follows a reload, whether or not clients see a change in it:
// who is muted is decided again at once, and the subscriptions held at
// backends are made again in the snapshot now served (see above). It
// returns at once; the backends are asked in the background, and reloads
// in quick succession are followed once more after the one being
// followed, not once each.
func (s *Server) Reloaded() {
	sb := s.subs
	snap := s.current.Load()
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for _, subs := range sb.sessions {
		for uri, sub := range subs {
			_, sub.muted = subscribeTarget(snap, sub.caller, sub.toolset, uri)
		}
	}
	if sb.rehoming {
		sb.again = true
		return
	}
	sb.rehoming = true
	go func() {
		for {
			s.rehome()
			sb.mu.Lock()
			if !sb.again {
				sb.rehoming = false
				sb.mu.Unlock()
				return
			}
			sb.again = false
			sb.mu.Unlock()
		}
	}()
}

// rehomeTimeout bounds the subscriptions a rehome makes at backends.
const rehomeTimeout = 30 * time.Second

// rehome resolves every subscription again in the current snapshot.
func (s *Server) rehome() {
	snap := s.current.Acquire()
	defer snap.Release()
	ctx, cancel := context.WithTimeout(context.Background(), rehomeTimeout)
	defer cancel()
	err := s.subs.rehome(ctx, func(sub *sessionSub, uri string) (snapshot.SubscribeFunc, bool) {
		return subscribeTarget(snap, sub.caller, sub.toolset, uri)
	}, s.resourceUpdated)
	for uri, e := range err {
		s.opts.Logger.Warn("after the reload, subscribing to a resource at its backend failed; its subscribers will hear of no change", "uri", uri, "err", e)
	}
}

// add records that ss subscribed to uri as sub says; unless sub is muted,
// the first such session subscribes at the backend with at (nil: nothing
// to subscribe to), whose changes go to updated. A backend that refuses
// the subscription fails the client's request with its error.
func (sb *subscriptions) add(ctx context.Context, ss *mcp.ServerSession, uri string, sub *sessionSub, at snapshot.SubscribeFunc, updated func(string)) error {
	sb.opMu.Lock()
	defer sb.opMu.Unlock()
	sb.mu.Lock()
	subs := sb.sessions[ss]
	first := subs == nil
	if first {
		subs = map[string]*sessionSub{}
		sb.sessions[ss] = subs
	}
	was := subs[uri]
	if was == nil && len(subs) >= maxSessionSubs {
		sb.mu.Unlock()
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("this session is subscribed to %d resources, the most mcpd allows; unsubscribe from one before subscribing to %s", len(subs), uri)}
	}
	subs[uri] = sub
	// Read under mu: a reload (Reloaded) mutes and unmutes under mu alone.
	// What it decides after this is followed by its rehome, which waits
	// for opMu.
	muted := sub.muted
	sb.mu.Unlock()
	if first && ss != nil {
		go func() {
			_ = ss.Wait()
			sb.dropSession(ss)
		}()
	}
	if was != nil && was.counted {
		if !muted {
			sub.counted = true // the backend's subscription carries on
			return nil
		}
		sb.letGo(uri)
	}
	if muted {
		return nil
	}
	if err := sb.hold(ctx, uri, at, updated); err != nil {
		sb.mu.Lock()
		delete(subs, uri)
		sb.mu.Unlock()
		return err
	}
	sub.counted = true
	return nil
}

// remove forgets that ss subscribed to uri.
func (sb *subscriptions) remove(ss *mcp.ServerSession, uri string) {
	sb.opMu.Lock()
	defer sb.opMu.Unlock()
	sb.mu.Lock()
	sub := sb.sessions[ss][uri]
	delete(sb.sessions[ss], uri)
	sb.mu.Unlock()
	if sub != nil && sub.counted {
		sb.letGo(uri)
	}
}

// dropSession forgets the subscriptions of a session that ended.
func (sb *subscriptions) dropSession(ss *mcp.ServerSession) {
	sb.opMu.Lock()
	defer sb.opMu.Unlock()
	sb.mu.Lock()
	subs := sb.sessions[ss]
	delete(sb.sessions, ss)
	sb.mu.Unlock()
	for uri, sub := range subs {
		if sub.counted {
			sb.letGo(uri)
		}
	}
}

// hold counts one more session subscribed to uri, subscribing at the
// backend for the first. The caller holds opMu.
func (sb *subscriptions) hold(ctx context.Context, uri string, at snapshot.SubscribeFunc, updated func(string)) error {
	h := sb.held[uri]
	if h == nil {
		h = &heldSub{}
	}
	if h.n == 0 && at != nil {
		release, err := subscribeAt(ctx, at, updated)
		if err != nil {
			return protocolError(err)
		}
		h.release = release
	}
	h.n++
	sb.held[uri] = h
	return nil
}

// subscribeAt subscribes with at. A backend that will not say when the
// resource changes is no error: the subscription is accepted as for the
// config's own resources, and nothing is held.
func subscribeAt(ctx context.Context, at snapshot.SubscribeFunc, updated func(string)) (func(), error) {
	release, err := at(ctx, updated)
	if errors.Is(err, adapter.ErrNotSubscribable) {
		return nil, nil
	}
	return release, err
}

// letGo counts one session less subscribed to uri, releasing the
// backend's subscription with the last. The caller holds opMu.
func (sb *subscriptions) letGo(uri string) {
	h := sb.held[uri]
	if h == nil {
		return
	}
	if h.n--; h.n > 0 {
		return
	}
	delete(sb.held, uri)
	if h.release != nil {
		h.release()
	}
}

// rehome resolves every session's subscriptions again with resolve, and
// holds at the backends what they resolve to: the new subscriptions
// first, then the old ones released. It returns the URIs whose backend
// refused, with its error; their subscribers stay subscribed, and hear
// of changes the config makes.
func (sb *subscriptions) rehome(ctx context.Context, resolve func(*sessionSub, string) (snapshot.SubscribeFunc, bool), updated func(string)) map[string]error {
	sb.opMu.Lock()
	defer sb.opMu.Unlock()
	type resolved struct {
		sub   *sessionSub
		muted bool
	}
	var all []resolved
	count := map[string]int{}
	at := map[string]snapshot.SubscribeFunc{}
	sb.mu.Lock()
	for _, subs := range sb.sessions {
		for uri, sub := range subs {
			a, muted := resolve(sub, uri)
			all = append(all, resolved{sub, muted})
			if !muted {
				count[uri]++
				if at[uri] == nil {
					at[uri] = a
				}
			}
		}
	}
	sb.mu.Unlock()

	failed := map[string]error{}
	held := make(map[string]*heldSub, len(count))
	for uri, n := range count {
		h := &heldSub{n: n}
		if at[uri] != nil {
			release, err := subscribeAt(ctx, at[uri], updated)
			if err != nil {
				failed[uri] = err
			}
			h.release = release
		}
		held[uri] = h
	}
	sb.mu.Lock()
	for _, r := range all {
		r.sub.muted, r.sub.counted = r.muted, !r.muted
	}
	sb.mu.Unlock()
	old := sb.held
	sb.held = held
	for _, h := range old {
		if h.release != nil {
			h.release()
		}
	}
	return failed
}

// muted reports whether ss must not hear that uri changed: it subscribed
// to what it may not see.
func (sb *subscriptions) muted(ss *mcp.ServerSession, uri string) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sub := sb.sessions[ss][uri]
	return sub != nil && sub.muted
}
