package snapshot

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/limits"
)

// What mcpd forwards to the backend that contributed a prompt, resource
// or template, beside gets and reads: completions (adapter.Completer) and
// resource subscriptions (adapter.ResourceSubscriber). The engine asks the
// config that contributed the item, which maps mcpd's names to the
// backend's, and hands it the live backend.

// contribution is where a contributed prompt, resource or template came
// from.
type contribution struct {
	conf    adapter.BackendConfig
	backend adapter.Backend
	limits  *limits.Limits // the server's default timeout
}

// maxCompletions is the most values one completion carries (MCP's bound).
const maxCompletions = 100

// completeTimeout bounds a backend's completion when the server sets no
// default_timeout: the user is typing, and waits for it.
const completeTimeout = 5 * time.Second

// complete asks the backend to complete req, under the server's default
// timeout (completeTimeout when it sets none). A completion is a hint the client shows as the user types, so
// a backend that cannot give one (it declared no completions, it is down,
// it failed or took too long) completes to nothing rather than fail the
// client's request; the failure is logged.
func (c *contribution) complete(ctx context.Context, req *adapter.CompleteRequest) *mcp.CompletionResultDetails {
	none := &mcp.CompletionResultDetails{Values: []string{}}
	cp, ok := c.conf.(adapter.Completer)
	if !ok {
		return none
	}
	ctx, cancel := c.limits.WithTimeout(ctx)
	defer cancel()
	if _, bounded := ctx.Deadline(); !bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, completeTimeout)
		defer cancel()
	}
	res, err := cp.Complete(ctx, c.backend, req)
	if err != nil {
		slog.Warn("completion by the backend failed; answered with no values", "ref", req.Ref.Type+" "+req.Ref.Name+req.Ref.URI, "argument", req.Argument, "err", err)
		return none
	}
	if res == nil {
		return none
	}
	out := *res
	if out.Values == nil {
		out.Values = []string{}
	}
	if len(out.Values) > maxCompletions {
		out.Total = max(out.Total, len(out.Values))
		out.Values, out.HasMore = out.Values[:maxCompletions], true
	}
	return &out
}

// SubscribeFunc subscribes to a resource at its backend until release;
// see adapter.ResourceSubscriber.
type SubscribeFunc func(ctx context.Context, updated func(uri string)) (release func(), err error)

// SubscribeTarget resolves a resources/subscribe of req.URI as
// ReadResource resolves a read. hidden is true when a resource or template
// answers the URI but neither one req's caller may see through req's
// toolset does: such a subscriber must hear nothing of it. subscribe is
// not nil when what answers it was contributed by a backend that reports
// changes; the config's own resources need no subscribing, since the
// reload that changes one notifies its subscribers.
func (s *Snapshot) SubscribeTarget(req *ReadRequest) (subscribe SubscribeFunc, hidden bool) {
	caller, uri, ts := req.Caller, req.URI, req.Toolset
	var from *contribution
	found, visible := false, false
	if r, ok := s.resources[uri]; ok {
		found = true
		if caller.HasScopes(r.scopes) && ts.HasResource(uri) {
			from, visible = r.from, true
		}
	}
	for _, t := range s.Templates {
		if visible {
			break
		}
		if _, ok, _ := t.Bind(uri); !ok {
			continue
		}
		found = true
		if caller.HasScopes(t.scopes) && ts.HasTemplate(t.Def.URITemplate) {
			from, visible = t.from, true
		}
	}
	if found && !visible {
		return nil, true
	}
	if from == nil {
		return nil, false
	}
	rs, ok := from.conf.(adapter.ResourceSubscriber)
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, updated func(string)) (func(), error) {
		return rs.SubscribeResource(ctx, from.backend, uri, updated)
	}, false
}
