// Package authtest is an OAuth 2.0 authorization server for tests: real
// HTTP on a loopback port, real JWTs signed with go-jose, a JWKS, and a
// token endpoint that implements the client_credentials grant (RFC 6749
// §4.4) and token exchange (RFC 8693). A test can mint callers' tokens,
// make the server refuse, shorten token lifetimes, rotate its signing key,
// and stop and restart it on the same address (the AS down). API is the
// other half: an HTTP API that accepts only tokens this server signed for
// its audience, and records the subject and actor of each.
//
// It is for tests only; nothing in mcpd's binary imports it.
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Grant types the token endpoint implements.
const (
	GrantClientCredentials = "client_credentials"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
	TokenTypeAccessToken   = "urn:ietf:params:oauth:token-type:access_token"
	TokenTypeJWT           = "urn:ietf:params:oauth:token-type:jwt"
)

// Server is a running authorization server. Its methods are safe for
// concurrent use.
type Server struct {
	t    testing.TB
	addr string // host:port, kept across Stop and Start

	mu      sync.Mutex
	srv     *http.Server
	keys    []*ecdsa.PrivateKey // current last; all published
	kids    []string
	clients map[string]string // client id -> secret
	ttl     time.Duration
	refuse  *Refusal
	delay   time.Duration
	counts  map[string]int // "grant key" -> requests answered with a token
	issued  []string       // every token issued or minted
	reqs    int
	ac      authCode // the authorization-code grant (authcode.go)
}

// Refusal is an OAuth error the token endpoint answers every request with
// (RFC 6749 §5.2) while set.
type Refusal struct {
	Status      int    // HTTP status; 400 when 0
	Code        string // "invalid_grant", "invalid_target", ...
	Description string
}

// Start starts a server on a free loopback port; it is stopped when the
// test ends. The client "mcpd" with secret "mcpd-secret-0123456789" is
// registered.
func Start(t testing.TB) *Server {
	s := &Server{t: t, clients: map[string]string{"mcpd": "mcpd-secret-0123456789"}, ttl: time.Hour, counts: map[string]int{}}
	s.ac.init()
	s.RotateKey(false)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("GET /jwks", s.jwks)
	mux.HandleFunc("POST /token", s.token)
	s.routeAuthCode(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Stop closes the listener and every connection: the AS is down, and a
// client sees "connection refused".
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

// Restart listens again on the same address after Stop.
func (s *Server) Restart() {
	var ln net.Listener
	var err error
	for i := 0; i < 100; i++ {
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		s.t.Fatalf("authtest: cannot listen on %s again: %v", s.addr, err)
	}
	s.serve(ln)
}

// Issuer is the server's issuer identifier (its base URL).
func (s *Server) Issuer() string { return "http://" + s.addr }

// JWKSURL is where the server publishes its keys.
func (s *Server) JWKSURL() string { return s.Issuer() + "/jwks" }

// TokenURL is the token endpoint.
func (s *Server) TokenURL() string { return s.Issuer() + "/token" }

// AddClient registers a confidential client.
func (s *Server) AddClient(id, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = secret
}

// SetTTL sets the lifetime of the tokens the token endpoint issues.
func (s *Server) SetTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ttl = d
}

// SetDelay makes the token endpoint wait d before answering (so that
// concurrent requests overlap).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Refuse makes the token endpoint answer every request with r; nil
// accepts again.
func (s *Server) Refuse(r *Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = r
}

// RotateKey adds a new signing key, used from now on. With dropOld the
// previous keys leave the JWKS, so that tokens they signed no longer
// verify.
func (s *Server) RotateKey(dropOld bool) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if dropOld {
		s.keys, s.kids = nil, nil
	}
	s.keys = append(s.keys, k)
	s.kids = append(s.kids, fmt.Sprintf("k%d-%d", len(s.kids)+1, time.Now().UnixNano()%100000))
}

// Count is how many tokens the endpoint issued for grant ("client_credentials"
// or "token_exchange") and key: the client id for client_credentials, the
// subject for token exchange.
func (s *Server) Count(grant, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[grant+" "+key]
}

// Requests is how many requests the token endpoint received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs
}

// Issued is every token the server issued or minted so far, for tests
// that check none of them was logged.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// Claims are what Mint puts in a token, besides iss, iat and jti.
type Claims struct {
	Subject  string
	Audience []string
	Scope    string
	TTL      time.Duration // default 1h; negative: already expired
	Extra    map[string]any
}

// Mint signs a caller's access token, as the AS would after a login.
func (s *Server) Mint(c Claims) string {
	if c.TTL == 0 {
		c.TTL = time.Hour
	}
	all := map[string]any{}
	for k, v := range c.Extra {
		all[k] = v
	}
	if c.Scope != "" {
		all["scope"] = c.Scope
	}
	return s.sign(c.Subject, c.Audience, c.TTL, all)
}

func (s *Server) sign(sub string, aud []string, ttl time.Duration, extra map[string]any) string {
	s.mu.Lock()
	key, kid := s.keys[len(s.keys)-1], s.kids[len(s.kids)-1]
	s.mu.Unlock()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		s.t.Fatal(err)
	}
	now := time.Now()
	std := jwt.Claims{
		Issuer: s.Issuer(), Subject: sub, Audience: jwt.Audience(aud),
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
		Expiry: jwt.NewNumericDate(now.Add(ttl)), ID: strconv.FormatInt(now.UnixNano(), 36),
	}
	tok, err := jwt.Signed(signer).Claims(std).Claims(extra).Serialize()
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.issued = append(s.issued, tok)
	s.mu.Unlock()
	return tok
}

// Verify checks a token this server signed: signature, issuer, expiry and
// that its audience includes aud. It returns all its claims.
func (s *Server) Verify(raw, aud string) (map[string]any, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var key *ecdsa.PrivateKey
	for i, kid := range s.kids {
		if kid == tok.Headers[0].KeyID {
			key = s.keys[i]
		}
	}
	s.mu.Unlock()
	if key == nil {
		return nil, fmt.Errorf("unknown key id %q", tok.Headers[0].KeyID)
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(&key.PublicKey, &std, &all); err != nil {
		return nil, err
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: s.Issuer(), AnyAudience: jwt.Audience{aud}, Time: time.Now()}, 0); err != nil {
		return nil, err
	}
	if s.revokedToken(raw) {
		return nil, errors.New("the token was revoked")
	}
	return all, nil
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	md := map[string]any{
		"issuer": s.Issuer(), "jwks_uri": s.JWKSURL(), "token_endpoint": s.TokenURL(),
		"grant_types_supported": []string{GrantClientCredentials, GrantTokenExchange, GrantAuthorizationCode, GrantRefreshToken},
	}
	s.authCodeMetadata(md)
	writeJSON(w, http.StatusOK, md)
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	set := jose.JSONWebKeySet{}
	for i, k := range s.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: s.kids[i], Algorithm: "ES256", Use: "sig"})
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, set)
}

type oauthError struct {
	status int
	code   string
	desc   string
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs++
	refuse, delay, ttl := s.refuse, s.delay, s.ttl
	s.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if err := r.ParseForm(); err != nil {
		writeErr(w, &oauthError{400, "invalid_request", err.Error()})
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt == GrantAuthorizationCode || gt == GrantRefreshToken {
		s.userToken(w, r, refuse, ttl)
		return
	}
	client, oerr := s.authenticate(r)
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
	var sub, countKey, grant string
	aud := r.PostForm["audience"]
	aud = append(aud, r.PostForm["resource"]...)
	extra := map[string]any{}
	if sc := r.PostForm.Get("scope"); sc != "" {
		extra["scope"] = sc
	}
	switch r.PostForm.Get("grant_type") {
	case GrantClientCredentials:
		sub, countKey, grant = client, client, "client_credentials"
	case GrantTokenExchange:
		grant = "token_exchange"
		stt := r.PostForm.Get("subject_token_type")
		if stt != TokenTypeAccessToken && stt != TokenTypeJWT {
			writeErr(w, &oauthError{400, "invalid_request", "subject_token_type must be an access token or a JWT"})
			return
		}
		if rt := r.PostForm.Get("requested_token_type"); rt != "" && rt != TokenTypeAccessToken {
			writeErr(w, &oauthError{400, "invalid_request", "only access tokens can be requested"})
			return
		}
		claims, err := s.verifyAny(r.PostForm.Get("subject_token"))
		if err != nil {
			writeErr(w, &oauthError{400, "invalid_grant", "the subject token is invalid: " + err.Error()})
			return
		}
		sub, _ = claims["sub"].(string)
		countKey = sub
		act := map[string]any{"sub": client}
		if prev, ok := claims["act"]; ok {
			act["act"] = prev // a delegation chain (RFC 8693 §4.1)
		}
		extra["act"] = act
		if len(aud) == 0 {
			writeErr(w, &oauthError{400, "invalid_target", "token exchange needs an audience or a resource"})
			return
		}
	default:
		writeErr(w, &oauthError{400, "unsupported_grant_type", "grant_type " + r.PostForm.Get("grant_type") + " is not supported"})
		return
	}
	tok := s.sign(sub, aud, ttl, extra)
	s.mu.Lock()
	s.counts[grant+" "+countKey]++
	s.mu.Unlock()
	resp := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": int(ttl.Seconds())}
	if grant == "token_exchange" {
		resp["issued_token_type"] = TokenTypeAccessToken
	}
	if sc, ok := extra["scope"]; ok {
		resp["scope"] = sc
	}
	writeJSON(w, http.StatusOK, resp)
}

// verifyAny verifies a subject token with any audience.
func (s *Server) verifyAny(raw string) (map[string]any, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	var key *ecdsa.PrivateKey
	for i, kid := range s.kids {
		if kid == tok.Headers[0].KeyID {
			key = s.keys[i]
		}
	}
	s.mu.Unlock()
	if key == nil {
		return nil, errors.New("unknown key")
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(&key.PublicKey, &std, &all); err != nil {
		return nil, err
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: s.Issuer(), Time: time.Now()}, 0); err != nil {
		return nil, err
	}
	return all, nil
}

// authenticate checks the client's credentials: HTTP Basic
// (client_secret_basic) or client_id and client_secret in the form
// (client_secret_post).
func (s *Server) authenticate(r *http.Request) (string, *oauthError) {
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	want, known := s.clients[id]
	s.mu.Unlock()
	if id == "" || !known || secret != want {
		return "", &oauthError{http.StatusUnauthorized, "invalid_client", "client authentication failed"}
	}
	return id, nil
}

func writeErr(w http.ResponseWriter, e *oauthError) {
	body := map[string]any{"error": e.code}
	if e.desc != "" {
		body["error_description"] = e.desc
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="authtest"`)
	}
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Seen is what API recorded of one request it accepted.
type Seen struct {
	Subject string
	Actor   string // act.sub, "" without act
	Scope   string
	Token   string
}

// APIServer is a protected API for tests: every request must carry a
// bearer token the AS signed for Audience, or it is answered 401 and
// counted in Refused. An accepted request is answered with what the token
// says: {"sub", "act", "aud", "scope", "path"}.
type APIServer struct {
	URL      string
	Audience string

	mu      sync.Mutex
	seen    []Seen
	refused []string
}

// API starts an API for audience, that trusts as.
func API(t testing.TB, as *Server, audience string) *APIServer {
	a := &APIServer{Audience: audience}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.URL = "http://" + ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "bearer") || raw == "" {
			a.refuse(w, "no bearer token")
			return
		}
		claims, err := as.Verify(raw, audience)
		if err != nil {
			a.refuse(w, err.Error())
			return
		}
		s := Seen{Token: raw}
		s.Subject, _ = claims["sub"].(string)
		s.Scope, _ = claims["scope"].(string)
		if act, ok := claims["act"].(map[string]any); ok {
			s.Actor, _ = act["sub"].(string)
		}
		a.mu.Lock()
		a.seen = append(a.seen, s)
		a.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"sub": s.Subject, "act": s.Actor, "aud": claims["aud"], "scope": s.Scope, "path": r.URL.Path})
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return a
}

func (a *APIServer) refuse(w http.ResponseWriter, why string) {
	a.mu.Lock()
	a.refused = append(a.refused, why)
	a.mu.Unlock()
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_token", "error_description": why})
}

// Seen returns the requests accepted so far.
func (a *APIServer) Seen() []Seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Seen(nil), a.seen...)
}

// Refused returns why each refused request was refused.
func (a *APIServer) Refused() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.refused...)
}

// Bearer is a client transport that sends token as a bearer token on
// every request, as an authenticated MCP client does, through next
// (nil: http.DefaultTransport).
func Bearer(token string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return bearer{token, next}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
