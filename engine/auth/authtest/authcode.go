package authtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Grant types of the authorization-code flow (RFC 6749 §4.1, §6).
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
)

// authCode is the server's side of the authorization-code grant: users
// who can log in, clients registered by RFC 7591 (public or not), codes
// waiting for their exchange, refresh tokens, and what was revoked.
type authCode struct {
	mu        sync.Mutex
	users     map[string]string // name -> password
	public    map[string]bool   // registered clients without a secret
	redirects map[string][]string
	codes     map[string]*issuedCode
	refresh   map[string]*refreshToken
	revoked   map[string]bool // access tokens (RFC 7009)
	regs      int
	noReg     bool
	noPKCE    bool
}

type issuedCode struct {
	client, user, redirect, challenge, resource, scope string
	expires                                            time.Time
}

type refreshToken struct {
	client, user, resource, scope string
}

func (a *authCode) init() {
	a.users, a.public, a.redirects = map[string]string{}, map[string]bool{}, map[string][]string{}
	a.codes, a.refresh, a.revoked = map[string]*issuedCode{}, map[string]*refreshToken{}, map[string]bool{}
}

func (s *Server) routeAuthCode(mux *http.ServeMux) {
	mux.HandleFunc("GET /authorize", s.authorizePage)
	mux.HandleFunc("POST /authorize", s.authorizeLogin)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("POST /revoke", s.revoke)
}

func (s *Server) authCodeMetadata(md map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	md["authorization_endpoint"] = s.Issuer() + "/authorize"
	md["revocation_endpoint"] = s.Issuer() + "/revoke"
	md["response_types_supported"] = []string{"code"}
	md["token_endpoint_auth_methods_supported"] = []string{"client_secret_basic", "client_secret_post", "none"}
	if !s.ac.noPKCE {
		md["code_challenge_methods_supported"] = []string{"S256"}
	}
	if !s.ac.noReg {
		md["registration_endpoint"] = s.Issuer() + "/register"
	}
}

// AddUser lets name log in at the authorization endpoint with password.
func (s *Server) AddUser(name, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ac.users[name] = password
}

// AllowRedirect lets the configured client id redirect to uri.
func (s *Server) AllowRedirect(id, uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ac.redirects[id] = append(s.ac.redirects[id], uri)
}

// NoRegistration removes the registration endpoint (RFC 7591) from the
// metadata and refuses registrations.
func (s *Server) NoRegistration() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ac.noReg = true
}

// NoPKCE stops declaring code_challenge_methods_supported, as a server
// without PKCE would.
func (s *Server) NoPKCE() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ac.noPKCE = true
}

// Registrations is how many clients registered themselves.
func (s *Server) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ac.regs
}

// RevokeUser revokes every refresh token of user, as the user would in
// the authorization server's account page.
func (s *Server) RevokeUser(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, rt := range s.ac.refresh {
		if rt.user == user {
			delete(s.ac.refresh, k)
		}
	}
}

// RefreshTokens is how many refresh tokens are live.
func (s *Server) RefreshTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ac.refresh)
}

func (s *Server) revokedToken(raw string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ac.revoked[raw]
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// checkAuthorize validates an authorization request's parameters.
func (s *Server) checkAuthorize(q url.Values) *oauthError {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := q.Get("client_id")
	_, confidential := s.clients[id]
	if !confidential && !s.ac.public[id] {
		return &oauthError{400, "invalid_client", "unknown client"}
	}
	ok := false
	for _, r := range s.ac.redirects[id] {
		ok = ok || r == q.Get("redirect_uri")
	}
	switch {
	case !ok:
		return &oauthError{400, "invalid_request", "redirect_uri is not registered for this client"}
	case q.Get("response_type") != "code":
		return &oauthError{400, "unsupported_response_type", "only code"}
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		return &oauthError{400, "invalid_request", "PKCE with S256 is required"}
	case q.Get("state") == "":
		return &oauthError{400, "invalid_request", "state is required"}
	}
	return nil
}

var formFields = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"}

// authorizePage is the login form.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request) {
	if e := s.checkAuthorize(r.URL.Query()); e != nil {
		writeErr(w, e)
		return
	}
	var b strings.Builder
	b.WriteString(`<!doctype html><form method="post" action="/authorize">`)
	for _, f := range formFields {
		b.WriteString(`<input type="hidden" name="` + f + `" value="` + html.EscapeString(r.URL.Query().Get(f)) + `">`)
	}
	b.WriteString(`<input name="username"><input name="password" type="password"><button>Log in</button></form>`)
	w.Header().Set("Content-Type", "text/html")
	_, _ = w.Write([]byte(b.String()))
}

// authorizeLogin logs the user in and redirects to the client with a code.
func (s *Server) authorizeLogin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeErr(w, &oauthError{400, "invalid_request", err.Error()})
		return
	}
	f := r.PostForm
	if e := s.checkAuthorize(f); e != nil {
		writeErr(w, e)
		return
	}
	user := f.Get("username")
	s.mu.Lock()
	pw, known := s.ac.users[user]
	s.mu.Unlock()
	if !known || pw != f.Get("password") {
		writeErr(w, &oauthError{403, "access_denied", "wrong user name or password"})
		return
	}
	code := randomString()
	s.mu.Lock()
	s.ac.codes[code] = &issuedCode{client: f.Get("client_id"), user: user, redirect: f.Get("redirect_uri"), challenge: f.Get("code_challenge"),
		resource: f.Get("resource"), scope: f.Get("scope"), expires: time.Now().Add(time.Minute)}
	s.mu.Unlock()
	to, _ := url.Parse(f.Get("redirect_uri"))
	q := to.Query()
	q.Set("code", code)
	q.Set("state", f.Get("state"))
	to.RawQuery = q.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// userClient authenticates the client of an authorization-code or
// refresh request: a confidential client by its secret, a public one by
// its id.
func (s *Server) userClient(r *http.Request) (string, *oauthError) {
	id := r.PostForm.Get("client_id")
	s.mu.Lock()
	public := s.ac.public[id]
	s.mu.Unlock()
	if public && r.PostForm.Get("client_secret") == "" {
		if _, _, basic := r.BasicAuth(); !basic {
			return id, nil
		}
	}
	return s.authenticate(r)
}

// userToken answers the authorization_code and refresh_token grants.
func (s *Server) userToken(w http.ResponseWriter, r *http.Request, refuse *Refusal, ttl time.Duration) {
	client, oerr := s.userClient(r)
	if oerr != nil {
		writeErr(w, oerr)
		return
	}
	if refuse != nil {
		st := refuse.Status
		if st == 0 {
			st = http.StatusBadRequest
		}
		writeErr(w, &oauthError{st, refuse.Code, refuse.Description})
		return
	}
	f := r.PostForm
	var user, resource, scope, grant string
	s.mu.Lock()
	switch f.Get("grant_type") {
	case GrantAuthorizationCode:
		grant = "authorization_code"
		c := s.ac.codes[f.Get("code")]
		delete(s.ac.codes, f.Get("code")) // used once
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case c == nil || time.Now().After(c.expires):
			oerr = &oauthError{400, "invalid_grant", "unknown or expired code"}
		case c.client != client || c.redirect != f.Get("redirect_uri"):
			oerr = &oauthError{400, "invalid_grant", "the code was issued to another client or redirect_uri"}
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			oerr = &oauthError{400, "invalid_grant", "code_verifier does not match the code_challenge"}
		case f.Get("resource") != "" && f.Get("resource") != c.resource:
			oerr = &oauthError{400, "invalid_target", "resource differs from the authorization request's"}
		default:
			user, resource, scope = c.user, c.resource, c.scope
		}
	case GrantRefreshToken:
		grant = "refresh_token"
		rt := s.ac.refresh[f.Get("refresh_token")]
		switch {
		case rt == nil:
			oerr = &oauthError{400, "invalid_grant", "unknown or revoked refresh token"}
		case rt.client != client:
			oerr = &oauthError{400, "invalid_grant", "the refresh token was issued to another client"}
		default:
			delete(s.ac.refresh, f.Get("refresh_token")) // rotated (OAuth 2.1 §4.3.1 for public clients)
			user, resource, scope = rt.user, rt.resource, rt.scope
		}
	}
	s.mu.Unlock()
	if oerr != nil {
		writeErr(w, oerr)
		return
	}
	extra := map[string]any{"client_id": client}
	if scope != "" {
		extra["scope"] = scope
	}
	var aud []string
	if resource != "" {
		aud = []string{resource}
	}
	tok := s.sign(user, aud, ttl, extra)
	next := randomString()
	s.mu.Lock()
	s.ac.refresh[next] = &refreshToken{client: client, user: user, resource: resource, scope: scope}
	s.counts[grant+" "+user]++
	s.mu.Unlock()
	resp := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(ttl.Seconds()), "refresh_token": next}
	if scope != "" {
		resp["scope"] = scope
	}
	writeJSON(w, http.StatusOK, resp)
}

// register is dynamic client registration (RFC 7591).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	s.mu.Lock()
	noReg := s.ac.noReg
	s.mu.Unlock()
	if noReg {
		writeErr(w, &oauthError{403, "access_denied", "registration is closed"})
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		writeErr(w, &oauthError{400, "invalid_client_metadata", "redirect_uris are required"})
		return
	}
	id := "dyn-" + randomString()[:12]
	resp := map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": req.AuthMethod}
	s.mu.Lock()
	s.ac.regs++
	s.ac.redirects[id] = req.RedirectURIs
	if req.AuthMethod == "none" || req.AuthMethod == "" {
		s.ac.public[id] = true
		resp["token_endpoint_auth_method"] = "none"
	} else {
		secret := randomString()
		s.clients[id] = secret
		resp["client_secret"] = secret
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, resp)
}

// revoke is token revocation (RFC 7009): a refresh token ends, an access
// token stops verifying.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeErr(w, &oauthError{400, "invalid_request", err.Error()})
		return
	}
	if _, oerr := s.userClient(r); oerr != nil {
		writeErr(w, oerr)
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	if _, ok := s.ac.refresh[tok]; ok {
		delete(s.ac.refresh, tok)
	} else {
		s.ac.revoked[tok] = true
	}
	s.counts["revoke"]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// Login completes an authorization as a user would in a browser, with a
// plain HTTP client: it opens authorizeURL (the AS's login form), logs in
// as user, and returns where the AS redirects the browser (the client's
// callback, with the code and state), without following it.
func (s *Server) Login(t testing.TB, authorizeURL, user string) string {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(authorizeURL)
	if err != nil {
		t.Fatalf("authtest login: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("authtest login: the authorization endpoint answered %d", res.StatusCode)
	}
	u, err := url.Parse(authorizeURL)
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{}
	for _, f := range formFields {
		form.Set(f, u.Query().Get(f))
	}
	s.mu.Lock()
	pw := s.ac.users[user]
	s.mu.Unlock()
	form.Set("username", user)
	form.Set("password", pw)
	res, err = c.PostForm(s.Issuer()+"/authorize", form)
	if err != nil {
		t.Fatalf("authtest login: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("authtest login as %s: status %d", user, res.StatusCode)
	}
	return res.Header.Get("Location")
}

// Protected wraps an MCP server (or any HTTP handler) as a protected
// resource of this AS: it serves its protected-resource metadata (RFC
// 9728) at the well-known URL and answers 401 with resource_metadata to
// a request without a valid token for its resource; an accepted
// request's subject is recorded.
type Protected struct {
	as       *Server
	Resource string // the URL tokens must be issued for (their aud)

	mu      sync.Mutex
	seen    map[string]int // subject -> requests
	refused int
}

// Protect protects next as resource, which must be where next is served
// (e.g. http://127.0.0.1:PORT/mcp).
func (s *Server) Protect(resource string) *Protected {
	return &Protected{as: s, Resource: resource, seen: map[string]int{}}
}

// Handler serves next behind the token check, and the metadata.
func (p *Protected) Handler(next http.Handler) http.Handler {
	u, _ := url.Parse(p.Resource)
	wellKnown := "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	meta := "http://" + u.Host + wellKnown
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wellKnown {
			writeJSON(w, http.StatusOK, map[string]any{"resource": p.Resource, "authorization_servers": []string{p.as.Issuer()},
				"scopes_supported": []string{"mcp:tools"}, "bearer_methods_supported": []string{"header"}})
			return
		}
		scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		var claims map[string]any
		var err error = errNoToken
		if strings.EqualFold(scheme, "bearer") && raw != "" {
			claims, err = p.as.Verify(raw, p.Resource)
		}
		if err != nil {
			p.mu.Lock()
			p.refused++
			p.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+meta+`"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_token"})
			return
		}
		sub, _ := claims["sub"].(string)
		p.mu.Lock()
		p.seen[sub]++
		p.mu.Unlock()
		next.ServeHTTP(w, r.WithContext(withSubject(r.Context(), sub)))
	})
}

// Requests is how many requests of subject were accepted.
func (p *Protected) Requests(subject string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[subject]
}

// Refused is how many requests were refused.
func (p *Protected) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

var errNoToken = &oauthError{401, "invalid_token", "no bearer token"}

func (e *oauthError) Error() string { return e.code + ": " + e.desc }

type subjectKey struct{}

func withSubject(ctx context.Context, sub string) context.Context {
	return context.WithValue(ctx, subjectKey{}, sub)
}

// Subject is the verified subject of a request Protected accepted, for
// the protected server's handlers (an MCP tool that answers who called).
func Subject(ctx context.Context) string {
	s, _ := ctx.Value(subjectKey{}).(string)
	return s
}
