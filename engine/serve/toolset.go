package serve

import (
	"context"
	"fmt"
	"iter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Toolsets, and why each has an SDK server of its own.
//
// A toolset is a named subset of the config's tools, resources and prompts
// (snapshot.Toolset), served on /mcp/<name> and on stdio with --toolset.
// Each endpoint (/mcp, and each toolset's) is one *mcp.Server: the SDK fans
// list_changed out to every session of a server, and that is the only way
// to reach a legacy GET stream or a subscriptions/listen stream, so a
// server per endpoint is what lets a reload notify exactly the clients
// whose lists changed. It also keeps sessions apart: a session opened on
// one path is unknown on another. Everything else (the snapshot, the
// drain, the limits, the budget, the notification queues, the metrics and
// the audit) is the one Server's, shared by every endpoint.
//
// What an endpoint shows is resolved per request against the snapshot the
// request reads: a toolset removed by a reload serves nothing (its clients
// are told their lists changed, and HTTP requests to its path get 404).
// The /mcp endpoint serves server.default_toolset when the config names
// one, and everything otherwise.
//
// Which endpoints hear of a reload is decided by comparing, per endpoint,
// what it shows now with what it showed when its clients were last told
// (snapshot.Toolset.Fingerprints), so Notify needs no more from its caller
// than it did before toolsets existed.

// endpoint is one SDK server and what its clients were last told.
type endpoint struct {
	toolset string // "" for /mcp
	srv     *mcp.Server
	// impl and instructions are what srv was given, which the fast path's
	// answers carry as the SDK's would.
	impl         *mcp.Implementation
	instructions string
	// announced are the fingerprints of the lists the endpoint's clients
	// last heard of (guarded by Server.epMu).
	announced [3]string
}

// endpoint returns the endpoint of toolset ("" for /mcp), making it on
// first use. The caller checks that the toolset exists: endpoints are
// never removed, so only declared names may make one.
func (s *Server) endpoint(toolset string) *endpoint {
	s.epMu.Lock()
	defer s.epMu.Unlock()
	if ep := s.eps[toolset]; ep != nil {
		return ep
	}
	// The fingerprints are taken under epMu, as Notify's are: a reload
	// swapping now is either seen here or compared against this by
	// Notify.
	ep := &endpoint{toolset: toolset}
	ep.srv, ep.impl, ep.instructions = s.newSDK(toolset)
	ep.announced, _ = endpointFingerprints(s.current.Load(), toolset)
	s.eps[toolset] = ep
	return ep
}

// allSessions yields the sessions of every endpoint.
func (s *Server) allSessions() iter.Seq[*mcp.ServerSession] {
	return func(yield func(*mcp.ServerSession) bool) {
		s.epMu.Lock()
		servers := make([]*mcp.Server, 0, len(s.eps))
		for _, ep := range s.eps {
			servers = append(servers, ep.srv)
		}
		s.epMu.Unlock()
		for _, srv := range servers {
			for ss := range srv.Sessions() {
				if !yield(ss) {
					return
				}
			}
		}
	}
}

// gone are the fingerprints of a toolset that no longer exists: they differ
// from any real one.
var gone = [3]string{"gone", "gone", "gone"}

// endpointFingerprints are the fingerprints of what the endpoint of toolset
// shows in snap, and whether that is everything the snapshot serves.
func endpointFingerprints(snap *snapshot.Snapshot, toolset string) ([3]string, bool) {
	ts, all, ok := resolveToolset(snap, toolset)
	switch {
	case !ok:
		return gone, false
	case all:
		return snap.Fingerprints(), true
	}
	return ts.Fingerprints(), false
}

// resolveToolset is the toolset the endpoint of toolset serves in snap: nil
// and all for everything; ok is false when the toolset is not declared
// (any more).
func resolveToolset(snap *snapshot.Snapshot, toolset string) (ts *snapshot.Toolset, all, ok bool) {
	if toolset == "" {
		toolset = snap.Server.DefaultToolset
		if toolset == "" {
			return nil, true, true
		}
	}
	ts, ok = snap.Toolset(toolset)
	return ts, false, ok
}

// ToolsetServed is the toolset an endpoint serves in snap, by name: the
// name of server.default_toolset for "" when the config sets one. The
// metrics and the audit log name it.
func ToolsetServed(snap *snapshot.Snapshot, toolset string) string {
	if toolset == "" {
		return snap.Server.DefaultToolset
	}
	return toolset
}

// notifyEndpoints schedules a list_changed of each kind to the clients of
// every endpoint whose list of that kind changed since they were last
// told, and of every endpoint that serves everything for the kinds the
// caller says changed (Notify's contract before toolsets, which tests and
// callers without a new snapshot rely on).
func (s *Server) notifyEndpoints(changed [3]bool) {
	snap := s.current.Load()
	s.epMu.Lock()
	defer s.epMu.Unlock()
	for _, ep := range s.eps {
		fp, all := endpointFingerprints(snap, ep.toolset)
		var kinds [3]bool
		for i := range kinds {
			kinds[i] = fp[i] != ep.announced[i] || (all && changed[i])
		}
		ep.announced = fp
		if kinds != [3]bool{} {
			s.notes.schedule(ep.srv, kinds)
		}
	}
}

// resourceUpdated schedules resources/updated for uri on the endpoints
// that serve the resource (or a template that answers it); subscribers
// elsewhere learn nothing of it.
func (s *Server) resourceUpdated(uri string) {
	snap := s.current.Load()
	s.epMu.Lock()
	defer s.epMu.Unlock()
	for _, ep := range s.eps {
		ts, all, ok := resolveToolset(snap, ep.toolset)
		if all || ok && snap.ServesURI(ts, uri) {
			s.notes.schedule(ep.srv, [3]bool{}, uri)
		}
	}
}

// emptyView is what a caller sees of a toolset it may not use, or of one
// no longer declared.
var emptyView = &snapshot.View{}

// viewFor is what caller sees through the endpoint of toolset in snap, and
// the toolset (nil for everything) that limits its calls, reads and gets.
// A toolset the caller may not use, or that is gone, shows nothing: its
// items are as unknown as any other name.
func viewFor(snap *snapshot.Snapshot, toolset string, caller *principal.Principal) (*snapshot.View, *snapshot.Toolset, bool) {
	ts, all, ok := resolveToolset(snap, toolset)
	switch {
	case all:
		return snap.View(caller), nil, true
	case !ok || !ts.Allows(caller):
		return emptyView, ts, false
	}
	return ts.View(caller), ts, true
}

// RunStdioToolset is RunStdio for the endpoint of toolset: the stdio
// client sees only the toolset's tools, resources and prompts. The
// toolset must be declared in the current snapshot.
func (s *Server) RunStdioToolset(ctx context.Context, toolset string) error {
	if toolset != "" {
		if _, ok := s.current.Load().Toolset(toolset); !ok {
			return fmt.Errorf("no toolset is named %q", toolset)
		}
	}
	return s.runStdio(ctx, s.endpoint(toolset).srv)
}

// SDKFor returns the SDK server of the endpoint of toolset ("" for /mcp,
// as SDK), for connecting a client in process (tests, mcpd test). The
// toolset must be declared in the current snapshot.
func (s *Server) SDKFor(toolset string) (*mcp.Server, error) {
	if toolset != "" {
		if _, ok := s.current.Load().Toolset(toolset); !ok {
			return nil, fmt.Errorf("no toolset is named %q", toolset)
		}
	}
	return s.endpoint(toolset).srv, nil
}
