package mcpadapter

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/ident"
	"github.com/mcpd/mcpd/engine/redact"
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
// It is the upstream's identity hook (upstreamAuth, identity.go) as a
// per-caller mode: every session to the upstream is made for one caller
// and carries only that caller's token (callers.go, pool.go), and a token
// the upstream refuses is refreshed once within the call. mcpd's own
// session carries no token, so nothing is listed without a user: the
// block declares its tools one by one (no expose, no start = "load").
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

// isUserMode reports whether an identity block says mode =
// "user_authorization" (decodeUserIdentity); the other modes are the
// identity package's.
func isUserMode(b *hcl.Block) bool {
	attrs, _ := b.Body.JustAttributes()
	a := attrs["mode"]
	if a == nil {
		return false
	}
	v, diags := a.Expr.Value(nil)
	return !diags.HasErrors() && v.Type() == cty.String && v.IsKnown() && !v.IsNull() && v.AsString() == userModeName
}

// decodeUserIdentity decodes an identity block in user_authorization mode.
func decodeUserIdentity(d *adapter.Decoder, b *hcl.Block, c *serverConfig, scope *adapter.Scope) *userAuthConfig {
	content, ok := d.Content(b.Body, identitySchema)
	if !ok {
		return nil
	}
	attrs := content.Attributes
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
		if s != "" && !ident.ToolName(s) {
			d.Errorf(attr.Expr.Range(), "Invalid disconnect_tool", "disconnect_tool is a tool name (1-128 of A-Z a-z 0-9 _ . -), or \"\" for none.")
		}
		ua.disconnectTool = s
	} else if !ident.ToolName(ua.disconnectTool) {
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

// userAuth is an open upstream's per-user side: its flow, as the
// upstream's identity hook (upstreamAuth, identity.go). The sessions are
// the identity's: each caller's own, made with and carrying only that
// caller's token (callers.go, pool.go).
type userAuth struct {
	upstream string
	flow     *connect.Flow // nil: this build has no connect service (validate, lint)
}

var _ upstreamAuth = (*userAuth)(nil)

// openUserAuth registers the upstream's flow with the service and makes
// it the upstream's identity.
func (u *upstream) openUserAuth(svc *connect.Service) error {
	ua := &userAuth{upstream: u.cfg.name}
	u.user = ua
	u.auth = ua
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

// closeUserAuth unregisters the flow; grants stay.
func (u *upstream) closeUserAuth() {
	if u.user != nil && u.user.flow != nil {
		u.user.flow.Close()
	}
}

func (ua *userAuth) perCaller() bool { return true }

func (ua *userAuth) flowOrErr() (*connect.Flow, error) {
	if ua.flow == nil {
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s authorizes each user, which needs `mcpd serve` (this command cannot receive the authorization)", ua.upstream)}
	}
	return ua.flow, nil
}

// tokenForCall is the caller's own access token at the upstream; without
// a grant, an error that holds the link to authorize.
func (ua *userAuth) tokenForCall(ctx context.Context) (*callToken, error) {
	f, err := ua.flowOrErr()
	if err != nil {
		return nil, err
	}
	pk := connect.PrincipalKeyOf(ctx)
	tok, err := f.Token(ctx, pk)
	if err != nil {
		if connect.IsNeedAuthorization(err) {
			if link, aerr := f.Authorize(ctx, pk); aerr == nil {
				return nil, needAuthorization(err, link)
			}
		}
		return nil, err
	}
	return ua.callToken(ctx, f, pk, tok), nil
}

func (ua *userAuth) callToken(ctx context.Context, f *connect.Flow, pk, tok string) *callToken {
	t := &callToken{bearer: tok, owner: ownerOf(ctx), redactor: redact.New([]string{tok}),
		delegation: adapter.Delegation{Mode: userModeName, Subject: pk}}
	owner := t.owner
	t.renew = func(rctx context.Context) (*callToken, error) {
		// Refused (401): the token expired on the way, or was revoked.
		// The grant is marked expired; a refresh gives the next one.
		f.Refused(context.WithoutCancel(rctx), pk, tok)
		fresh, err := f.Token(rctx, pk)
		if err != nil {
			return nil, err
		}
		if fresh == tok {
			return nil, fmt.Errorf("upstream %s refused your authorization", ua.upstream)
		}
		n := ua.callToken(rctx, f, pk, fresh)
		n.owner = owner
		return n, nil
	}
	return t
}

// authorizeCaller makes sure the caller of x has a grant before the call
// is made: a client that can show a URL (URL-mode elicitation) is asked
// to have the user authorize, and the call waits for the callback; any
// other gets the tool error with the link (tokenForCall).
func (u *upstream) authorizeCaller(ctx context.Context, x *exchange) error {
	f, err := u.user.flowOrErr()
	if err != nil {
		return err
	}
	caps := capabilitiesOf(x.client)
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return nil // tokenForCall answers with the link
	}
	pk := connect.PrincipalKeyOf(ctx)
	_, err = f.Token(ctx, pk)
	if err == nil || !connect.IsNeedAuthorization(err) {
		return nil // tokenForCall says what failed
	}
	link, aerr := f.Authorize(ctx, pk)
	if aerr != nil {
		return fmt.Errorf("%s; starting the authorization failed: %s", err.Error(), u.redact(aerr.Error()))
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
	f, err := u.user.flowOrErr()
	if err != nil {
		return nil, err
	}
	pk := connect.PrincipalKeyOf(ctx)
	had, err := f.Revoke(ctx, pk)
	if err != nil {
		return nil, fmt.Errorf("revoking your authorization of %s: %s", u.cfg.name, u.redact(err.Error()))
	}
	if !had {
		return &adapter.Output{Text: fmt.Sprintf("mcpd held no authorization of yours for %s.", u.cfg.name)}, nil
	}
	return &adapter.Output{Text: fmt.Sprintf("Disconnected from %s: mcpd no longer holds your authorization, and asked its authorization server to revoke the tokens.", u.cfg.name)}, nil
}

func (h *disconnectHandler) Traits() adapter.Traits { return adapter.Traits{} }
