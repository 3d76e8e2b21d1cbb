package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/outbound"
	"github.com/mcpd/mcpd/engine/principal"
)

// oauthVerifier checks JWT access tokens of one issuer. go-jose does the
// JOSE work: it parses only the allow-listed algorithms (it has no `none`),
// checks the signature against a JWKS key and validates the registered
// claims with a leeway.
type oauthVerifier struct {
	issuer, audience string
	algs             []jose.SignatureAlgorithm
	leeway           time.Duration
	scopesClaim      string
	jwks             *jwksCache // nil: no JWTs, introspection only
	introspect       *introspector
	now              func() time.Time
}

// asymmetric are the algorithms a JWKS can verify; HMAC needs a shared
// secret, which a public key set does not hold.
var asymmetric = map[string]jose.SignatureAlgorithm{
	"RS256": jose.RS256, "RS384": jose.RS384, "RS512": jose.RS512,
	"PS256": jose.PS256, "PS384": jose.PS384, "PS512": jose.PS512,
	"ES256": jose.ES256, "ES384": jose.ES384, "ES512": jose.ES512,
	"EdDSA": jose.EdDSA,
}

func (e *evaluator) oauth(o *config.OAuth, resource string, authRange hcl.Range, prev *jwksCache, opts Options) *oauthVerifier {
	v := &oauthVerifier{leeway: 30 * time.Second, scopesClaim: "scope", now: opts.Now}
	ok := true
	if s, good := e.str(o.Issuer); good {
		if err := checkURL(s); err != nil {
			e.errorf(o.Issuer.Expr.Range(), "Invalid issuer", "issuer: %s.", err)
			ok = false
		}
		v.issuer = s
	} else {
		ok = false
	}
	v.audience = resource
	if s, good := e.str(o.Audience); good && s != "" {
		v.audience = s
	}
	if resource == "" {
		e.errorf(authRange, "Missing resource", "With oauth, the auth block needs resource: this server's URI as clients reach it (e.g. https://mcp.example.com/mcp). It is the subject of the Protected Resource Metadata and the audience tokens must carry (unless oauth sets audience).")
		ok = false
	}
	if o.IntrospectionURL != nil {
		v.introspect = e.introspection(o, opts)
		ok = ok && v.introspect != nil
	}
	jwksURL, good := e.str(o.JWKSURL)
	switch {
	case o.JWKSURL == nil && o.IntrospectionURL != nil:
		// Opaque tokens only.
	case o.JWKSURL == nil:
		e.errorf(o.DeclRange, "Missing jwks_url", "oauth needs jwks_url (where the issuer publishes its signing keys, the jwks_uri of its metadata) or introspection_url.")
		ok = false
	case !good:
		ok = false
	default:
		if err := checkURL(jwksURL); err != nil {
			e.errorf(o.JWKSURL.Expr.Range(), "Invalid jwks_url", "jwks_url: %s.", err)
			ok = false
		}
	}
	names := []string{"RS256", "ES256"}
	if l, good := e.strings(o.Algorithms); good {
		names = l
		if len(l) == 0 {
			e.errorf(o.Algorithms.Expr.Range(), "Invalid algorithms", "algorithms must name at least one signing algorithm.")
			ok = false
		}
	}
	for _, n := range names {
		a, known := asymmetric[n]
		if !known {
			r := o.DeclRange
			if o.Algorithms != nil {
				r = o.Algorithms.Expr.Range()
			}
			e.errorf(r, "Unsupported algorithm", "%q cannot verify tokens against a JWKS; use some of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA.", n)
			ok = false
			continue
		}
		v.algs = append(v.algs, a)
	}
	if s, good := e.str(o.Leeway); good {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > 5*time.Minute {
			e.errorf(o.Leeway.Expr.Range(), "Invalid leeway", "leeway is the clock skew tolerated on exp and nbf, a duration from 0s to 5m such as \"30s\".")
			ok = false
		}
		v.leeway = d
	}
	if s, good := e.str(o.ScopesClaim); good && s != "" {
		v.scopesClaim = s
	}
	if !ok {
		return nil
	}
	if jwksURL == "" {
		return v
	}
	if prev != nil && prev.url == jwksURL {
		v.jwks = prev
	} else {
		// Keys from another address would let whoever answers there sign
		// tokens mcpd accepts.
		client := outbound.Refusing(opts.HTTPClient, "jwks_url", "set jwks_url to the final address")
		v.jwks = &jwksCache{url: jwksURL, client: client, minRefresh: opts.JWKSMinRefresh, now: opts.Now}
	}
	return v
}

// verify checks a JWT and returns its subject as the principal.
func (v *oauthVerifier) verify(ctx context.Context, raw string) (*principal.Principal, time.Time, error) {
	tok, err := jwt.ParseSigned(raw, v.algs)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("malformed token or algorithm not allowed: %w", err)
	}
	key, err := v.jwks.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return nil, time.Time{}, err
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(key, &std, &all); err != nil {
		return nil, time.Time{}, fmt.Errorf("bad signature: %w", err)
	}
	if std.Expiry == nil {
		return nil, time.Time{}, errors.New("the token has no exp claim")
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: v.issuer, AnyAudience: jwt.Audience{v.audience}, Time: v.now()}, v.leeway); err != nil {
		return nil, time.Time{}, err
	}
	if std.Subject == "" {
		return nil, time.Time{}, errors.New("the token has no sub claim")
	}
	p := &principal.Principal{Name: std.Subject, Method: "oauth", Claims: all, Scopes: scopesOf(all[v.scopesClaim])}
	return p, std.Expiry.Time(), nil
}

// scopesOf reads a scope claim: a space-separated string (RFC 8693 "scope")
// or a list of strings (as "scp" often is).
func scopesOf(c any) []string {
	switch c := c.(type) {
	case string:
		return strings.Fields(c)
	case []any:
		var out []string
		for _, s := range c {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jwksCache holds an issuer's key set. It fetches lazily: on the first
// token, when a token names a key id it does not know (key rotation) — at
// most once per minRefresh, so that tokens with made-up key ids cannot make
// mcpd hammer the issuer — and when the set is older than maxAge.
type jwksCache struct {
	url        string
	client     *http.Client
	minRefresh time.Duration
	now        func() time.Time

	fetchMu sync.Mutex // one fetch at a time

	mu        sync.RWMutex
	set       *jose.JSONWebKeySet
	fetchedAt time.Time // of the last successful fetch
	triedAt   time.Time // of the last attempt
}

// jwksMaxAge is how long a key set is used before it is fetched again, so
// that a key the issuer withdrew stops verifying.
const jwksMaxAge = time.Hour

func (c *jwksCache) lookup(kid string) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.set == nil || c.now().Sub(c.fetchedAt) > jwksMaxAge {
		return nil, false
	}
	return pick(c.set, kid)
}

func pick(set *jose.JSONWebKeySet, kid string) (any, bool) {
	if kid == "" {
		// A token without kid is accepted only when there is no choice.
		if len(set.Keys) == 1 {
			return set.Keys[0].Key, true
		}
		return nil, false
	}
	for _, k := range set.Keys {
		if k.KeyID == kid && (k.Use == "" || k.Use == "sig") {
			return k.Key, true
		}
	}
	return nil, false
}

func (c *jwksCache) key(ctx context.Context, kid string) (any, error) {
	if k, ok := c.lookup(kid); ok {
		return k, nil
	}
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	if k, ok := c.lookup(kid); ok { // another request fetched meanwhile
		return k, nil
	}
	c.mu.RLock()
	stale := c.set == nil || c.now().Sub(c.fetchedAt) > jwksMaxAge
	recent := !c.triedAt.IsZero() && c.now().Sub(c.triedAt) < c.minRefresh
	c.mu.RUnlock()
	if recent && !stale {
		return nil, fmt.Errorf("unknown key id %q", kid)
	}
	set, err := c.fetch(ctx)
	c.mu.Lock()
	c.triedAt = c.now()
	old := c.set
	if err == nil {
		c.set, c.fetchedAt = set, c.now()
	}
	c.mu.Unlock()
	if err != nil {
		// An issuer that is down does not lock everyone out: keys of the
		// last set that was fetched keep verifying until it answers.
		if old != nil {
			if k, ok := pick(old, kid); ok {
				return k, nil
			}
		}
		return nil, fmt.Errorf("%w: fetching the JWKS: %v", errUnavailable, err)
	}
	if k, ok := pick(set, kid); ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown key id %q", kid)
}

func (c *jwksCache) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", c.url, resp.Status)
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("%s: %w", c.url, err)
	}
	return &set, nil
}
