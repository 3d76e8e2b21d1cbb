// Package identity is the identity block of mcpd's outbound HTTP: which
// OAuth 2.0 bearer token a backend's (http_backend) or an upstream MCP
// server's (mcp_server) requests carry, and the cache that obtains those
// tokens from the authorization server. The HTTP adapter and the MCP
// adapter share it; neither imports the other.
package identity

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/redact"
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
// where it replaces the backend's, or in an mcp_server block with a url.

// Identity modes.
const (
	ModeClientCredentials = "client_credentials"
	ModeTokenExchange     = "token_exchange"
	ModePassthrough       = "passthrough"
)

var identityModes = []string{ModeClientCredentials, ModeTokenExchange, ModePassthrough}

// Defaults and limits of an identity block.
const (
	defaultTokenTimeout = 10 * time.Second
	minTokenTimeout     = time.Millisecond
	maxTokenTimeout     = 5 * time.Minute
)

// Schema is the schema of an identity block.
var Schema = &adapter.Schema{
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

// Config is one decoded identity block. It holds the client secret: it
// prints as its owner only.
type Config struct {
	Owner        string // `http_backend "crm"`, `tool "x"` or `mcp_server "gh"`, for messages
	Mode         string
	TokenURL     string
	ClientID     string
	ClientSecret string
	ClientAuth   string // "basic" (client_secret_basic) or "post" (client_secret_post)
	Audience     string
	Resource     string
	Scopes       []string
	Timeout      time.Duration
}

func (c *Config) String() string   { return "identity of " + c.Owner }
func (c *Config) GoString() string { return c.String() }

// Key identifies the token this identity obtains, secret included (a
// rotated secret is a new client), as a hash: the token cache is keyed by
// it, never by the secret itself.
func (c *Config) Key() string {
	h := sha256.New()
	for _, s := range []string{"identity/v1", c.Mode, c.TokenURL, c.ClientID, c.ClientSecret, c.ClientAuth, c.Audience, c.Resource, strings.Join(c.Scopes, " ")} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NeedsCaller reports whether the mode sends the caller's identity, which
// only a caller verified with an OAuth token has.
func (c *Config) NeedsCaller() bool { return c.Mode != ModeClientCredentials }

// Decode decodes an identity block of owner. It returns the values env()
// and file() read in it and the client secret, which the owner must never
// show (nil when there are none), and nil for a block with errors, which
// are in d.
func Decode(d *adapter.Decoder, b *hcl.Block, owner string) (*Config, []string) {
	content, ok := d.Content(b.Body, Schema)
	if !ok {
		return nil, nil
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
	var secrets []string
	c := &Config{Owner: owner, ClientAuth: "basic", Timeout: defaultTokenTimeout}
	good := true
	modeAttr := attrs["mode"]
	if modeAttr == nil {
		// Required, and reported by Content; it may also have been an
		// unknown value.
		return nil, nil
	}
	if m, ok := d.String(modeAttr, "identity.mode"); ok {
		if !slices.Contains(identityModes, m) {
			msg := fmt.Sprintf("identity.mode must be one of %q, %q or %q; got %q.", ModeClientCredentials, ModeTokenExchange, ModePassthrough, m)
			if s := suggest.Closest(m, identityModes); s != "" {
				msg += fmt.Sprintf(" Did you mean %q?", s)
			}
			d.Errorf(modeAttr.Expr.Range(), "Invalid identity.mode", "%s", msg)
			return nil, nil
		}
		c.Mode = m
	} else {
		return nil, nil
	}

	str := func(name string) (string, *hcl.Attribute) {
		attr := attrs[name]
		if attr == nil {
			return "", nil
		}
		secrets = append(secrets, secretCalls(d, attr.Expr)...)
		s, ok := d.String(attr, "identity."+name)
		if !ok {
			good = false
		}
		return s, attr
	}
	var urlAttr, idAttr, secretAttr, audAttr, resAttr *hcl.Attribute
	c.TokenURL, urlAttr = str("token_url")
	c.ClientID, idAttr = str("client_id")
	c.ClientSecret, secretAttr = str("client_secret")
	c.Audience, audAttr = str("audience")
	c.Resource, resAttr = str("resource")
	if c.ClientSecret != "" {
		secrets = append(secrets, c.ClientSecret) // a literal secret is a secret all the same
	}
	if attr := attrs["client_auth"]; attr != nil {
		if s, ok := d.String(attr, "identity.client_auth"); ok {
			switch s {
			case "basic", "post":
				c.ClientAuth = s
			default:
				d.Errorf(attr.Expr.Range(), "Invalid identity.client_auth", `identity.client_auth is how mcpd authenticates to the token endpoint: "basic" (HTTP Basic, client_secret_basic, the default) or "post" (in the form, client_secret_post); got %q.`, s)
				good = false
			}
		}
	}
	if attr := attrs["scopes"]; attr != nil {
		c.Scopes = decodeScopes(d, attr)
	}
	if attr := attrs["timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "identity.timeout", minTokenTimeout, maxTokenTimeout); ok {
			c.Timeout = dur
		}
	}
	if urlAttr != nil && c.TokenURL != "" {
		if msg := checkTokenURL(c.TokenURL); msg != "" {
			d.Errorf(urlAttr.Expr.Range(), "Invalid identity.token_url", "identity.token_url: %s.", msg)
			good = false
		}
	}
	if resAttr != nil && c.Resource != "" {
		if u, err := url.Parse(c.Resource); err != nil || !u.IsAbs() || u.Fragment != "" {
			d.Errorf(resAttr.Expr.Range(), "Invalid identity.resource", "identity.resource is the backend's resource indicator (RFC 8707): an absolute URI without a fragment, such as https://api.example.com; got %q.", c.Resource)
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

	switch c.Mode {
	case ModePassthrough:
		// The caller's token goes as it is: there is no client, and no
		// token endpoint.
		for _, name := range []string{"token_url", "client_id", "client_secret", "client_auth", "resource", "scopes", "timeout"} {
			if attr := attrs[name]; attr != nil {
				d.Errorf(attr.NameRange, "Unused identity."+name, `identity.%s is not used with mode = "passthrough", which forwards the caller's own token; use mode = "token_exchange" to have the authorization server issue a token for this backend.`, name)
				good = false
			}
		}
		if a := d.Scope.Auth; audAttr != nil && a != nil && a.Audience != "" && c.Audience == a.Audience {
			d.Errorf(audAttr.Expr.Range(), "Passthrough to this server's audience", `identity.audience is %q, the audience of the tokens mcpd itself accepts (auth): every token a client sends mcpd would be forwarded to this backend. Set the backend's own identifier, which its tokens list in aud.`, c.Audience)
			good = false
		}
		if audAttr == nil && !unknown["audience"] {
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
			if req.attr == nil && !unknown[req.name] {
				d.Errorf(modeAttr.Range, "Missing identity."+req.name, "mode = %q needs %s: %s.", c.Mode, req.name, req.hint)
				good = false
			}
		}
		if c.Mode == ModeTokenExchange && audAttr == nil && resAttr == nil && !unknown["audience"] && !unknown["resource"] {
			d.Errorf(modeAttr.Range, "Missing identity.audience", `mode = "token_exchange" needs audience (or resource): the backend the exchanged token is for, e.g. audience = "https://api.example.com". A token for any audience is what token exchange exists to avoid.`)
			good = false
		}
	}

	if c.NeedsCaller() {
		why := `mode = %q sends the caller's identity, which comes from the caller's OAuth access token`
		switch a := d.Scope.Auth; {
		case a == nil:
			d.Errorf(modeAttr.Expr.Range(), "Identity without auth", why+", but this config has no auth block: every call is anonymous. Add auth { resource = \"...\" oauth { ... } }, or use mode = %q for the service's own identity.", c.Mode, ModeClientCredentials)
			good = false
		case !a.OAuth:
			d.Errorf(modeAttr.Expr.Range(), "Identity without OAuth", why+", but the auth block (%s) only has API keys, which never leave mcpd. Add an oauth block to it, or use mode = %q for the service's own identity.", c.Mode, posOf(a.Range), ModeClientCredentials)
			good = false
		}
	}
	if !good {
		return nil, secrets
	}
	return c, secrets
}

// secretCalls are the values that env(), file() and filebase64() read in
// expr, recorded the way the engine records them for the whole config
// (funcs.RecordingTable; an env() default is not a secret).
func secretCalls(d *adapter.Decoder, expr hcl.Expression) []string {
	var set redact.Set
	funcs.EvalSecretCalls(expr, &hcl.EvalContext{Functions: funcs.RecordingTable(d.Scope.Dir, &set)})
	return set.Values()
}

// unknownAtLoad reports whether attr is a valid load-time expression whose
// value is not wholly known: it reads an unset environment variable in a
// load that allows that (funcs.Options.UnsetEnvUnknown).
func unknownAtLoad(attr *hcl.Attribute, scope *adapter.Scope) bool {
	if len(attr.Expr.Variables()) > 0 {
		return false
	}
	v, d := attr.Expr.Value(scope.EvalContext())
	return !d.HasErrors() && !v.IsWhollyKnown()
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
func decodeScopes(d *adapter.Decoder, attr *hcl.Attribute) []string {
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
			d.Errorf(attr.Expr.Range(), "Invalid identity.scopes", "%s; got %s.", hint, describe(ev))
			return nil
		}
		out = append(out, ev.AsString())
	}
	return out
}

// describe shows a scope that is not one.
func describe(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case v.Type() == cty.String:
		return strconv.Quote(v.AsString())
	case v.Type() == cty.Number:
		return v.AsBigFloat().Text('g', -1)
	}
	return v.Type().FriendlyName()
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

// CheckHeaders refuses an Authorization header beside an identity block
// (names are the header names attr sets): the identity sets it on every
// request.
func CheckHeaders(d *adapter.Decoder, attr *hcl.Attribute, names []string, id *Config) {
	for _, n := range names {
		if http.CanonicalHeaderKey(n) == "Authorization" {
			d.Errorf(attr.Expr.Range(), "Authorization set twice", "headers sets Authorization, which the %s sets on every request (mode = %q); remove it from headers.", id, id.Mode)
			return
		}
	}
}

// Fingerprint adds the identity's settings to a backend's fingerprint.
func (c *Config) Fingerprint(str func(string)) {
	if c == nil {
		str("no identity")
		return
	}
	str(c.Key())
	str(c.Timeout.String())
}
