package httpadapter

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/suggest"
)

// An identity block says which identity a backend's requests carry, as an
// OAuth 2.0 bearer token that mcpd obtains for each call:
//
//   - client_credentials: the service's own, from the client credentials
//     grant (RFC 6749 §4.4), shared by every caller;
//   - token_exchange: the caller's, exchanged at the authorization server
//     for a token meant for this backend (RFC 8693), one per caller;
//   - passthrough: the caller's own token, forwarded only when its
//     audience includes this backend's (else mcpd would be the confused
//     deputy the MCP specification forbids).
//
// An identity block sits in an http_backend, or in a tool's http block,
// where it replaces the backend's.

// Identity modes.
const (
	modeClientCredentials = "client_credentials"
	modeTokenExchange     = "token_exchange"
	modePassthrough       = "passthrough"
)

var identityModes = []string{modeClientCredentials, modeTokenExchange, modePassthrough}

// Defaults and limits of an identity block.
const (
	defaultTokenTimeout = 10 * time.Second
	maxTokenTimeout     = 5 * time.Minute
)

var identitySchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "mode", Required: true},
		{Name: "token_url"},
		{Name: "client_id"},
		{Name: "client_secret"},
		{Name: "client_auth"},
		{Name: "audience"},
		{Name: "resource"},
		{Name: "scopes"},
		{Name: "timeout"},
	},
}

// identityConfig is one decoded identity block. It holds the client
// secret: it prints as its owner only.
type identityConfig struct {
	owner        string // `http_backend "crm"` or `tool "x"`, for messages
	mode         string
	tokenURL     string
	clientID     string
	clientSecret string
	clientAuth   string // "basic" (client_secret_basic) or "post" (client_secret_post)
	audience     string
	resource     string
	scopes       []string
	timeout      time.Duration
}

func (c *identityConfig) String() string   { return "identity of " + c.owner }
func (c *identityConfig) GoString() string { return c.String() }

// key identifies the token this identity obtains, secret included (a
// rotated secret is a new client), as a hash: the token cache is keyed by
// it, never by the secret itself.
func (c *identityConfig) key() string {
	h := sha256.New()
	for _, s := range []string{"identity/v1", c.mode, c.tokenURL, c.clientID, c.clientSecret, c.clientAuth, c.audience, c.resource, strings.Join(c.scopes, " ")} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// needsCaller reports whether the mode sends the caller's identity, which
// only a caller verified with an OAuth token has.
func (c *identityConfig) needsCaller() bool { return c.mode != modeClientCredentials }

// decodeIdentity decodes an identity block of owner. The values env() and
// file() read (the client secret) are added to sec.
func (d *decoder) decodeIdentity(b *hcl.Block, owner string, sec *secrets) *identityConfig {
	content, ok := d.Content(b.Body, identitySchema)
	if !ok {
		return nil
	}
	attrs := content.Attributes
	unknown := map[string]bool{}
	for name, attr := range attrs {
		if unknownAtLoad(attr, d.Scope) {
			// env() of a variable that is unset in a load that allows
			// it: the loader reports the variable once, and it is not
			// missing.
			delete(attrs, name)
			unknown[name] = true
		}
	}
	hasUnknown := func(_ *hcl.BodyContent, name string) bool { return unknown[name] }
	c := &identityConfig{owner: owner, clientAuth: "basic", timeout: defaultTokenTimeout}
	good := true
	modeAttr := attrs["mode"]
	if modeAttr == nil {
		// Required, and reported by Content; it may also have been an
		// unknown value.
		return nil
	}
	if m, ok := d.String(modeAttr, "identity.mode"); ok {
		if !slices.Contains(identityModes, m) {
			msg := fmt.Sprintf("identity.mode must be one of %q, %q or %q; got %q.", modeClientCredentials, modeTokenExchange, modePassthrough, m)
			if s := suggest.Closest(m, identityModes); s != "" {
				msg += fmt.Sprintf(" Did you mean %q?", s)
			}
			d.Errorf(modeAttr.Expr.Range(), "Invalid identity.mode", "%s", msg)
			return nil
		}
		c.mode = m
	} else {
		return nil
	}

	str := func(name string) (string, *hcl.Attribute) {
		attr := attrs[name]
		if attr == nil {
			return "", nil
		}
		collectSecrets(d, attr.Expr, sec)
		s, ok := d.String(attr, "identity."+name)
		if !ok {
			good = false
		}
		return s, attr
	}
	var urlAttr, idAttr, secretAttr, audAttr, resAttr *hcl.Attribute
	c.tokenURL, urlAttr = str("token_url")
	c.clientID, idAttr = str("client_id")
	c.clientSecret, secretAttr = str("client_secret")
	c.audience, audAttr = str("audience")
	c.resource, resAttr = str("resource")
	if c.clientSecret != "" {
		sec.add(c.clientSecret) // a literal secret is a secret all the same
	}
	if attr := attrs["client_auth"]; attr != nil {
		if s, ok := d.String(attr, "identity.client_auth"); ok {
			switch s {
			case "basic", "post":
				c.clientAuth = s
			default:
				d.Errorf(attr.Expr.Range(), "Invalid identity.client_auth", `identity.client_auth is how mcpd authenticates to the token endpoint: "basic" (HTTP Basic, client_secret_basic, the default) or "post" (in the form, client_secret_post); got %q.`, s)
				good = false
			}
		}
	}
	if attr := attrs["scopes"]; attr != nil {
		c.scopes = d.decodeScopes(attr)
	}
	if attr := attrs["timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "identity.timeout", minTimeout, maxTokenTimeout); ok {
			c.timeout = dur
		}
	}
	if urlAttr != nil && c.tokenURL != "" {
		if msg := checkTokenURL(c.tokenURL); msg != "" {
			d.Errorf(urlAttr.Expr.Range(), "Invalid identity.token_url", "identity.token_url: %s.", msg)
			good = false
		}
	}
	if resAttr != nil && c.resource != "" {
		if u, err := url.Parse(c.resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			d.Errorf(resAttr.Expr.Range(), "Invalid identity.resource", "identity.resource is the backend's resource indicator (RFC 8707): an absolute URI without a fragment, such as https://api.example.com; got %q.", c.resource)
			good = false
		}
	}
	for _, a := range []*hcl.Attribute{idAttr, secretAttr, audAttr} {
		if a != nil {
			if v, _ := a.Expr.Value(d.Scope.EvalContext()); v.IsKnown() && !v.IsNull() && v.Type() == cty.String && v.AsString() == "" {
				d.Errorf(a.Expr.Range(), "Empty identity."+a.Name, "identity.%s must not be empty.", a.Name)
				good = false
			}
		}
	}

	switch c.mode {
	case modePassthrough:
		// The caller's token goes as it is: there is no client, and no
		// token endpoint.
		for _, name := range []string{"token_url", "client_id", "client_secret", "client_auth", "resource", "scopes", "timeout"} {
			if attr := attrs[name]; attr != nil {
				d.Errorf(attr.NameRange, "Unused identity."+name, `identity.%s is not used with mode = "passthrough", which forwards the caller's own token; use mode = "token_exchange" to have the authorization server issue a token for this backend.`, name)
				good = false
			}
		}
		if a := d.Scope.Auth; audAttr != nil && a != nil && a.Audience != "" && c.audience == a.Audience {
			d.Errorf(audAttr.Expr.Range(), "Passthrough to this server's audience", `identity.audience is %q, the audience of the tokens mcpd itself accepts (auth): every token a client sends mcpd would be forwarded to this backend. Set the backend's own identifier, which its tokens list in aud.`, c.audience)
			good = false
		}
		if audAttr == nil && !hasUnknown(content, "audience") {
			d.Errorf(modeAttr.Range, "Missing identity.audience", `mode = "passthrough" needs audience: the backend's identifier, which the caller's token must list in its aud claim to be forwarded (e.g. audience = "https://api.example.com").`)
			good = false
		}
	default:
		for _, req := range []struct {
			name string
			attr *hcl.Attribute
			hint string
		}{
			{"token_url", urlAttr, `the authorization server's token endpoint, e.g. token_url = "https://auth.example.com/oauth2/token"`},
			{"client_id", idAttr, `mcpd's client id at the authorization server, e.g. client_id = env("API_CLIENT_ID")`},
			{"client_secret", secretAttr, `mcpd's client secret, e.g. client_secret = env("API_CLIENT_SECRET") or file("/run/secrets/api")`},
		} {
			if req.attr == nil && !hasUnknown(content, req.name) {
				d.Errorf(modeAttr.Range, "Missing identity."+req.name, "mode = %q needs %s: %s.", c.mode, req.name, req.hint)
				good = false
			}
		}
		if c.mode == modeTokenExchange && audAttr == nil && resAttr == nil && !hasUnknown(content, "audience") && !hasUnknown(content, "resource") {
			d.Errorf(modeAttr.Range, "Missing identity.audience", `mode = "token_exchange" needs audience (or resource): the backend the exchanged token is for, e.g. audience = "https://api.example.com". A token for any audience is what token exchange exists to avoid.`)
			good = false
		}
	}

	if c.needsCaller() {
		why := `mode = %q sends the caller's identity, which comes from the caller's OAuth access token`
		switch a := d.Scope.Auth; {
		case a == nil:
			d.Errorf(modeAttr.Expr.Range(), "Identity without auth", why+", but this config has no auth block: every call is anonymous. Add auth { resource = \"...\" oauth { ... } }, or use mode = %q for the service's own identity.", c.mode, modeClientCredentials)
			good = false
		case !a.OAuth:
			d.Errorf(modeAttr.Expr.Range(), "Identity without OAuth", why+", but the auth block (%s) only has API keys, which never leave mcpd. Add an oauth block to it, or use mode = %q for the service's own identity.", c.mode, posOf(a.Range), modeClientCredentials)
			good = false
		}
	}
	if !good {
		return nil
	}
	return c
}

// isLoopback reports whether host (a name or an IP, without port) is the
// local machine only.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func posOf(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// decodeScopes reads a list of OAuth scopes.
func (d *decoder) decodeScopes(attr *hcl.Attribute) []string {
	v, ok := d.Value(attr, "identity.scopes")
	if !ok {
		return nil
	}
	const hint = `identity.scopes must be a list of scope names without spaces, such as ["orders.read"]`
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		d.Errorf(attr.Expr.Range(), "Invalid identity.scopes", "%s.", hint)
		return nil
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() || ev.Type() != cty.String || ev.AsString() == "" || strings.ContainsAny(ev.AsString(), " \t\r\n\"\\") {
			d.Errorf(attr.Expr.Range(), "Invalid identity.scopes", "%s; got %s.", hint, describeValue(ev))
			return nil
		}
		out = append(out, ev.AsString())
	}
	return out
}

// checkTokenURL requires an absolute https URL (http only for a loopback
// host: tests, or an AS beside mcpd), without userinfo or fragment.
func checkTokenURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Sprintf("%q is not an absolute URL", s)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Sprintf("%q must be an https URL", s)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Sprintf("%q must use https: the client secret and tokens cross it (http is accepted for loopback hosts only)", s)
	case u.User != nil:
		return "the URL must not carry credentials; use client_id and client_secret"
	case u.Fragment != "":
		return "the URL must not have a fragment"
	}
	return ""
}

// checkIdentityHeaders refuses an Authorization header beside an identity
// block: the identity sets it on every request.
func (d *decoder) checkIdentityHeaders(attr *hcl.Attribute, names []string, id *identityConfig) {
	for _, n := range names {
		if http.CanonicalHeaderKey(n) == "Authorization" {
			d.Errorf(attr.Expr.Range(), "Authorization set twice", "headers sets Authorization, which the %s sets on every request (mode = %q); remove it from headers.", id, id.mode)
			return
		}
	}
}

// fingerprint adds the identity's settings to a backend's fingerprint.
func (c *identityConfig) fingerprint(str func(string)) {
	if c == nil {
		str("no identity")
		return
	}
	str(c.key())
	str(c.timeout.String())
}
