package serve

import (
	"context"
	"errors"
	"sync"

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

// subscriptions is the server's account of its sessions' subscriptions.
type subscriptions struct {
	// opMu serializes the changes that may subscribe or release at a
	// backend, so that a URI's first subscriber and its last are never
	// handled at once. It is not held to read sessions (mu).
	opMu sync.Mutex
	held map[string]*heldSub // by URI, guarded by opMu

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]map[string]bool // session → URI → muted
}

// heldSub is what mcpd holds for one URI.
type heldSub struct {
	n       int    // sessions subscribed and not muted
	release func() // the backend's subscription; nil: none held
}

func newSubscriptions() *subscriptions {
	return &subscriptions{held: map[string]*heldSub{}, sessions: map[*mcp.ServerSession]map[string]bool{}}
}

// subscribe handles resources/subscribe on the endpoint of toolset.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest, toolset string) error {
	if req.Params == nil || req.Params.URI == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/subscribe needs a uri"}
	}
	snap := s.current.Acquire()
	defer snap.Release()
	caller := principal.FromContext(ctx)
	_, ts, usable := viewFor(snap, toolset, caller)
	at, hidden := snap.SubscribeTarget(&snapshot.ReadRequest{URI: req.Params.URI, Caller: caller, Toolset: ts})
	return s.subs.add(ctx, req.Session, req.Params.URI, hidden || !usable, at, s.resourceUpdated)
}

// unsubscribe handles resources/unsubscribe, and the end of a listen
// stream's resource subscriptions.
func (s *Server) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Params != nil {
		s.subs.remove(req.Session, req.Params.URI)
	}
	return nil
}

// add records that ss subscribed to uri; unless muted, the first such
// session subscribes at the backend with at (nil: nothing to subscribe
// to), whose changes go to updated. A backend that refuses the
// subscription fails the client's request with its error.
func (sb *subscriptions) add(ctx context.Context, ss *mcp.ServerSession, uri string, muted bool, at snapshot.SubscribeFunc, updated func(string)) error {
	sb.opMu.Lock()
	defer sb.opMu.Unlock()
	sb.mu.Lock()
	subs := sb.sessions[ss]
	first := subs == nil
	if first {
		subs = map[string]bool{}
		sb.sessions[ss] = subs
	}
	wasMuted, had := subs[uri]
	subs[uri] = muted
	sb.mu.Unlock()
	if first && ss != nil {
		go func() {
			_ = ss.Wait()
			sb.dropSession(ss)
		}()
	}
	switch {
	case had && wasMuted == muted:
		return nil
	case had && !wasMuted:
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
	return nil
}

// remove forgets that ss subscribed to uri.
func (sb *subscriptions) remove(ss *mcp.ServerSession, uri string) {
	sb.opMu.Lock()
	defer sb.opMu.Unlock()
	sb.mu.Lock()
	muted, had := sb.sessions[ss][uri]
	delete(sb.sessions[ss], uri)
	sb.mu.Unlock()
	if had && !muted {
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
	for uri, muted := range subs {
		if !muted {
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
		release, err := at(ctx, updated)
		switch {
		case errors.Is(err, adapter.ErrNotSubscribable):
			// Accepted as for the config's own resources: the backend
			// will not say when it changes.
		case err != nil:
			return protocolError(err)
		default:
			h.release = release
		}
	}
	h.n++
	sb.held[uri] = h
	return nil
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

// muted reports whether ss must not hear that uri changed: it subscribed
// to what it may not see.
func (sb *subscriptions) muted(ss *mcp.ServerSession, uri string) bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.sessions[ss][uri]
}
