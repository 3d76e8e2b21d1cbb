package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/outbound"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/redact"
)

// Identity to an HTTP upstream: the mcp_server block's identity block
// (adapters/internal/identity, the same as an http_backend's) makes every
// request to the upstream carry an OAuth bearer token: mcpd's own
// (client_credentials), or the caller's (token_exchange, passthrough).
//
// The guarantee is that a session made with one identity carries no
// other's request. Each session the adapter makes (the supervisor's, a
// pooled one, a caller's) has its own HTTP client whose transport is
// bound to one identity (sessionAuth): a call's request brings the call's
// token in its context and is refused, before anything is sent, on a
// session bound to another identity; a request of the session itself
// (the 2025-11-25 GET stream, an answer to the upstream's request, the
// DELETE that ends it) carries the latest token of the session's own
// identity. With a per-caller mode, each caller's calls go on sessions of
// their own: one shared by that caller's concurrent calls (callers.go),
// and pooled ones bound to the caller as before (pool.go); the
// supervisor's session, which lists, watches and pings for mcpd itself,
// carries no caller's token, ever.

// upstreamAuth is the per-call hook of an HTTP upstream's identity: the
// bearer token for this call. The identity block's three modes are one
// implementation (identityAuth); the user's own grant (a per-user connect
// flow) is another through the same hook.
type upstreamAuth interface {
	// tokenForCall returns the token for the call under ctx. Its errors
	// are the call's tool errors, say what to do, and never contain a
	// token or secret.
	tokenForCall(ctx context.Context) (*callToken, error)
	// perCaller reports whether the token stands for the caller (each
	// caller's calls go on sessions of their own) rather than for mcpd
	// (its sessions serve every caller).
	perCaller() bool
}

// callToken is the bearer token one call sends, and what to record of
// it.
type callToken struct {
	bearer string
	// owner is the identity the token stands for: ownerOf of the call for
	// a per-caller identity, "" for mcpd's own. A session serves the
	// requests of one owner only.
	owner      string
	redactor   *redact.Redactor // of bearer, for what the upstream answers
	delegation adapter.Delegation
	// renew forgets a cached token the upstream refused (401) and gets a
	// new one for the same call, under ctx (the request's); nil for a
	// token that did not come from the cache: a fresh token refused is
	// the upstream's answer.
	renew func(ctx context.Context) (*callToken, error)
}

// identityAuth is an identity block as an upstreamAuth.
type identityAuth struct{ id *identity.Identity }

func (a identityAuth) perCaller() bool { return a.id.Config().NeedsCaller() }

func (a identityAuth) tokenForCall(ctx context.Context) (*callToken, error) {
	g, err := a.id.Token(ctx)
	if err != nil {
		return nil, err
	}
	t := &callToken{bearer: g.Token, redactor: g.Redactor, delegation: g.Delegation}
	if g.Cached {
		// The caller, for a request made after the call's own context
		// (a held call's: held.go).
		p := principal.FromContext(ctx)
		t.renew = func(rctx context.Context) (*callToken, error) {
			a.id.Drop(g)
			return a.tokenForCall(principal.NewContext(rctx, p))
		}
	}
	if a.perCaller() {
		t.owner = ownerOf(ctx)
	}
	return t, nil
}

// authorize gets the token of the call under ctx and returns ctx carrying
// it, for the call's requests (authTransport); ctx as it is when the
// upstream has no identity. The engine is told which identity the call
// presents (audit).
func (u *upstream) authorize(ctx context.Context) (context.Context, *callToken, error) {
	if u.auth == nil {
		return ctx, nil, nil
	}
	tok, err := u.auth.tokenForCall(ctx)
	if err != nil {
		u.failures.Add(1)
		return ctx, nil, fmt.Errorf("upstream %s: request not sent: %s", u.cfg.name, u.redact(err.Error()))
	}
	adapter.RecordDelegation(ctx, tok.delegation)
	return context.WithValue(ctx, callTokenKey{}, tok), tok, nil
}

// perCaller reports whether the upstream's calls go on sessions of their
// caller's (identity.go).
func (u *upstream) perCaller() bool { return u.auth != nil && u.auth.perCaller() }

type callTokenKey struct{}

func callTokenOf(ctx context.Context) *callToken {
	t, _ := ctx.Value(callTokenKey{}).(*callToken)
	return t
}

// sessionAuth binds one session's HTTP client to one identity.
type sessionAuth struct {
	// auth obtains mcpd's own token for the session's requests; nil for a
	// session that carries no token (an upstream without identity, or the
	// supervisor's session of a per-caller one).
	auth  upstreamAuth
	owner string
	// latest is the token of the owner's latest call on the session,
	// carried by the session's own requests (per-caller identities).
	latest atomic.Pointer[callToken]
}

// supervisorSession is the owner of the supervisor's session of an
// upstream with a per-caller identity: no call's, so every call's token
// is refused on it.
const supervisorSession = "\x00mcpd"

// errWrongSession is a request of one identity on a session of another:
// a fault of mcpd's, refused rather than sent.
var errWrongSession = errors.New("refused to send a call on a session made with another identity")

// authTransport sets the Authorization header of a session's requests to
// the upstream's origin (headerTransport sets the block's headers).
type authTransport struct {
	session *sessionAuth
	origin  *url.URL
	next    http.RoundTripper
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	sa := t.session
	if !outbound.SameOrigin(r.URL, t.origin) {
		return t.next.RoundTrip(r) // never followed (outbound.Client), and no token if it were
	}
	tok, fromCall := callTokenOf(r.Context()), true
	switch {
	case tok != nil:
		if tok.owner != sa.owner {
			return nil, errWrongSession
		}
		sa.latest.Store(tok)
	case sa.auth == nil:
	case sa.auth.perCaller():
		tok, fromCall = sa.latest.Load(), false
	default:
		var err error
		if tok, err = sa.auth.tokenForCall(r.Context()); err != nil {
			return nil, err
		}
	}
	if tok == nil {
		return t.next.RoundTrip(r)
	}
	res, err := t.send(r, tok)
	if err != nil || res.StatusCode != http.StatusUnauthorized || tok.renew == nil || !fromCall || (r.Body != nil && r.GetBody == nil) {
		return res, err
	}
	// The upstream refused a token from the cache: the authorization
	// server may have revoked it, or rotated its keys. One new token, one
	// more try; a fresh token refused is the upstream's answer. (Only for
	// a call's request: the session's own go on with the latest token.)
	fresh, ferr := tok.renew(r.Context())
	if ferr != nil || fresh.owner != sa.owner {
		return res, err
	}
	r2 := r.Clone(r.Context())
	if r.GetBody != nil {
		body, berr := r.GetBody()
		if berr != nil {
			return res, err
		}
		r2.Body = body
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
	res.Body.Close()
	sa.latest.Store(fresh)
	return t.send(r2, fresh)
}

func (t *authTransport) send(r *http.Request, tok *callToken) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok.bearer)
	return t.next.RoundTrip(r)
}

// redactResult replaces the call's token in what the upstream answered
// (its text, structured content and embedded text resources), should it
// echo it: a second line of defence, as for an http_backend.
func redactResult(res mcp.Result, tok *callToken) {
	if tok == nil || tok.redactor == nil {
		return
	}
	r := tok.redactor
	var content []mcp.Content
	switch res := res.(type) {
	case *mcp.CallToolResult:
		content = res.Content
		if res.StructuredContent != nil {
			res.StructuredContent = r.Value(res.StructuredContent)
		}
	case *mcp.GetPromptResult:
		for _, m := range res.Messages {
			if m != nil {
				content = append(content, m.Content)
			}
		}
	}
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			c.Text = r.String(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				c.Resource.Text = r.String(c.Resource.Text)
			}
		}
	}
}
