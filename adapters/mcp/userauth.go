package mcpadapter

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/outbound"
)

// An upstream whose identity block says mode = "user_authorization"
// authorizes each user with OAuth 2.1 (the MCP authorization spec), and
// mcpd calls it with the calling user's own token (engine/connect does the
// flow and keeps the grants):
//
//	mcp_server "github" {
//	  url = "https://api.githubcopilot.com/mcp/"
//	  identity {
//	    mode      = "user_authorization"
//	    grant_key = env("MCPD_GRANT_KEY")
//	  }
//	}
//
// Every session to such an upstream is made for one principal and carries
// only that principal's token (refreshed under it as it nears expiry): a
// session per user, made on the user's first call, at most maxUserSessions
// per upstream (the least recently used is closed to make room), ended
// when the user's grant is revoked. There is no session of the upstream's
// own, so nothing is listed or connected without a user: the block
// declares its tools one by one (no expose, no start = "load").
//
// A call by a user without a grant asks the user to authorize: by a
// URL-mode elicitation when the client declared it can show one (the call
// then waits for the callback, within the tool's timeout), otherwise by a
// tool error that holds the link. Each upstream also contributes a tool,
// disconnect_<name> by default (disconnect_tool), with which a user
// revokes their own grant.

// userModeName is the identity mode of the per-user connect flow. The
// other modes of the identity block (client_credentials, token_exchange,
// passthrough) are a service's or the caller's own token, not the user's
// authorization at the upstream.
const userModeName = "user_authorization"

// maxUserSessions bounds an upstream's per-user sessions.
const maxUserSessions = 256

var identitySchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "mode", Required: true},
		{Name: "issuer"},
		{Name: "client_id"},
		{Name: "client_secret"},
		{Name: "scopes"},
		{Name: "callback_url"},
		{Name: "grant_key"},
		{Name: "grant_ttl"},
		{Name: "timeout"},
		{Name: "disconnect_tool"},
	},
}

// userAuthConfig is a decoded identity block in user_authorization mode.
type userAuthConfig struct {
	flow           connect.Config
	disconnectTool string
}

// decodeIdentity decodes the identity block of an mcp_server.
func decodeIdentity(d *adapter.Decoder, b *hcl.Block, c *serverConfig, scope *adapter.Scope) *userAuthConfig {
	content, ok := d.Content(b.Body, identitySchema)
	if !ok {
		return nil
	}
	attrs := content.Attributes
	if mode, ok := d.String(attrs["mode"], "mode"); ok && mode != userModeName {
		d.Errorf(attrs["mode"].Expr.Range(), "Unsupported identity mode", "mode %q is not supported on mcp_server in this build; %q calls the upstream with each user's own authorization (docs/gateway.md, \"Per-user authorization\").", mode, userModeName)
		return nil
	}
	ua := &userAuthConfig{flow: connect.Config{Upstream: c.name}, disconnectTool: "disconnect_" + c.name}
	for _, name := range []string{"client_secret", "grant_key"} {
		if attr := attrs[name]; attr != nil && unknownAtLoad(attr, scope) {
			delete(attrs, name) // validation without secrets: the loader reports the variable
			c.unknown = true
		}
	}
	str := func(name string) (string, *hcl.Attribute) {
		attr := attrs[name]
		if attr == nil {
			return "", nil
		}
		s, _ := d.String(attr, name)
		return s, attr
	}
	if s, attr := str("issuer"); attr != nil {
		if err := connect.CheckEndpoint(s); err != nil {
			d.Errorf(attr.Expr.Range(), "Invalid issuer", "issuer is the authorization server's https:// URL (http:// on loopback only); leave it out to read it from the upstream's protected-resource metadata.")
		}
		ua.flow.Issuer = s
	}
	ua.flow.ClientID, _ = str("client_id")
	if s, attr := str("client_secret"); attr != nil {
		if ua.flow.ClientID == "" {
			d.Errorf(attr.NameRange, "client_secret without client_id", "client_secret goes with the client_id it was issued for.")
		}
		ua.flow.ClientSecret = s
		c.secrets = append(c.secrets, s)
	}
	if attr := attrs["scopes"]; attr != nil {
		if v, ok := d.Static(attr, "scopes", cty.List(cty.String)); ok {
			for _, e := range v.AsValueSlice() {
				if e.IsNull() || e.AsString() == "" || strings.ContainsAny(e.AsString(), " \"\\") {
					d.Errorf(attr.Expr.Range(), "Invalid scopes", "scopes are OAuth scope names, without spaces or quotes.")
					break
				}
				ua.flow.Scopes = append(ua.flow.Scopes, e.AsString())
			}
		}
	}
	if s, attr := str("callback_url"); attr != nil {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(u.Path, connect.CallbackPath) || u.RawQuery != "" || u.Fragment != "" {
			d.Errorf(attr.Expr.Range(), "Invalid callback_url", "callback_url is where users' browsers reach mcpd's %s, such as https://mcpd.example.com%s (behind a proxy that forwards it to mcpd).", connect.CallbackPath, connect.CallbackPath)
		}
		ua.flow.CallbackURL = s
	}
	if s, attr := str("grant_key"); attr != nil {
		key, err := parseGrantKey(s)
		if err != nil {
			d.Errorf(attr.Expr.Range(), "Invalid grant_key", "grant_key: %v", err)
		}
		ua.flow.Key = key
		c.secrets = append(c.secrets, s)
	}
	if attr := attrs["grant_ttl"]; attr != nil {
		ua.flow.GrantTTL, _ = d.Duration(attr, "grant_ttl", time.Hour, 365*24*time.Hour)
	}
	if attr := attrs["timeout"]; attr != nil {
		ua.flow.Timeout, _ = d.Duration(attr, "timeout", 100*time.Millisecond, time.Minute)
	}
	if s, attr := str("disconnect_tool"); attr != nil {
		if s != "" && !validToolName(s) {
			d.Errorf(attr.Expr.Range(), "Invalid disconnect_tool", "disconnect_tool is a tool name (1-128 of A-Z a-z 0-9 _ . -), or \"\" for none.")
		}
		ua.disconnectTool = s
	} else if !validToolName(ua.disconnectTool) {
		ua.disconnectTool = ""
	}
	return ua
}

// checkUserMode reports what an upstream that authorizes per user cannot
// have: everything that needs a session without a user.
func checkUserMode(d *adapter.Decoder, b *hcl.Block, c *serverConfig, attrs hcl.Attributes) {
	if c.url == "" && !c.unknown {
		d.Errorf(b.DefRange, "identity without url", "mode %q is for HTTP upstreams (url); a stdio upstream's program runs with the env it is given.", userModeName)
	}
	if c.expose != nil {
		d.Errorf(b.DefRange, "identity with expose", "an upstream that authorizes per user has no listing without a user: declare its tools one by one with tool blocks (mcp { server = %q tool = \"...\" }) instead of expose.", c.name)
	}
	if c.eager {
		d.Errorf(attrs["start"].Expr.Range(), "start = \"load\" with user authorization", "an upstream that authorizes per user is connected for each user on their first call.")
	}
	for k := range c.headers {
		if strings.EqualFold(k, "Authorization") {
			d.Errorf(attrs["headers"].Expr.Range(), "Authorization header with user authorization", "the Authorization header carries each user's own token; remove it from headers.")
		}
	}
}

// parseGrantKey reads a 32-byte key written as hex or base64.
func parseGrantKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == grants.KeySize {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == grants.KeySize {
			return b, nil
		}
	}
	return nil, fmt.Errorf("a grant key is %d random bytes, written as 64 hex digits or in base64 (e.g. `openssl rand -hex 32`)", grants.KeySize)
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// fingerprint identifies the block's user-authorization settings.
func (ua *userAuthConfig) fingerprint() string {
	if ua == nil {
		return ""
	}
	f := ua.flow
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %q %q %q %q %x %s %s %q", f.Upstream, f.Issuer, f.ClientID, f.ClientSecret, strings.Join(f.Scopes, " "),
		f.CallbackURL, f.Key, f.GrantTTL, f.Timeout, ua.disconnectTool)
	return hex.EncodeToString(h.Sum(nil))
}

// userAuth is an open upstream's per-user side: its flow and the
// sessions made for each principal.
type userAuth struct {
	flow *connect.Flow // nil: this build has no connect service (validate, lint)

	baseOnce sync.Once
	base     http.RoundTripper // shared by every user's sessions

	// sent are the tokens sent lately, newest last, that u.redact takes
	// out of what the upstream answers (an error that echoes a request).
	sentMu sync.Mutex
	sent   []string

	mu       sync.Mutex
	sessions map[string]*list.Element // principal -> its session, in lru
	lru      list.List                // of *userSession, most recent first
	dialing  map[string]chan struct{} // principal -> closed when its connect ends
}

type userSession struct {
	principal string
	cs        *mcp.ClientSession
}

// openUserAuth registers the upstream's flow with the service.
func (u *upstream) openUserAuth(svc *connect.Service) error {
	ua := &userAuth{sessions: map[string]*list.Element{}, dialing: map[string]chan struct{}{}}
	u.user = ua
	if svc == nil {
		return nil
	}
	cfg := u.cfg.user.flow
	cfg.Resource = u.cfg.url
	f, err := svc.Register(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", u.cfg, err)
	}
	ua.flow = f
	return nil
}

// closeUserAuth ends every user's session and unregisters the flow.
func (u *upstream) closeUserAuth() {
	ua := u.user
	if ua == nil {
		return
	}
	ua.mu.Lock()
	var all []*mcp.ClientSession
	for e := ua.lru.Front(); e != nil; e = e.Next() {
		all = append(all, e.Value.(*userSession).cs)
	}
	ua.sessions = map[string]*list.Element{}
	ua.lru.Init()
	ua.mu.Unlock()
	for _, cs := range all {
		_ = cs.Close()
	}
	if ua.flow != nil {
		ua.flow.Close()
	}
}

func (u *upstream) userFlow() (*connect.Flow, error) {
	if u.user.flow == nil {
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s authorizes each user, which needs `mcpd serve` (this command cannot receive the authorization)", u.cfg.name)}
	}
	return u.user.flow, nil
}

// authorizeCaller makes sure the caller of x has a grant: when it has
// none, it asks the client to have the user authorize (URL-mode
// elicitation) and waits for the callback, or fails the call with the
// link.
func (u *upstream) authorizeCaller(ctx context.Context, x *exchange) error {
	f, err := u.userFlow()
	if err != nil {
		return err
	}
	pk := connect.PrincipalKeyOf(ctx)
	_, err = f.Token(ctx, pk)
	if err == nil || !connect.IsNeedAuthorization(err) {
		return err
	}
	link, aerr := f.Authorize(ctx, pk)
	if aerr != nil {
		return fmt.Errorf("%s; starting the authorization failed: %s", err.Error(), u.redact(aerr.Error()))
	}
	caps := capabilitiesOf(x.client)
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return needAuthorization(err, link)
	}
	res, aerr := x.client.Ask(ctx, &mcp.ElicitParams{
		Mode: "url", URL: link, ElicitationID: fmt.Sprintf("mcpd-connect-%s-%d", u.cfg.name, time.Now().UnixNano()),
		Message: fmt.Sprintf("%s. Open the link to sign in at its authorization server and allow mcpd to call it for you.", err.Error()),
	})
	if aerr != nil {
		return needAuthorization(err, link)
	}
	if r, ok := res.(*mcp.ElicitResult); !ok || r.Action != "accept" {
		return fmt.Errorf("%s, and the user did not open the authorization link; call the tool again to be asked again", err.Error())
	}
	if werr := f.Wait(ctx, pk); werr != nil {
		return fmt.Errorf("%s: the authorization was not completed while the call waited (%v); once it is, call the tool again", err.Error(), werr)
	}
	return nil
}

// needAuthorization is the tool error that gives the user the link.
func needAuthorization(err error, link string) error {
	return fmt.Errorf("%s: open %s in a browser, sign in and allow access, then call the tool again (the link works once, for 10 minutes)", err.Error(), link)
}

// userSession returns the calling principal's session, connecting it on
// first use.
func (u *upstream) userSession(ctx context.Context) (*mcp.ClientSession, error) {
	f, err := u.userFlow()
	if err != nil {
		return nil, err
	}
	pk := connect.PrincipalKeyOf(ctx)
	if _, err := f.Token(ctx, pk); err != nil {
		if connect.IsNeedAuthorization(err) {
			if link, aerr := f.Authorize(ctx, pk); aerr == nil {
				return nil, needAuthorization(err, link)
			}
		}
		return nil, err
	}
	ua := u.user
	for {
		ua.mu.Lock()
		if e := ua.sessions[pk]; e != nil {
			ua.lru.MoveToFront(e)
			cs := e.Value.(*userSession).cs
			ua.mu.Unlock()
			return cs, nil
		}
		if ch := ua.dialing[pk]; ch != nil {
			ua.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		ua.dialing[pk] = ch
		ua.mu.Unlock()
		cs, err := u.dialUser(ctx, f, pk)
		ua.mu.Lock()
		delete(ua.dialing, pk)
		close(ch)
		if err != nil {
			ua.mu.Unlock()
			return nil, err
		}
		var evicted *mcp.ClientSession
		if ua.lru.Len() >= maxUserSessions {
			last := ua.lru.Back()
			s := last.Value.(*userSession)
			ua.lru.Remove(last)
			delete(ua.sessions, s.principal)
			evicted = s.cs
		}
		s := &userSession{principal: pk, cs: cs}
		ua.sessions[pk] = ua.lru.PushFront(s)
		ua.mu.Unlock()
		if evicted != nil {
			_ = evicted.Close()
		}
		go func() {
			_ = cs.Wait()
			u.forgetUserSession(pk, cs)
			_ = cs.Close() // what the session still holds (a listen stream)
		}()
		return cs, nil
	}
}

// forgetUserSession drops pk's session if it is still cs.
func (u *upstream) forgetUserSession(pk string, cs *mcp.ClientSession) {
	ua := u.user
	ua.mu.Lock()
	defer ua.mu.Unlock()
	if e := ua.sessions[pk]; e != nil && e.Value.(*userSession).cs == cs {
		ua.lru.Remove(e)
		delete(ua.sessions, pk)
	}
}

// dropUserSession closes cs, a user's session whose transport failed, so
// that the user's next call connects a new one.
func (u *upstream) dropUserSession(cs *mcp.ClientSession) {
	ua := u.user
	ua.mu.Lock()
	found := false
	for e := ua.lru.Front(); e != nil; e = e.Next() {
		if s := e.Value.(*userSession); s.cs == cs {
			ua.lru.Remove(e)
			delete(ua.sessions, s.principal)
			found = true
			break
		}
	}
	ua.mu.Unlock()
	if found {
		_ = cs.Close()
	}
}

// dialUser connects a session for principal pk: every request on it
// carries pk's current token, and no other.
func (u *upstream) dialUser(ctx context.Context, f *connect.Flow, pk string) (*mcp.ClientSession, error) {
	began := time.Now()
	cctx, cancel := context.WithTimeout(withHTTPAnswer(u.ctx), u.cfg.connectTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	cs, err := u.client.Connect(cctx, u.streamable(u.userHTTPClient(f, pk)), u.sessionOptions())
	if err != nil {
		u.failures.Add(1)
		why := "the handshake (" + u.handshake() + ") failed: " + u.transportFailure(cctx, err)
		if cctx.Err() != nil {
			why = fmt.Sprintf("the handshake (%s) did not complete within %s (connect_timeout %s)", u.handshake(), time.Since(began).Round(time.Millisecond), u.cfg.connectTimeout)
		}
		var na *connect.NeedAuthorization
		if errors.As(err, &na) {
			return nil, err
		}
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s: connecting a session for the call: %s", u.cfg.name, why)}
	}
	u.setUpstreamLogLevel(cctx, cs)
	return cs, nil
}

// dialUserPooled is dialPooled for an upstream that authorizes per user:
// the pool's session of a call is its caller's (the pool binds a session
// to the principal it was made for).
func (u *upstream) dialUserPooled(ctx context.Context) (*mcp.ClientSession, error) {
	f, err := u.userFlow()
	if err != nil {
		return nil, err
	}
	return u.dialUser(ctx, f, connect.PrincipalKeyOf(ctx))
}

// userHTTPClient is a client of the upstream for pk's sessions: the
// block's headers, then pk's token.
func (u *upstream) userHTTPClient(f *connect.Flow, pk string) *http.Client {
	u.user.baseOnce.Do(func() { u.user.base = u.httpTransport() })
	origin, _ := url.Parse(u.cfg.url)
	tok := &userTokenTransport{ua: u.user, flow: f, principal: pk, origin: origin, base: u.user.base}
	return outbound.Client(fmt.Sprintf("upstream %q", u.cfg.name),
		&headerTransport{headers: u.cfg.headers, origin: origin, base: tok, max: maxUpstreamMessage, pending: &u.relay.pending, deep: u.gate.droppedDeep})
}

// userTokenTransport sets the principal's bearer token on each request to
// the upstream's origin; a 401 tells the flow the token was refused.
type userTokenTransport struct {
	ua        *userAuth
	flow      *connect.Flow
	principal string
	origin    *url.URL
	base      http.RoundTripper
}

func (t *userTokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !outbound.SameOrigin(r.URL, t.origin) {
		return t.base.RoundTrip(r)
	}
	tok, err := t.flow.Token(r.Context(), t.principal)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	res, err := t.send(r, tok)
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		return res, err
	}
	// Refused: the token expired on the way (a short-lived one), or was
	// revoked. The grant is marked expired, and the request is sent once
	// more with the token a refresh gives, when there is one and the body
	// can be sent again.
	t.flow.Refused(context.WithoutCancel(r.Context()), t.principal, tok)
	if r.Body != nil && r.GetBody == nil {
		return res, nil
	}
	fresh, ferr := t.flow.Token(r.Context(), t.principal)
	if ferr != nil || fresh == tok {
		return res, nil
	}
	if r.GetBody != nil {
		body, berr := r.GetBody()
		if berr != nil {
			return res, nil
		}
		r = r.Clone(r.Context())
		r.Body = body
	}
	res.Body.Close()
	return t.send(r, fresh)
}

func (t *userTokenTransport) send(r *http.Request, tok string) (*http.Response, error) {
	t.ua.remember(tok)
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// maxRemembered bounds the tokens redacted from an upstream's answers.
const maxRemembered = 64

// remember adds tok to the tokens redacted.
func (ua *userAuth) remember(tok string) {
	ua.sentMu.Lock()
	defer ua.sentMu.Unlock()
	for i := len(ua.sent) - 1; i >= 0; i-- {
		if ua.sent[i] == tok {
			return
		}
	}
	if len(ua.sent) >= maxRemembered {
		ua.sent = append(ua.sent[:0], ua.sent[1:]...)
	}
	ua.sent = append(ua.sent, tok)
}

// redact takes the tokens sent lately out of s.
func (ua *userAuth) redact(s string) string {
	ua.sentMu.Lock()
	defer ua.sentMu.Unlock()
	for _, tok := range ua.sent {
		if strings.Contains(s, tok) {
			s = strings.ReplaceAll(s, tok, "[redacted]")
		}
	}
	return s
}

// redactResult takes the tokens sent lately out of a result's texts: an
// upstream that echoes its request must not hand a user's token to the
// model.
func (ua *userAuth) redactResult(res *mcp.CallToolResult) {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = ua.redact(t.Text)
		}
	}
}

// disconnectTool is the tool a user revokes their own grant with.
func (u *upstream) disconnectTools() []adapter.ContributedTool {
	name := u.cfg.user.disconnectTool
	if name == "" {
		return nil
	}
	return []adapter.ContributedTool{{
		Name:  name,
		Title: "Disconnect " + u.cfg.name,
		Description: fmt.Sprintf("Revoke your authorization of mcpd at the upstream %s: mcpd forgets your tokens and asks its authorization server to revoke them. "+
			"Calling a tool of %s afterwards asks you to authorize again.", u.cfg.name, u.cfg.name),
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptrTo(true), IdempotentHint: true, OpenWorldHint: ptrTo(true)},
		Handler:     &disconnectHandler{up: u},
	}}
}

func ptrTo[T any](v T) *T { return &v }

type disconnectHandler struct{ up *upstream }

func (h *disconnectHandler) Vars() []string { return nil }

func (h *disconnectHandler) Call(ctx context.Context, _ *adapter.Request) (*adapter.Output, error) {
	u := h.up
	f, err := u.userFlow()
	if err != nil {
		return nil, err
	}
	pk := connect.PrincipalKeyOf(ctx)
	had, err := f.Revoke(ctx, pk)
	if err != nil {
		return nil, fmt.Errorf("revoking your authorization of %s: %s", u.cfg.name, u.redact(err.Error()))
	}
	u.user.mu.Lock()
	var cs *mcp.ClientSession
	if e := u.user.sessions[pk]; e != nil {
		cs = e.Value.(*userSession).cs
		u.user.lru.Remove(e)
		delete(u.user.sessions, pk)
	}
	u.user.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if !had {
		return &adapter.Output{Text: fmt.Sprintf("mcpd held no authorization of yours for %s.", u.cfg.name)}, nil
	}
	return &adapter.Output{Text: fmt.Sprintf("Disconnected from %s: mcpd no longer holds your authorization, and asked its authorization server to revoke the tokens.", u.cfg.name)}, nil
}

func (h *disconnectHandler) Traits() adapter.Traits { return adapter.Traits{} }
