// Package auth authenticates HTTP callers: API keys (static bearer tokens)
// and OAuth 2.1 access tokens (JWTs checked against the issuer's JWKS), as
// an MCP resource server. Compile turns the config's auth block into a
// Config once per load (key digests computed, the JWKS cache set up); the
// Middleware reads the current snapshot's Config on every request, so a
// reload that rotates keys takes effect at once. A verified caller goes to
// the SDK as principal.Principal.TokenInfo, through auth.RequireBearerToken.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/principal"
)

// Config is a compiled auth block. It is immutable once built: a reload
// builds a new one.
type Config struct {
	header   string // extra API key header, canonical form; "" for none
	resource string // this server's resource URI; "" when not set
	scopes   []string
	keys     []apiKey
	hasKeys  bool // api_key blocks are declared (their values may be unknown: Requirements)
	oauth    *oauthVerifier
	// prmURL is the resource_metadata URL put in WWW-Authenticate; prm
	// serves the document. Both are empty without oauth.
	prmURL string
	prm    http.Handler
}

type apiKey struct {
	digest    [sha256.Size]byte
	principal *principal.Principal
}

// Options tune Compile; the zero value is what mcpd serves with.
type Options struct {
	// HTTPClient fetches JWKS documents and introspects tokens (default:
	// 10s timeout). Whichever it is, redirects are refused (engine/outbound):
	// the key set and the introspection answer are trusted only from the
	// configured address, and the introspection request carries the
	// client's credentials and the caller's token.
	HTTPClient *http.Client
	// JWKSMinRefresh is the least time between two JWKS fetches caused
	// by tokens with an unknown key id (default 10s).
	JWKSMinRefresh time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// UnsetEnvUnknown evaluates env() of an unset variable as an unknown
	// value, whose checks are skipped (config.Options.UnsetEnvUnknown):
	// `mcpd list` and `validate` read a config without its secrets. The
	// Config compiled then lacks what was unknown and must not serve;
	// the loader never serves a config with unset variables.
	UnsetEnvUnknown bool
}

// Compile checks and compiles an auth block. It returns nil for a nil
// block (auth off). prev is the Config being replaced, if any: its JWKS
// cache is kept when the JWKS URL did not change, so that a reload does not
// refetch the keys.
func Compile(a *config.Auth, prev *Config, opts Options) (*Config, hcl.Diagnostics) {
	if a == nil {
		return nil, nil
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.JWKSMinRefresh == 0 {
		opts.JWKSMinRefresh = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ev := evaluator{ctx: &hcl.EvalContext{Functions: funcs.TableWith(a.Dir, funcs.Options{UnsetEnvUnknown: opts.UnsetEnvUnknown})}}
	c := &Config{}
	if h, ok := ev.str(a.Header); ok && h != "" {
		c.header = textproto.CanonicalMIMEHeaderKey(h)
		if c.header == "Authorization" || strings.ContainsAny(h, " :\t") {
			ev.errorf(a.Header.Expr.Range(), "Invalid auth header", "header names an extra header for API keys, such as X-Api-Key (Authorization: Bearer always works); %q cannot be used.", h)
		}
	}
	if r, ok := ev.str(a.Resource); ok && r != "" {
		if err := checkURL(r); err != nil {
			ev.errorf(a.Resource.Expr.Range(), "Invalid auth resource", "resource is this server's URI as clients reach it, e.g. https://mcp.example.com/mcp: %s.", err)
		}
		c.resource = r
	}
	c.scopes, _ = ev.strings(a.Scopes)
	c.hasKeys = len(a.APIKeys) > 0
	if len(a.APIKeys) == 0 && a.OAuth == nil {
		ev.errorf(a.DeclRange, "Empty auth block", "An auth block needs at least one api_key block or an oauth block; without them no caller could authenticate.")
	}
	names := map[string]hcl.Range{}
	for _, k := range a.APIKeys {
		if first, dup := names[k.Name]; dup {
			ev.errorf(k.NameRange, "Duplicate api_key", "api_key %q is already declared at %s.", k.Name, config.Pos(first))
			continue
		}
		names[k.Name] = k.NameRange
		if key, ok := ev.apiKey(k); ok {
			for _, other := range c.keys {
				if other.digest == key.digest {
					ev.errorf(k.DeclRange, "Duplicate API key value", "api_key %q has the same value as api_key %q: each key must identify one caller.", k.Name, other.principal.Name)
				}
			}
			c.keys = append(c.keys, key)
		}
	}
	if a.OAuth != nil {
		var prevJWKS *jwksCache
		if prev != nil && prev.oauth != nil {
			prevJWKS = prev.oauth.jwks
		}
		c.oauth = ev.oauth(a.OAuth, c.resource, a.DeclRange, prevJWKS, opts)
		if c.oauth != nil {
			c.prmURL = metadataURL(c.resource)
			c.prm = sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
				Resource:               c.resource,
				AuthorizationServers:   []string{c.oauth.issuer},
				ScopesSupported:        c.scopes,
				BearerMethodsSupported: []string{"header"},
			})
		}
	}
	if ev.diags.HasErrors() {
		return nil, ev.diags
	}
	return c, ev.diags
}

// metadataURL is where RFC 9728 puts the metadata of resource: the
// well-known path inserted before the resource's own path.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// checkURL requires an absolute http(s) URL, https unless the host is a
// loopback address (tests, or an issuer on the same host).
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.Scheme == "http" && !IsLoopbackHost(u.Hostname()) {
		return fmt.Errorf("%q must use https (http is accepted for loopback hosts only)", s)
	}
	return nil
}

// IsLoopbackHost reports whether host (a name or an IP, without port) is
// the local machine only.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// errUnavailable marks a failure to verify that is the server's, not the
// token's (the JWKS could not be fetched).
var errUnavailable = errors.New("cannot verify tokens now")

// verify authenticates token: an API key first (a digest compared in
// constant time with every key), then a JWT.
func (c *Config) verify(ctx context.Context, token string) (*principal.Principal, time.Time, error) {
	d := sha256.Sum256([]byte(token))
	var found *principal.Principal
	for i := range c.keys {
		// No early exit: the time taken does not tell which key matched.
		if subtle.ConstantTimeCompare(d[:], c.keys[i].digest[:]) == 1 {
			found = c.keys[i].principal
		}
	}
	if found != nil {
		return found, time.Time{}, nil
	}
	if c.oauth != nil && c.oauth.jwks != nil && strings.Count(token, ".") == 2 {
		return c.oauth.verify(ctx, token)
	}
	if c.oauth != nil && c.oauth.introspect != nil {
		return c.oauth.introspect.verify(ctx, token, c.oauth)
	}
	if c.oauth != nil {
		return nil, time.Time{}, errors.New("the token is neither a known API key nor a JWT")
	}
	return nil, time.Time{}, errors.New("unknown API key")
}

// evaluator evaluates attributes of the auth block and collects
// diagnostics.
type evaluator struct {
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
}

func (e *evaluator) errorf(r hcl.Range, summary, format string, args ...any) {
	e.diags = append(e.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: r.Ptr()})
}

func (e *evaluator) value(a *hcl.Attribute) (cty.Value, bool) {
	if a == nil {
		return cty.NilVal, false
	}
	v, d := a.Expr.Value(e.ctx)
	e.diags = append(e.diags, d...)
	if d.HasErrors() || v.IsNull() || !v.IsWhollyKnown() {
		// Unknown: an unset env() (Options.UnsetEnvUnknown), reported once
		// by the loader; nothing here can be checked without it.
		return cty.NilVal, false
	}
	return v, true
}

func (e *evaluator) str(a *hcl.Attribute) (string, bool) {
	v, ok := e.value(a)
	if !ok {
		return "", false
	}
	var s string
	if err := gocty.FromCtyValue(v, &s); err != nil {
		e.errorf(a.Expr.Range(), "Invalid value", "%s must be a string.", a.Name)
		return "", false
	}
	return s, true
}

func (e *evaluator) strings(a *hcl.Attribute) ([]string, bool) {
	v, ok := e.value(a)
	if !ok {
		return nil, false
	}
	var s []string
	lv, err := convert.Convert(v, cty.List(cty.String))
	if err == nil {
		err = gocty.FromCtyValue(lv, &s)
	}
	if err != nil {
		e.errorf(a.Expr.Range(), "Invalid value", "%s must be a list of strings.", a.Name)
		return nil, false
	}
	return s, true
}

func (e *evaluator) apiKey(k *config.APIKey) (apiKey, bool) {
	key := apiKey{principal: &principal.Principal{Name: k.Name, Method: "api_key"}}
	switch {
	case (k.Value == nil) == (k.SHA256 == nil):
		e.errorf(k.DeclRange, "Invalid api_key", "api_key %q needs exactly one of value (e.g. value = env(\"CI_KEY\")) or sha256 (the hex SHA-256 of the key).", k.Name)
		return key, false
	case k.Value != nil:
		v, ok := e.str(k.Value)
		if !ok {
			return key, false
		}
		if v == "" {
			// Never echo the value: it is a secret.
			e.errorf(k.Value.Expr.Range(), "Empty API key", "api_key %q has an empty value; an empty key would let anyone in.", k.Name)
			return key, false
		}
		key.digest = sha256.Sum256([]byte(v))
	default:
		h, ok := e.str(k.SHA256)
		if !ok {
			return key, false
		}
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			e.errorf(k.SHA256.Expr.Range(), "Invalid sha256", "sha256 must be 64 hex digits, the SHA-256 of the key (e.g. printf %%s \"$KEY\" | sha256sum).")
			return key, false
		}
		copy(key.digest[:], b)
	}
	key.principal.Scopes, _ = e.strings(k.Scopes)
	if v, ok := e.value(k.Attributes); ok {
		if !v.Type().IsObjectType() && !v.Type().IsMapType() {
			e.errorf(k.Attributes.Expr.Range(), "Invalid attributes", "attributes must be an object, e.g. { org_id = \"acme\" }.")
			return key, false
		}
		b, err := ctyjson.Marshal(v, v.Type())
		var m map[string]any
		if err == nil {
			err = json.Unmarshal(b, &m)
		}
		if err != nil {
			e.errorf(k.Attributes.Expr.Range(), "Invalid attributes", "attributes: %s.", err)
			return key, false
		}
		key.principal.Claims = m
	}
	return key, true
}
