package connect

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/lifetime"
)

// pending is an authorization a user was sent to complete: who, for
// which upstream, and the PKCE verifier, until the callback takes it.
type pending struct {
	Principal string    `json:"p"`
	Upstream  string    `json:"u"`
	Verifier  string    `json:"v"`
	Redirect  string    `json:"r"`
	Issuer    string    `json:"iss"`
	ClientID  string    `json:"cid"`
	Expires   time.Time `json:"exp"`
}

// redirect is the callback URL of the flow.
func (f *Flow) redirect() (string, error) {
	if f.cfg.CallbackURL != "" {
		return f.cfg.CallbackURL, nil
	}
	if cb := f.svc.callbackURL(); cb != "" {
		return cb, nil
	}
	return "", fmt.Errorf("upstream %s needs each user's authorization, which mcpd receives on its HTTP listener (%s): serve over HTTP, or set callback_url in the identity block", f.cfg.Upstream, CallbackPath)
}

// Authorize starts an authorization for principal: it returns the URL the
// user opens to authorize mcpd at the upstream's authorization server.
// The URL carries a state that only the callback of this flow, within
// pendingTTL, turns into principal's grant, once.
func (f *Flow) Authorize(ctx context.Context, principal string) (string, error) {
	redirect, err := f.redirect()
	if err != nil {
		return "", err
	}
	m, err := f.discover(ctx)
	if err != nil {
		return "", err
	}
	reg, err := f.clientFor(ctx, m, redirect)
	if err != nil {
		return "", err
	}
	v, err := f.vault()
	if err != nil {
		return "", err
	}
	verifier := random(32)
	id := random(24)
	p := &pending{Principal: principal, Upstream: f.cfg.Upstream, Verifier: verifier, Redirect: redirect,
		Issuer: m.issuer, ClientID: reg.ClientID, Expires: time.Now().Add(pendingTTL)}
	if err := v.Put(ctx, pendingKey(id), p, pendingTTL); err != nil {
		return "", err
	}
	challenge := sha256.Sum256([]byte(verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {reg.ClientID},
		"redirect_uri":          {redirect},
		"state":                 {stateParam(id, f.cfg.Upstream)},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(challenge[:])},
		"code_challenge_method": {"S256"},
		"resource":              {m.resource},
	}
	scopes := f.cfg.Scopes
	if len(scopes) == 0 {
		scopes = m.scopes
	}
	if len(scopes) > 0 {
		q.Set("scope", strings.Join(scopes, " "))
	}
	sep := "?"
	if strings.Contains(m.authorize, "?") {
		sep = "&"
	}
	return m.authorize + sep + q.Encode(), nil
}

// stateParam is the state sent to the authorization server: the pending
// record's id and the upstream, whose flow opens it.
func stateParam(id, upstream string) string {
	return id + "." + base64.RawURLEncoding.EncodeToString([]byte(upstream))
}

func parseState(state string) (id, upstream string, ok bool) {
	id, enc, ok := strings.Cut(state, ".")
	if !ok || id == "" || len(state) > 512 {
		return "", "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", "", false
	}
	return id, string(b), true
}

// complete turns a callback's code into the grant of the pending record
// state names. It returns whose grant it stored.
func (s *Service) complete(ctx context.Context, state, code string) (*grants.Info, error) {
	id, upstream, ok := parseState(state)
	if !ok {
		return nil, errors.New("the state parameter is not one mcpd sent")
	}
	f := s.flow(upstream)
	if f == nil {
		return nil, fmt.Errorf("no upstream %q authorizes per user here (the config changed?)", clean(upstream))
	}
	v, err := f.vault()
	if err != nil {
		return nil, err
	}
	var p pending
	if err := v.Take(ctx, pendingKey(id), &p); err != nil {
		if errors.Is(err, grants.ErrNotFound) {
			return nil, errors.New("this authorization is unknown, was completed already, or expired: ask for a new link by calling the tool again")
		}
		return nil, err
	}
	if p.Upstream != upstream || time.Now().After(p.Expires) {
		return nil, errors.New("this authorization expired: ask for a new link by calling the tool again")
	}
	m, err := f.discover(ctx)
	if err != nil {
		return nil, err
	}
	if m.issuer != p.Issuer {
		return nil, errors.New("the upstream's authorization server changed during the authorization: ask for a new link")
	}
	reg, err := f.clientFor(ctx, m, p.Redirect)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {p.Redirect},
		"code_verifier": {p.Verifier},
		"resource":      {m.resource},
	}
	g, err := f.tokenRequest(ctx, m, reg, form)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	g.Principal, g.Upstream, g.Issuer, g.ClientID, g.Created = p.Principal, upstream, m.issuer, reg.ClientID, now
	if err := f.store(ctx, v, g); err != nil {
		return nil, err
	}
	s.log.Info("upstream authorized", "upstream", upstream, "principal", p.Principal, "expires", g.Expiry.Format(time.RFC3339))
	s.wake(grantKey(upstream, p.Principal))
	info := g.Info()
	return &info, nil
}

// store saves g for as long as it is of use: with a refresh token, for
// the grant TTL; without, until its access token expires.
func (f *Flow) store(ctx context.Context, v grants.Vault, g *grants.Grant) error {
	ttl := time.Until(g.Expiry)
	if g.RefreshToken != "" {
		ttl = f.cfg.GrantTTL
	}
	if ttl < time.Second {
		ttl = time.Second
	}
	return v.Put(ctx, grantKey(g.Upstream, g.Principal), g, ttl)
}

// tokenRequest posts form to the token endpoint as reg and reads the
// tokens it answers into a grant (without its owner).
func (f *Flow) tokenRequest(ctx context.Context, m *metadata, reg *registration, form url.Values) (*grants.Grant, error) {
	req, err := f.tokenPost(ctx, m.token, m, reg, form)
	if err != nil {
		return nil, err
	}
	res, err := f.client.Do(req)
	if err != nil {
		return nil, &unreachable{fmt.Errorf("upstream %s: its token endpoint: %s", f.cfg.Upstream, failure(err))}
	}
	defer res.Body.Close()
	body, err := readBounded(res.Body)
	if err != nil {
		return nil, &unreachable{fmt.Errorf("upstream %s: its token endpoint: %w", f.cfg.Upstream, err)}
	}
	if res.StatusCode != http.StatusOK {
		text := oauthErrorText(res.StatusCode, body)
		for _, k := range []string{"code", "code_verifier", "refresh_token", "client_secret"} {
			if v := form.Get(k); len(v) >= 4 {
				text = strings.ReplaceAll(text, v, "[redacted]") // an answer that echoes the request
			}
		}
		if len(reg.ClientSecret) >= 4 {
			text = strings.ReplaceAll(text, reg.ClientSecret, "[redacted]")
		}
		e := &refused{status: res.StatusCode, text: text}
		var code struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &code)
		e.code = code.Error
		return nil, e
	}
	var t struct {
		AccessToken  string  `json:"access_token"`
		TokenType    string  `json:"token_type"`
		ExpiresIn    float64 `json:"expires_in"`
		RefreshToken string  `json:"refresh_token"`
		Scope        string  `json:"scope"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("upstream %s: the token endpoint's answer is not JSON", f.cfg.Upstream)
	}
	switch {
	case t.AccessToken == "" || len(t.AccessToken) > maxToken || len(t.RefreshToken) > maxToken || len(t.Scope) > maxToken:
		return nil, fmt.Errorf("upstream %s: the token endpoint answered no usable access_token", f.cfg.Upstream)
	case !strings.EqualFold(t.TokenType, "bearer"):
		return nil, fmt.Errorf("upstream %s: the token endpoint answered a token of type %q; mcpd sends bearer tokens only", f.cfg.Upstream, clean(t.TokenType))
	case strings.ContainsAny(t.AccessToken, "\r\n\x00 "):
		return nil, fmt.Errorf("upstream %s: the access token holds characters a header cannot carry", f.cfg.Upstream)
	}
	life, ok := lifetime.Of(t.ExpiresIn, time.Second)
	if !ok {
		life = time.Hour // RFC 6749 leaves it to the server's documentation
	}
	return &grants.Grant{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, Scope: clean(t.Scope), Expiry: time.Now().Add(life)}, nil
}

func (f *Flow) tokenPost(ctx context.Context, endpoint string, m *metadata, reg *registration, form url.Values) (*http.Request, error) {
	basic := false
	if reg.ClientSecret != "" && (m.authBasic || !m.authPost) {
		basic = true
	} else {
		form.Set("client_id", reg.ClientID)
		if reg.ClientSecret != "" {
			form.Set("client_secret", reg.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.ClientSecret)) // RFC 6749 §2.3.1
	}
	return req, nil
}

// unreachable is a token request that got no answer (the server is down).
type unreachable struct{ err error }

func (e *unreachable) Error() string { return e.err.Error() }
func (e *unreachable) Unwrap() error { return e.err }

// refused is the token endpoint's OAuth error.
type refused struct {
	status int
	code   string
	text   string
}

func (e *refused) Error() string { return "the authorization server refused: " + e.text }

// Token returns principal's access token for the upstream, refreshing it
// first when it expires within its margin. A *NeedAuthorization says the
// user must authorize (again).
func (f *Flow) Token(ctx context.Context, principal string) (string, error) {
	v, err := f.vault()
	if err != nil {
		return "", err
	}
	key := grantKey(f.cfg.Upstream, principal)
	var g grants.Grant
	if err := v.Get(ctx, key, &g); err != nil {
		if errors.Is(err, grants.ErrNotFound) {
			return "", &NeedAuthorization{Upstream: f.cfg.Upstream}
		}
		return "", fmt.Errorf("upstream %s: reading your grant: %w", f.cfg.Upstream, err)
	}
	if g.Principal != principal || g.Upstream != f.cfg.Upstream {
		return "", fmt.Errorf("upstream %s: the stored grant is not yours", f.cfg.Upstream)
	}
	now := time.Now()
	if now.Add(margin(&g)).Before(g.Expiry) {
		return g.AccessToken, nil
	}
	if g.RefreshToken == "" {
		if now.Before(g.Expiry) {
			return g.AccessToken, nil
		}
		_, _ = v.Backend.Delete(ctx, key)
		return "", &NeedAuthorization{Upstream: f.cfg.Upstream, Why: "your authorization expired"}
	}
	ch := f.sf.DoChan(key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.cfg.Timeout)
		defer cancel()
		return f.refresh(rctx, v, key, &g)
	})
	select {
	case r := <-ch:
		if r.Err == nil {
			return r.Val.(string), nil
		}
		var un *unreachable
		if errors.As(r.Err, &un) && time.Now().Before(g.Expiry) {
			// The server is down: the token still works for the rest of
			// its margin.
			return g.AccessToken, nil
		}
		return "", r.Err
	case <-ctx.Done():
		return "", fmt.Errorf("upstream %s: %w while refreshing your authorization", f.cfg.Upstream, ctx.Err())
	}
}

// margin is how long before its expiry a token is refreshed: a quarter of
// its life, at most a minute.
func margin(g *grants.Grant) time.Duration {
	from := g.Created
	if !g.Refreshed.IsZero() {
		from = g.Refreshed
	}
	return min(time.Minute, g.Expiry.Sub(from)/4)
}

// refresh exchanges g's refresh token for new tokens and stores them.
func (f *Flow) refresh(ctx context.Context, v grants.Vault, key string, g *grants.Grant) (string, error) {
	// Another replica (or an earlier flight) may have refreshed it.
	var cur grants.Grant
	if err := v.Get(ctx, key, &cur); err == nil && cur.AccessToken != g.AccessToken && time.Now().Add(margin(&cur)).Before(cur.Expiry) {
		return cur.AccessToken, nil
	}
	m, err := f.discover(ctx)
	if err != nil {
		return "", &unreachable{err}
	}
	reg := &registration{ClientID: g.ClientID}
	if f.cfg.ClientID != "" && f.cfg.ClientID == g.ClientID {
		reg.ClientSecret = f.cfg.ClientSecret
	} else if r, err := f.clientFor(ctx, m, mustRedirect(f)); err == nil && r.ClientID == g.ClientID {
		reg = r
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.RefreshToken}, "resource": {m.resource}}
	ng, err := f.tokenRequest(ctx, m, reg, form)
	if err != nil {
		var ref *refused
		if errors.As(err, &ref) && (ref.code == "invalid_grant" || ref.status == http.StatusUnauthorized) {
			// A replica that refreshed at the same time got the new
			// tokens (a rotated refresh token is used once): take them.
			var again grants.Grant
			if gerr := v.Get(ctx, key, &again); gerr == nil && again.RefreshToken != g.RefreshToken {
				return again.AccessToken, nil
			}
			_, _ = v.Backend.Delete(ctx, key)
			f.svc.log.Info("grant refused by the authorization server; removed", "upstream", f.cfg.Upstream, "principal", g.Principal, "reason", ref.text)
			return "", &NeedAuthorization{Upstream: f.cfg.Upstream, Why: "the authorization server no longer accepts it (" + ref.text + ")"}
		}
		return "", err
	}
	ng.Principal, ng.Upstream, ng.Issuer, ng.ClientID, ng.Created, ng.Refreshed = g.Principal, g.Upstream, g.Issuer, g.ClientID, g.Created, time.Now()
	if ng.RefreshToken == "" {
		ng.RefreshToken = g.RefreshToken // not rotated: the old one stays valid
	}
	if ng.Scope == "" {
		ng.Scope = g.Scope
	}
	if err := f.store(ctx, v, ng); err != nil {
		return "", err
	}
	return ng.AccessToken, nil
}

func mustRedirect(f *Flow) string {
	r, _ := f.redirect()
	return r
}

// Refused tells the flow that the upstream refused token (401): the grant
// is treated as expired, so that the next call refreshes it, or asks the
// user to authorize again.
func (f *Flow) Refused(ctx context.Context, principal, token string) {
	v, err := f.vault()
	if err != nil {
		return
	}
	key := grantKey(f.cfg.Upstream, principal)
	var g grants.Grant
	if v.Get(ctx, key, &g) != nil || g.AccessToken != token {
		return
	}
	if g.RefreshToken == "" {
		_, _ = v.Backend.Delete(ctx, key)
		return
	}
	g.Expiry = time.Now()
	_ = f.store(ctx, v, &g)
}

// Revoke removes principal's grant and asks the authorization server to
// revoke its tokens (RFC 7009), when it can. It reports whether there was
// a grant.
func (f *Flow) Revoke(ctx context.Context, principal string) (bool, error) {
	v, err := f.vault()
	if err != nil {
		return false, err
	}
	var g grants.Grant
	switch err := v.Take(ctx, grantKey(f.cfg.Upstream, principal), &g); {
	case errors.Is(err, grants.ErrNotFound):
		return false, nil
	case err != nil:
		// A value that does not open is removed all the same.
		_, derr := v.Backend.Delete(ctx, grantKey(f.cfg.Upstream, principal))
		return derr == nil, derr
	}
	f.svc.log.Info("grant revoked", "upstream", f.cfg.Upstream, "principal", principal)
	f.revokeAtServer(ctx, &g)
	return true, nil
}

// revokeAtServer asks the authorization server to revoke g's tokens, the
// refresh token first (which ends the access tokens made from it at most
// servers). Failures are logged: the grant is gone from mcpd either way.
func (f *Flow) revokeAtServer(ctx context.Context, g *grants.Grant) {
	m, err := f.discover(ctx)
	if err != nil || m.revoke == "" {
		return
	}
	reg := &registration{ClientID: g.ClientID}
	if f.cfg.ClientID == g.ClientID {
		reg.ClientSecret = f.cfg.ClientSecret
	} else if r, err := f.clientFor(ctx, m, mustRedirect(f)); err == nil && r.ClientID == g.ClientID {
		reg = r
	}
	for _, t := range []struct{ tok, hint string }{{g.RefreshToken, "refresh_token"}, {g.AccessToken, "access_token"}} {
		if t.tok == "" {
			continue
		}
		req, err := f.tokenPost(ctx, m.revoke, m, reg, url.Values{"token": {t.tok}, "token_type_hint": {t.hint}})
		if err != nil {
			return
		}
		res, err := f.client.Do(req)
		if err != nil {
			f.svc.log.Warn("revoking a token at the authorization server failed", "upstream", f.cfg.Upstream, "err", failure(err))
			return
		}
		_, _ = readBounded(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			f.svc.log.Warn("the authorization server did not revoke a token", "upstream", f.cfg.Upstream, "status", res.StatusCode)
		}
	}
}

// Wait waits until principal has a grant (the callback, on this replica
// or another, stored it), or ctx ends.
func (f *Flow) Wait(ctx context.Context, principal string) error {
	key := grantKey(f.cfg.Upstream, principal)
	ch := f.svc.waitFor(key)
	defer f.svc.unwait(key, ch)
	poll := time.NewTicker(500 * time.Millisecond) // for a callback served by another replica
	defer poll.Stop()
	for {
		if v, err := f.vault(); err == nil {
			if _, err := v.Backend.Get(ctx, key); err == nil {
				return nil
			}
		}
		select {
		case <-ch:
		case <-poll.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Service) waitFor(key string) chan struct{} {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters[key] == nil {
		s.waiters[key] = map[chan struct{}]bool{}
	}
	s.waiters[key][ch] = true
	return ch
}

func (s *Service) unwait(key string, ch chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters[key], ch)
	if len(s.waiters[key]) == 0 {
		delete(s.waiters, key)
	}
}

func (s *Service) wake(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// List returns what may be shown of the stored grants of upstream ("":
// every upstream with a flow here). Grants that do not open with their
// upstream's key are skipped.
func (s *Service) List(ctx context.Context, upstream string) ([]grants.Info, error) {
	b := s.backend()
	prefix := "grant:"
	if upstream != "" {
		prefix += esc(upstream) + ":"
	}
	keys, err := b.Keys(ctx, prefix, maxListed)
	if err != nil {
		return nil, err
	}
	var out []grants.Info
	for _, k := range keys {
		up, _, _ := strings.Cut(strings.TrimPrefix(k, "grant:"), ":")
		f := s.flow(unesc(up))
		if f == nil {
			continue
		}
		v, err := f.vault()
		if err != nil {
			continue
		}
		var g grants.Grant
		if v.Get(ctx, k, &g) == nil {
			out = append(out, g.Info())
		}
	}
	return out, nil
}

// Revoke is an admin's revocation of principal's grant for upstream.
func (s *Service) Revoke(ctx context.Context, upstream, principal string) (bool, error) {
	f := s.flow(upstream)
	if f == nil {
		return false, fmt.Errorf("no mcp_server %q with identity mode \"user_authorization\" in the config", upstream)
	}
	return f.Revoke(ctx, principal)
}
