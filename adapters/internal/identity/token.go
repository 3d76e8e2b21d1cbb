package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpd/mcpd/adapters/internal/netmsg"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/lifetime"
	"github.com/mcpd/mcpd/engine/outbound"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/redact"
)

// RFC 8693 token type identifiers.
const (
	grantTokenExchange   = "urn:ietf:params:oauth:grant-type:token-exchange"
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
)

// Limits of the token cache and of the token endpoint's answers.
const (
	maxCachedTokens  = 10000
	maxTokenResponse = 64 << 10
	MaxRefreshMargin = time.Minute
	// DefaultTokenLife is how long a token whose lifetime the AS did not
	// say (no expires_in, not a JWT) is used.
	DefaultTokenLife = 5 * time.Minute
)

// Cache holds the tokens the adapter obtained, for the life of the
// process (a reload that keeps an identity keeps its tokens), keyed by the
// identity's key and, for token exchange, the caller.
//
// A token is refreshed once, shortly before it expires: the first call
// past its refresh time starts one request to the token endpoint in the
// background and, like every call until the new token arrives, still uses
// the current one, which is valid for the rest of its margin. Only a call
// that finds no token, or one already expired, waits, and concurrent calls
// for the same key wait for the same request (singleflight): one request
// per key, however many callers. A background refresh that fails is not
// tried again for RefreshRetry, so that an AS that is down is not asked
// once per call.
type Cache struct {
	now       func() time.Time
	client    *http.Client
	userAgent string

	mu sync.RWMutex
	m  map[string]*cachedToken
	sf singleflight.Group
}

type cachedToken struct {
	token     string
	redactor  *redact.Redactor // of token, built once
	refreshAt time.Time        // when it is fetched again
	expiry    time.Time
	subject   string
	actor     string

	// failedAt is when a background refresh of this token last failed
	// (unix nanos; 0: never). Written by the refresh, read by calls.
	failedAt atomic.Int64
}

// RefreshRetry is the least time between two background refreshes of a
// token after one failed.
const RefreshRetry = 5 * time.Second

func NewCache(userAgent string) *Cache {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	return &Cache{
		userAgent: userAgent,
		now:       time.Now,
		// A token endpoint that redirects would have the client's
		// credentials (and a caller's token, for an exchange) re-sent
		// elsewhere, and a token from there used: never followed.
		client: outbound.Refusing(&http.Client{Transport: tr}, "token_url", "set token_url to the final address"),
		m:      map[string]*cachedToken{},
	}
}

func (c *Cache) lookup(key string) *cachedToken {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.m[key]
}

func (c *Cache) store(key string, t *cachedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedTokens {
		now := c.now()
		for k, v := range c.m {
			if !now.Before(v.expiry) {
				delete(c.m, k)
			}
		}
		for k := range c.m { // still full: any one goes
			if len(c.m) < maxCachedTokens {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[key] = t
}

// drop forgets key's token if it is still tok (a backend refused it).
func (c *Cache) drop(key, tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.m[key]; t != nil && t.token == tok {
		delete(c.m, key)
	}
}

// get returns key's token, fetching it with fetch when there is none that
// may still be used. cached reports that it came from the cache. A fetch
// runs under its own timeout, not the caller's context: other calls may be
// waiting for it; a caller whose context ends stops waiting.
func (c *Cache) get(ctx context.Context, key string, timeout time.Duration, fetch func(context.Context) (*cachedToken, error)) (t *cachedToken, cached bool, err error) {
	now := c.now()
	if t := c.lookup(key); t != nil && now.Before(t.expiry) {
		if !now.Before(t.refreshAt) {
			if f := t.failedAt.Load(); f == 0 || now.Sub(time.Unix(0, f)) >= RefreshRetry {
				// Due: one refresh in the background; this call goes on
				// with the token, valid for the rest of its margin.
				c.sf.DoChan(key, c.fetcher(ctx, key, timeout, fetch, t))
			}
		}
		return t, true, nil
	}
	ch := c.sf.DoChan(key, c.fetcher(ctx, key, timeout, fetch, nil))
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, false, r.Err
		}
		return r.Val.(*cachedToken), false, nil
	case <-ctx.Done():
		return nil, false, fmt.Errorf("%s while waiting for a token", netmsg.Canceled(ctx))
	}
}

// fetcher is the singleflight function that fetches key's token; old is
// the token a background refresh replaces (nil for a call that waits).
func (c *Cache) fetcher(ctx context.Context, key string, timeout time.Duration, fetch func(context.Context) (*cachedToken, error), old *cachedToken) func() (any, error) {
	return func() (any, error) {
		if t := c.lookup(key); t != nil && t != old && c.now().Before(t.refreshAt) {
			return t, nil // fetched while this call looked
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		t, err := fetch(fctx)
		if err != nil {
			if old != nil {
				old.failedAt.Store(c.now().UnixNano())
			}
			return nil, err
		}
		if old != nil && !t.expiry.After(old.expiry) {
			// No later than the one it replaces (an exchanged token is
			// capped at the caller's token's expiry): asking again at
			// once would get the same.
			t.failedAt.Store(c.now().UnixNano())
		}
		c.store(key, t)
		return t, nil
	}
}

// Identity is an identity block at call time: its config and the
// adapter's token cache.
type Identity struct {
	cfg   *Config
	key   string
	cache *Cache
}

// New is the identity of cfg, whose tokens cache keeps; nil for a nil cfg.
func New(cfg *Config, cache *Cache) *Identity {
	if cfg == nil {
		return nil
	}
	return &Identity{cfg: cfg, key: cfg.Key(), cache: cache}
}

// Grant is the token one call sends, and what to record of it.
type Grant struct {
	Token      string
	CacheKey   string // "" for passthrough: nothing to drop on a 401
	Cached     bool   // it came from the cache (a 401 may mean it was revoked)
	Delegation adapter.Delegation
	// Redactor redacts the token sent from what the backend answers.
	Redactor *redact.Redactor
}

// Token returns the bearer token for one call of a tool, as the mode
// says. Its errors say what failed and never contain a token or secret.
func (id *Identity) Token(ctx context.Context) (*Grant, error) {
	cfg := id.cfg
	switch cfg.Mode {
	case ModeClientCredentials:
		t, cached, err := id.cache.get(ctx, id.key, cfg.Timeout, func(fctx context.Context) (*cachedToken, error) {
			return id.request(fctx, url.Values{"grant_type": {"client_credentials"}}, "", time.Time{}, nil)
		})
		if err != nil {
			return nil, err
		}
		return &Grant{Token: t.token, CacheKey: id.key, Cached: cached, Redactor: t.redactor,
			Delegation: adapter.Delegation{Mode: cfg.Mode, Subject: t.subject, Actor: t.actor}}, nil

	case ModeTokenExchange:
		p := principal.FromContext(ctx)
		sub := p.Token()
		if sub == nil {
			return nil, errNoCallerToken(cfg, p)
		}
		if err := id.callerExpired(sub); err != nil {
			// Verification allows a leeway for clock skew past exp; an
			// exchange would turn the rest of it into a fresh token (and
			// a cached one would outlive the caller's), so, as
			// passthrough does, only a live token is exchanged.
			return nil, err
		}
		// One exchanged token per caller: the subject, with the issuer
		// that vouches for it.
		iss, _ := p.Claims["iss"].(string)
		key := id.key + "\x00" + iss + "\x00" + p.Name
		t, cached, err := id.cache.get(ctx, key, cfg.Timeout, func(fctx context.Context) (*cachedToken, error) {
			form := url.Values{
				"grant_type":           {grantTokenExchange},
				"subject_token":        {sub.Reveal()},
				"subject_token_type":   {tokenTypeAccessToken},
				"requested_token_type": {tokenTypeAccessToken},
			}
			return id.request(fctx, form, p.Name, sub.Expiry(), redact.New([]string{sub.Reveal()}))
		})
		if err != nil {
			// The AS may quote the subject token back in its error.
			return nil, errors.New(redact.New([]string{sub.Reveal()}).String(err.Error()))
		}
		return &Grant{Token: t.token, CacheKey: key, Cached: cached, Redactor: t.redactor,
			Delegation: adapter.Delegation{Mode: cfg.Mode, Subject: t.subject, Actor: t.actor}}, nil

	default: // passthrough
		p := principal.FromContext(ctx)
		tok := p.Token()
		if tok == nil {
			return nil, errNoCallerToken(cfg, p)
		}
		aud := p.Audience()
		if !contains(aud, cfg.Audience) {
			// The confused deputy: a token issued for another service
			// (mcpd itself, usually) must not reach this one.
			got := "no aud claim"
			if len(aud) > 0 {
				got = "aud " + strings.Join(quoteAll(aud), ", ")
			}
			return nil, fmt.Errorf("%s refused to forward the caller's token: it was issued for %s, not for %q; only a token whose audience includes the backend may be forwarded (ask the authorization server for one, or configure mode = %q)",
				cfg, got, cfg.Audience, ModeTokenExchange)
		}
		if err := id.callerExpired(tok); err != nil {
			return nil, err
		}
		return &Grant{Token: tok.Reveal(), Redactor: id.passthroughRedactor(tok),
			Delegation: adapter.Delegation{Mode: cfg.Mode, Subject: p.Name}}, nil
	}
}

// callerExpired is the tool error for a caller's token past its expiry,
// nil for one that is not: the verifier accepts a token up to its leeway
// after exp, but mcpd sends on (or exchanges) only live tokens.
func (id *Identity) callerExpired(tok *principal.Token) error {
	if exp := tok.Expiry(); !exp.IsZero() && !id.cache.now().Before(exp) {
		return fmt.Errorf("%s: the caller's token expired at %s; the client must get a new one", id.cfg, exp.UTC().Format(time.RFC3339))
	}
	return nil
}

// unixSeconds is t as seconds since 1970, for any t (UnixNano overflows
// past 2262).
func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// passthroughRedactor is the redactor of a caller's token, built once per
// token (a client sends the same one on many calls) and kept in the cache
// until the token expires.
func (id *Identity) passthroughRedactor(tok *principal.Token) *redact.Redactor {
	key := id.key + "\x00passthrough\x00" + tok.Reveal()
	now := id.cache.now()
	if t := id.cache.lookup(key); t != nil && now.Before(t.expiry) {
		return t.redactor
	}
	r := redact.New([]string{tok.Reveal()})
	exp := now.Add(DefaultTokenLife)
	if e := tok.Expiry(); !e.IsZero() {
		// The caller's exp, as the AS set it: bounded like every lifetime
		// from a peer, so that an entry is not kept for ever.
		d, _ := lifetime.Until(now, unixSeconds(e))
		exp = now.Add(d)
	}
	id.cache.store(key, &cachedToken{redactor: r, expiry: exp, refreshAt: exp})
	return r
}

func errNoCallerToken(cfg *Config, p *principal.Principal) error {
	who := "this call has no verified caller (stdio, or HTTP without auth)"
	if p != nil {
		who = fmt.Sprintf("the caller authenticated with %s, not an OAuth access token", methodName(p.Method))
	}
	return fmt.Errorf("%s (mode = %q) needs the caller's OAuth access token, and %s; call this tool over HTTP with a token from the authorization server", cfg, cfg.Mode, who)
}

func methodName(m string) string {
	if m == "api_key" {
		return "an API key"
	}
	return m
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func quoteAll(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = strconv.Quote(s)
	}
	return out
}

// tokenResponse is the token endpoint's answer (RFC 6749 §5.1, RFC 8693
// §2.2.1).
type tokenResponse struct {
	AccessToken     string          `json:"access_token"`
	TokenType       string          `json:"token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	IssuedTokenType string          `json:"issued_token_type"`
	Error           string          `json:"error"`
	ErrorDesc       string          `json:"error_description"`
}

// request asks the token endpoint for a token with form (the grant's
// parameters), adding the client's credentials, audience, resource and
// scopes. subject is the caller for an exchange ("" for client
// credentials); the token is not used past notAfter (the caller's token's
// expiry) when that is set. The AS's error text is redacted with sec (the
// caller's token), before it is cut short.
func (id *Identity) request(ctx context.Context, form url.Values, subject string, notAfter time.Time, sec *redact.Redactor) (*cachedToken, error) {
	cfg := id.cfg
	what := "the client credentials grant"
	if cfg.Mode == ModeTokenExchange {
		what = "the token exchange"
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s at %s failed: %s", cfg, what, cfg.TokenURL, fmt.Sprintf(format, args...))
	}
	if cfg.Audience != "" {
		form.Set("audience", cfg.Audience)
	}
	if cfg.Resource != "" {
		form.Set("resource", cfg.Resource)
	}
	if len(cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(cfg.Scopes, " "))
	}
	if cfg.ClientAuth == "post" {
		form.Set("client_id", cfg.ClientID)
		form.Set("client_secret", cfg.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fail("%v", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", id.cache.userAgent)
	if cfg.ClientAuth == "basic" {
		// RFC 6749 §2.3.1: both form-encoded before Basic encoding.
		cred := url.QueryEscape(cfg.ClientID) + ":" + url.QueryEscape(cfg.ClientSecret)
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	}
	start := id.cache.now()
	resp, err := id.cache.client.Do(req)
	if err != nil {
		return nil, fail("%s", tokenNetError(ctx, err, cfg.Timeout))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return nil, fail("reading the answer: %s", tokenNetError(ctx, err, cfg.Timeout))
	}
	var tr tokenResponse
	jsonErr := json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("the authorization server answered %s", netmsg.StatusLine(resp))
		if jsonErr == nil && tr.Error != "" {
			msg += ": " + oneLine(sec.String(tr.Error), 64)
			if tr.ErrorDesc != "" {
				msg += ": " + oneLine(sec.String(tr.ErrorDesc), 300)
			}
		}
		return nil, fail("%s", msg)
	}
	switch {
	case jsonErr != nil:
		return nil, fail("the answer is not a JSON token response")
	case tr.AccessToken == "":
		return nil, fail("the answer has no access_token")
	case !strings.EqualFold(tr.TokenType, "bearer"):
		return nil, fail("the token_type is %q; mcpd sends bearer tokens only", oneLine(tr.TokenType, 32))
	case tr.IssuedTokenType != "" && tr.IssuedTokenType != tokenTypeAccessToken:
		return nil, fail("the issued_token_type is %q, not an access token", oneLine(tr.IssuedTokenType, 80))
	}
	claims := unverifiedClaims(tr.AccessToken)
	// The token's life is what the AS says, bounded (lifetime.Min to
	// lifetime.Max): expires_in (relative, so immune to clock skew
	// between the AS and mcpd), else the JWT's exp.
	life, said := expiresIn(tr.ExpiresIn)
	if exp, ok := claims["exp"].(float64); ok && !said {
		if life, said = lifetime.Until(start, exp); !said {
			life, said = lifetime.Min, true // issued expired: asked again in a second, not on every call
		}
	}
	if !said {
		life = DefaultTokenLife
	}
	expiry := start.Add(life)
	if !notAfter.IsZero() && notAfter.Before(expiry) {
		// An exchanged token outliving the caller's would act for a
		// caller whose session ended.
		expiry = notAfter
	}
	life = expiry.Sub(start)
	margin := min(life/5, MaxRefreshMargin)
	t := &cachedToken{token: tr.AccessToken, redactor: redact.New([]string{tr.AccessToken}), expiry: expiry, refreshAt: expiry.Add(-margin), subject: subject}
	if s, ok := claims["sub"].(string); ok && s != "" {
		t.subject = s
	}
	if t.subject == "" {
		t.subject = cfg.ClientID
	}
	if act, ok := claims["act"].(map[string]any); ok {
		t.actor, _ = act["sub"].(string)
	}
	return t, nil
}

// expiresIn reads expires_in: a number of seconds, or (from some servers)
// a string of one, bounded by lifetime.Of; ok is false when it is absent,
// not a number, or not positive.
func expiresIn(raw json.RawMessage) (time.Duration, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		n = f
	}
	return lifetime.Of(n, time.Second)
}

// unverifiedClaims reads the claims of a JWT without verifying it: only to
// record its subject and actor and learn its expiry. The backend verifies
// the token; mcpd only carries it. Nil for a token that is not a JWT.
func unverifiedClaims(tok string) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(payload, &m) != nil {
		return nil
	}
	return m
}

// oneLine is s without control characters, cut to n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// tokenNetError says why the token endpoint could not be reached, without
// socket addresses.
func tokenNetError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("the authorization server did not answer within %s", timeout)
	}
	inner := netmsg.UnwrapURLError(err)
	if re := (*outbound.RedirectError)(nil); errors.As(inner, &re) {
		return re.Error()
	}
	var dnsErr *net.DNSError
	if errors.As(inner, &dnsErr) {
		return netmsg.DNS(dnsErr)
	}
	if msg := netmsg.Conn(inner); msg != "" {
		return "cannot reach the authorization server: " + msg
	}
	return "cannot reach the authorization server: " + inner.Error()
}

// Config is the identity's block.
func (id *Identity) Config() *Config { return id.cfg }

// Drop forgets g's token, which the backend refused (401), so that the
// next Token fetches another; a passthrough grant has nothing to drop.
func (id *Identity) Drop(g *Grant) {
	if g.CacheKey != "" {
		id.cache.drop(g.CacheKey, g.Token)
	}
}

// SetClock makes the cache read the time from now: for tests, before the
// first token is asked for.
func (c *Cache) SetClock(now func() time.Time) { c.now = now }
