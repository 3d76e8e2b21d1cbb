package serve

import (
	"context"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// 2026-07-28 list_changed notifications, and why mcpd sends them itself.
//
// A 2026-07-28 client asks for list changes on a subscriptions/listen
// stream, and may hold several on one session: the go-sdk client opens one
// for the list changes and one more per resource it subscribes to, all on
// its one stdio session. The SDK (v1.8.0) keeps one listen per session and
// kind, the latest to ask, and forgets the session for every kind when any
// of its listens ends: after an unsubscribe (which ends that resource's
// listen) the client hears of no list change again.
//
// So mcpd keeps its own account of each session's open listens and what
// each asked for, and sends a session's list_changed of a kind itself, on
// the latest listen open that asked for it, with that listen's id in _meta
// as the SDK would. The SDK's own sends to listens are dropped by the
// sending middleware. Legacy sessions and resources/updated are the SDK's
// as before: a resource's subscription is recorded per session and URI,
// which the end of another listen leaves alone.
//
// The listen's JSON-RPC id, which the notification must carry, is not
// given to middleware; the SDK puts it in the _meta of the
// subscriptions/acknowledged it sends first on the stream, under the
// listen's context, where mcpd finds the listen's record.

// listens is mcpd's account of the open listens.
type listens struct {
	mu        sync.Mutex
	bySession map[*mcp.ServerSession][]*listenStream // open, oldest first
	// base is each endpoint's sending handler below mcpd's own sending
	// middleware: what mcpd's own sends go through.
	base map[*mcp.Server]mcp.MethodHandler
}

// listenStream is one open subscriptions/listen.
type listenStream struct {
	srv   *mcp.Server
	kinds [3]bool // list_changed asked for: tools, prompts, resources
	id    any     // its JSON-RPC id, once acknowledged (guarded by listens.mu)
}

type listenKey struct{}

var listChangedMethods = [3]string{"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"}

func newListens() *listens {
	return &listens{bySession: map[*mcp.ServerSession][]*listenStream{}, base: map[*mcp.Server]mcp.MethodHandler{}}
}

// receiving is the receiving middleware of srv that records its listens
// while they are open.
func (l *listens) receiving(srv *mcp.Server) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != methodListen {
				return next(ctx, method, req)
			}
			ss, _ := req.GetSession().(*mcp.ServerSession)
			p, _ := req.GetParams().(*mcp.SubscriptionsListenParams)
			if ss == nil || p == nil || p.Notifications == nil {
				return next(ctx, method, req)
			}
			// mcpd's endpoints declare every kind of list_changed, so a
			// listen gets every kind it asks for.
			st := &listenStream{srv: srv, kinds: [3]bool{p.Notifications.ToolsListChanged, p.Notifications.PromptsListChanged, p.Notifications.ResourcesListChanged}}
			l.mu.Lock()
			l.bySession[ss] = append(l.bySession[ss], st)
			l.mu.Unlock()
			defer l.closed(ss, st)
			return next(context.WithValue(ctx, listenKey{}, st), method, req)
		}
	}
}

// closed forgets a listen that ended.
func (l *listens) closed(ss *mcp.ServerSession, st *listenStream) {
	l.mu.Lock()
	defer l.mu.Unlock()
	open := slices.DeleteFunc(l.bySession[ss], func(o *listenStream) bool { return o == st })
	if len(open) == 0 {
		delete(l.bySession, ss)
		return
	}
	l.bySession[ss] = open
}

// setBase records srv's sending handler below mcpd's sending middleware.
func (l *listens) setBase(srv *mcp.Server, next mcp.MethodHandler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.base[srv] = next
}

// sent looks at a message the SDK sends, before it is queued: it notes
// the id of the listen a subscriptions/acknowledged is for, and reports
// whether the message is the SDK's list_changed to a listen that mcpd
// sends itself, to be dropped.
func (l *listens) sent(ctx context.Context, method string, req mcp.Request) (drop bool) {
	switch method {
	case "notifications/subscriptions/acknowledged":
		if st, ok := ctx.Value(listenKey{}).(*listenStream); ok {
			if id, ok := subscriptionID(req.GetParams()); ok {
				l.mu.Lock()
				st.id = id
				l.mu.Unlock()
			}
		}
		return false
	case listChangedMethods[0], listChangedMethods[1], listChangedMethods[2]:
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if _, ok := subscriptionID(req.GetParams()); !ok || ss == nil {
			return false // a legacy session's
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.bySession[ss]) > 0
	}
	return false
}

func subscriptionID(p mcp.Params) (any, bool) {
	if p == nil {
		return nil, false
	}
	id, ok := p.GetMeta()[mcp.MetaKeySubscriptionID]
	return id, ok && id != nil
}

// listChanged is, for each session of srv with listens open, how to send
// it list_changed of the kinds given: on the latest acknowledged listen
// that asked for each kind.
func (l *listens) listChanged(srv *mcp.Server, kinds [3]bool) map[*mcp.ServerSession][]queued {
	l.mu.Lock()
	defer l.mu.Unlock()
	base := l.base[srv]
	if base == nil {
		return nil
	}
	out := map[*mcp.ServerSession][]queued{}
	for ss, open := range l.bySession {
		for k, changed := range kinds {
			if !changed {
				continue
			}
			var on *listenStream
			for _, st := range open {
				if st.srv == srv && st.kinds[k] && st.id != nil {
					on = st
				}
			}
			if on == nil {
				continue
			}
			method, req := listChangedRequest(ss, k, on.id)
			out[ss] = append(out[ss], queued{key: method, send: func(ctx context.Context) error {
				_, err := base(ctx, method, req)
				return err
			}})
		}
	}
	return out
}

// listChangedRequest is the list_changed of kind k to ss on the listen
// whose id is id.
func listChangedRequest(ss *mcp.ServerSession, k int, id any) (string, mcp.Request) {
	meta := mcp.Meta{mcp.MetaKeySubscriptionID: id}
	switch k {
	case 0:
		return listChangedMethods[0], &mcp.ServerRequest[*mcp.ToolListChangedParams]{Session: ss, Params: &mcp.ToolListChangedParams{Meta: meta}}
	case 1:
		return listChangedMethods[1], &mcp.ServerRequest[*mcp.PromptListChangedParams]{Session: ss, Params: &mcp.PromptListChangedParams{Meta: meta}}
	default:
		return listChangedMethods[2], &mcp.ServerRequest[*mcp.ResourceListChangedParams]{Session: ss, Params: &mcp.ResourceListChangedParams{Meta: meta}}
	}
}
