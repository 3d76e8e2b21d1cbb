package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/principal"
)

// issuer is a test authorization server: its own RSA and EC keys, a JWKS
// served on loopback (whose keys a test can rotate) and a token minter.
type issuer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]any // kid → private key
	public  []jose.JSONWebKey
	fetches atomic.Int32
}

func newIssuer(t *testing.T) *issuer {
	is := &issuer{t: t, keys: map[string]any{}}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		is.mu.Lock()
		defer is.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: is.public})
	}))
	t.Cleanup(is.srv.Close)
	is.addRSA("rsa-1")
	is.addEC("ec-1")
	return is
}

func (is *issuer) add(kid string, priv any, pub any, alg string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid] = priv
	is.public = append(is.public, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: alg, Use: "sig"})
}

func (is *issuer) addRSA(kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		is.t.Fatal(err)
	}
	is.add(kid, k, &k.PublicKey, "RS256")
}

func (is *issuer) addEC(kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		is.t.Fatal(err)
	}
	is.add(kid, k, &k.PublicKey, "ES256")
}

const resource = "https://mcp.example.com/mcp"

func (is *issuer) url() string { return is.srv.URL }

// claims are a valid token's claims; edit tweaks them.
func (is *issuer) claims(edit func(c *jwt.Claims, extra map[string]any)) (jwt.Claims, map[string]any) {
	now := time.Now()
	c := jwt.Claims{Issuer: is.url(), Subject: "alice", Audience: jwt.Audience{resource},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), IssuedAt: jwt.NewNumericDate(now)}
	extra := map[string]any{"scope": "read write", "org_id": "acme"}
	if edit != nil {
		edit(&c, extra)
	}
	return c, extra
}

func (is *issuer) mint(kid string, edit func(c *jwt.Claims, extra map[string]any)) string {
	is.mu.Lock()
	priv := is.keys[kid]
	is.mu.Unlock()
	alg := jose.RS256
	if _, ok := priv.(*ecdsa.PrivateKey); ok {
		alg = jose.ES256
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: priv}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		is.t.Fatal(err)
	}
	c, extra := is.claims(edit)
	tok, err := jwt.Signed(sig).Claims(c).Claims(extra).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return tok
}

// unsigned is a token with alg "none" and valid claims.
func (is *issuer) unsigned() string {
	c, extra := is.claims(nil)
	b, _ := json.Marshal(c)
	var m map[string]any
	json.Unmarshal(b, &m)
	for k, v := range extra {
		m[k] = v
	}
	payload, _ := json.Marshal(m)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT","kid":"rsa-1"}`)) + "." + enc(payload) + "."
}

// compile loads an auth block from HCL text.
func compile(t *testing.T, src string, prev *Config) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "auth.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load([]string{path}, config.Blocks{})
	if diags.HasErrors() {
		return nil, diags
	}
	c, diags := Compile(cfg.Auth, prev, Options{JWKSMinRefresh: 2 * time.Second})
	if diags.HasErrors() {
		return nil, diags
	}
	return c, nil
}

func mustCompile(t *testing.T, src string, prev *Config) *Config {
	t.Helper()
	c, err := compile(t, src, prev)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func hashHex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

func authHCL(is *issuer, keys string) string {
	return fmt.Sprintf(`
auth {
  header   = "X-Api-Key"
  resource = %q
  %s
  oauth {
    issuer     = %q
    jwks_url   = %q
    algorithms = ["RS256", "ES256"]
    leeway     = "5s"
  }
}
`, resource, keys, is.url(), is.url())
}

const testKeys = `
  api_key "ci-bot" {
    value      = env("MCPD_TEST_CI_KEY")
    scopes     = ["read"]
    attributes = { org_id = "acme" }
  }
  api_key "hashed" {
    sha256 = "%s"
    scopes = ["write"]
  }
`

// server is an MCP server behind the middleware whose tool "whoami"
// answers with the caller the SDK handed it.
type server struct {
	url string
	cur atomic.Pointer[Config]
}

func newServer(t *testing.T, c *Config) *server {
	s := &server{}
	s.cur.Store(c)
	ms := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p := principal.FromTokenInfo(req.Extra.TokenInfo)
		org, _ := p.Lookup("claims.org_id")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s %s %v %v", p.Method, p.Name, p.Scopes, org)}}}, nil, nil
	})
	mcp.AddTool(ms, &mcp.Tool{Name: "tokenhash"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		text := "none"
		if tok := principal.FromTokenInfo(req.Extra.TokenInfo).Token(); tok != nil {
			text = hashHex(tok.Reveal())
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)
	mw := &Middleware{Current: s.cur.Load, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mw.Wrap(h))
	for _, p := range MetadataPaths() {
		mux.Handle(p, MetadataHandler(s.cur.Load))
	}
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	s.url = ts.URL
	return s
}

// headerTransport adds one header to every request.
type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, header, value string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerTransport{header, value}}}
	cs, err := c.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func whoami(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// post sends a raw initialize with one header and returns the status and
// the WWW-Authenticate header.
func post(t *testing.T, url, header, value string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if header != "" {
		req.Header.Set(header, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

func TestAuthenticate(t *testing.T) {
	t.Setenv("MCPD_TEST_CI_KEY", "ci-secret-1")
	is := newIssuer(t)
	c := mustCompile(t, authHCL(is, fmt.Sprintf(testKeys, hashHex("hashed-secret"))), nil)
	s := newServer(t, c)
	prm := `resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`

	ok := []struct {
		name, header, value, want string
	}{
		{"api key bearer", "Authorization", "Bearer ci-secret-1", "api_key ci-bot [read] acme"},
		{"api key header", "X-Api-Key", "ci-secret-1", "api_key ci-bot [read] acme"},
		{"hashed key", "Authorization", "Bearer hashed-secret", "api_key hashed [write] <nil>"},
		{"RSA token", "Authorization", "Bearer " + is.mint("rsa-1", nil), "oauth alice [read write] acme"},
		{"EC token", "Authorization", "bearer " + is.mint("ec-1", nil), "oauth alice [read write] acme"},
		{"expired within leeway", "Authorization", "Bearer " + is.mint("rsa-1", func(c *jwt.Claims, _ map[string]any) {
			c.Expiry = jwt.NewNumericDate(time.Now().Add(-2 * time.Second))
		}), "oauth alice [read write] acme"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := connect(t, s.url, tc.header, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if got := whoami(t, cs); got != tc.want {
				t.Fatalf("whoami = %q, want %q", got, tc.want)
			}
		})
	}

	other := newIssuer(t) // same kids, other keys
	bad := []struct {
		name, header, value string
	}{
		{"no credentials", "", ""},
		{"basic auth", "Authorization", "Basic Y2k6c2VjcmV0"},
		{"unknown key", "Authorization", "Bearer nope"},
		{"key in wrong header", "X-Other", "ci-secret-1"},
		{"bad signature", "Authorization", "Bearer " + other.mint("rsa-1", nil)},
		{"wrong audience", "Authorization", "Bearer " + is.mint("rsa-1", func(c *jwt.Claims, _ map[string]any) { c.Audience = jwt.Audience{"https://other.example.com/mcp"} })},
		{"expired", "Authorization", "Bearer " + is.mint("ec-1", func(c *jwt.Claims, _ map[string]any) { c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Minute)) })},
		{"not yet valid", "Authorization", "Bearer " + is.mint("ec-1", func(c *jwt.Claims, _ map[string]any) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Minute)) })},
		{"no exp", "Authorization", "Bearer " + is.mint("ec-1", func(c *jwt.Claims, _ map[string]any) { c.Expiry = nil })},
		{"wrong issuer", "Authorization", "Bearer " + is.mint("rsa-1", func(c *jwt.Claims, _ map[string]any) { c.Issuer = "https://evil.example.com" })},
		{"alg none", "Authorization", "Bearer " + is.unsigned()},
		{"tampered", "Authorization", "Bearer " + tamper(is.mint("rsa-1", nil))},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			code, www := post(t, s.url, tc.header, tc.value)
			if code != http.StatusUnauthorized || !strings.HasPrefix(www, "Bearer ") || !strings.Contains(www, prm) {
				t.Fatalf("got %d, WWW-Authenticate %q; want 401 with %s", code, www, prm)
			}
			if _, err := connect(t, s.url, tc.header, tc.value); err == nil {
				t.Fatal("the client connected")
			}
		})
	}
}

// tamper changes the payload of a signed token, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var m map[string]any
	json.Unmarshal(b, &m)
	m["sub"] = "mallory"
	b, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func TestInsufficientScope(t *testing.T) {
	t.Setenv("MCPD_TEST_CI_KEY", "ci-secret-1")
	is := newIssuer(t)
	src := strings.Replace(authHCL(is, fmt.Sprintf(testKeys, hashHex("hashed-secret"))), `header   = "X-Api-Key"`, `header = "X-Api-Key"
  scopes = ["read"]`, 1)
	s := newServer(t, mustCompile(t, src, nil))
	code, www := post(t, s.url, "Authorization", "Bearer hashed-secret") // holds write only
	if code != http.StatusForbidden || !strings.Contains(www, `error="insufficient_scope"`) || !strings.Contains(www, `scope="read"`) {
		t.Fatalf("got %d %q; want 403 insufficient_scope", code, www)
	}
	if code, _ := post(t, s.url, "Authorization", "Bearer ci-secret-1"); code != http.StatusOK {
		t.Fatalf("a caller with the scope got %d", code)
	}
}

// A reload that rotates a key takes effect on the next request.
func TestReloadRotatesKeys(t *testing.T) {
	is := newIssuer(t)
	t.Setenv("MCPD_TEST_CI_KEY", "old-key")
	c1 := mustCompile(t, authHCL(is, fmt.Sprintf(testKeys, hashHex("hashed-secret"))), nil)
	s := newServer(t, c1)
	if code, _ := post(t, s.url, "Authorization", "Bearer old-key"); code != http.StatusOK {
		t.Fatalf("old key before the reload: %d", code)
	}
	// Warm the JWKS cache, which the reload must carry over.
	if code, _ := post(t, s.url, "Authorization", "Bearer "+is.mint("rsa-1", nil)); code != http.StatusOK {
		t.Fatalf("token: %d", code)
	}
	t.Setenv("MCPD_TEST_CI_KEY", "new-key")
	c2 := mustCompile(t, authHCL(is, fmt.Sprintf(testKeys, hashHex("hashed-secret"))), c1)
	s.cur.Store(c2)
	if code, _ := post(t, s.url, "Authorization", "Bearer old-key"); code != http.StatusUnauthorized {
		t.Fatalf("old key after the reload: %d", code)
	}
	if code, _ := post(t, s.url, "Authorization", "Bearer new-key"); code != http.StatusOK {
		t.Fatalf("new key after the reload: %d", code)
	}
	if code, _ := post(t, s.url, "Authorization", "Bearer "+is.mint("ec-1", nil)); code != http.StatusOK {
		t.Fatalf("token after the reload: %d", code)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1 (the reload keeps the cache)", n)
	}
}

// A token signed with a key the cache does not know makes it refetch the
// JWKS (the issuer rotated its keys), at most once per JWKSMinRefresh.
func TestJWKSRotation(t *testing.T) {
	is := newIssuer(t)
	s := newServer(t, mustCompile(t, authHCL(is, ""), nil))
	if code, _ := post(t, s.url, "Authorization", "Bearer "+is.mint("rsa-1", nil)); code != http.StatusOK {
		t.Fatalf("first token: %d", code)
	}
	is.addRSA("rsa-2")
	tok := is.mint("rsa-2", nil)
	// Within JWKSMinRefresh of the first fetch: unknown kid, no refetch.
	if code, _ := post(t, s.url, "Authorization", "Bearer "+tok); code != http.StatusUnauthorized {
		t.Fatalf("new kid right after a fetch: %d", code)
	}
	for range 5 {
		post(t, s.url, "Authorization", "Bearer "+is.mint("rsa-1", func(c *jwt.Claims, _ map[string]any) {}))
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
	time.Sleep(2100 * time.Millisecond) // JWKSMinRefresh elapsing is what is under test
	if code, _ := post(t, s.url, "Authorization", "Bearer "+tok); code != http.StatusOK {
		t.Fatalf("new kid after the refresh interval: %d", code)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", n)
	}
}

// A legacy session is bound to the principal that opened it: another
// caller that presents its id is refused.
func TestSessionBoundToPrincipal(t *testing.T) {
	t.Setenv("MCPD_TEST_CI_KEY", "ci-secret-1")
	is := newIssuer(t)
	s := newServer(t, mustCompile(t, authHCL(is, fmt.Sprintf(testKeys, hashHex("hashed-secret"))), nil))
	cs, err := connect(t, s.url, "Authorization", "Bearer ci-secret-1")
	if err != nil {
		t.Fatal(err)
	}
	if cs.ID() == "" {
		t.Fatal("no session id")
	}
	call := func(token string) int {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
		req, _ := http.NewRequest(http.MethodPost, s.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := call("hashed-secret"); code != http.StatusForbidden && code != http.StatusNotFound {
		t.Fatalf("another principal on the session: %d, want 403 or 404", code)
	}
	if code := call(is.mint("rsa-1", func(c *jwt.Claims, _ map[string]any) { c.Subject = "ci-bot" })); code != http.StatusForbidden && code != http.StatusNotFound {
		t.Fatalf("a token whose subject is the key's name: %d, want 403 or 404", code)
	}
	if code := call("ci-secret-1"); code != http.StatusOK {
		t.Fatalf("the session's own principal: %d", code)
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	is := newIssuer(t)
	src := strings.Replace(authHCL(is, ""), `header   = "X-Api-Key"`, `scopes = ["read"]`, 1)
	s := newServer(t, mustCompile(t, src, nil))
	for _, p := range MetadataPaths() {
		resp, err := http.Get(s.url + p)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		want := fmt.Sprintf(`map[authorization_servers:[%s] bearer_methods_supported:[header] resource:%s scopes_supported:[read]]`, is.url(), resource)
		if got := fmt.Sprint(doc); resp.StatusCode != 200 || got != want {
			t.Fatalf("GET %s: %d %s\nwant %s", p, resp.StatusCode, got, want)
		}
	}
	// Without oauth there is no metadata.
	s.cur.Store(mustCompile(t, "auth {\n  api_key \"k\" {\n    sha256 = \""+hashHex("x")+"\"\n  }\n}\n", nil))
	resp, err := http.Get(s.url + MetadataPaths()[0])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("metadata without oauth: %d", resp.StatusCode)
	}
	if code, www := post(t, s.url, "", ""); code != 401 || www != `Bearer realm="mcpd"` {
		t.Fatalf("API keys only: %d %q", code, www)
	}
}

func TestRequiredWithoutConfig(t *testing.T) {
	var cur atomic.Pointer[Config]
	mw := &Middleware{Current: cur.Load, Required: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	reached := false
	ts := httptest.NewServer(mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })))
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || reached {
		t.Fatalf("got %d (reached %v); want 503 and not reached", resp.StatusCode, reached)
	}
}

// An issuer whose JWKS cannot be fetched makes requests fail with 503 (the
// server's problem, not the token's) until it answers.
func TestJWKSUnavailable(t *testing.T) {
	is := newIssuer(t)
	s := newServer(t, mustCompile(t, authHCL(is, ""), nil))
	tok := is.mint("rsa-1", nil)
	is.srv.Close()
	if code, _ := post(t, s.url, "Authorization", "Bearer "+tok); code != http.StatusServiceUnavailable {
		t.Fatalf("JWKS down: %d, want 503", code)
	}
}

// Opaque tokens are introspected (RFC 7662) with the client's credentials.
func TestIntrospection(t *testing.T) {
	var calls atomic.Int32
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcpd" || secret != "s3cret" {
			http.Error(w, "unauthorized client", http.StatusUnauthorized)
			return
		}
		r.ParseForm()
		exp := time.Now().Add(time.Hour).Unix()
		answers := map[string]string{
			"good":      fmt.Sprintf(`{"active":true,"sub":"bob","scope":"read","aud":%q,"exp":%d,"org_id":"acme"}`, resource, exp),
			"inactive":  `{"active":false}`,
			"other-aud": fmt.Sprintf(`{"active":true,"sub":"bob","aud":["https://other.example.com"],"exp":%d}`, exp),
			"expired":   fmt.Sprintf(`{"active":true,"sub":"bob","exp":%d}`, time.Now().Add(-time.Hour).Unix()),
			// Times no clock reaches: an exp that never comes is a token
			// that does not expire (bounded by mcpd, not read as the
			// past); an nbf that never comes is a token not valid yet.
			"forever":   fmt.Sprintf(`{"active":true,"sub":"bob","scope":"read","aud":%q,"exp":9223372036854775807,"org_id":"acme"}`, resource),
			"nbf-never": fmt.Sprintf(`{"active":true,"sub":"bob","exp":%d,"nbf":9223372036854775807}`, exp),
		}
		a, ok := answers[r.PostForm.Get("token")]
		if !ok {
			a = `{"active":false}`
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, a)
	}))
	defer as.Close()
	src := fmt.Sprintf(`
auth {
  resource = %q
  oauth {
    issuer            = %q
    introspection_url = %q
    client_id         = "mcpd"
    client_secret     = env("MCPD_TEST_INTROSPECTION_SECRET")
  }
}
`, resource, as.URL, as.URL)
	t.Setenv("MCPD_TEST_INTROSPECTION_SECRET", "s3cret")
	s := newServer(t, mustCompile(t, src, nil))
	cs, err := connect(t, s.url, "Authorization", "Bearer good")
	if err != nil {
		t.Fatal(err)
	}
	if got := whoami(t, cs); got != "oauth bob [read] acme" {
		t.Fatalf("whoami = %q", got)
	}
	if cs, err := connect(t, s.url, "Authorization", "Bearer forever"); err != nil {
		t.Fatalf("a token with exp 2^63-1: %v", err)
	} else if got := whoami(t, cs); got != "oauth bob [read] acme" {
		t.Fatalf("whoami = %q", got)
	}
	for _, tok := range []string{"inactive", "other-aud", "expired", "unknown", "nbf-never"} {
		if code, www := post(t, s.url, "Authorization", "Bearer "+tok); code != http.StatusUnauthorized || !strings.Contains(www, "invalid_token") {
			t.Fatalf("%s: %d %q", tok, code, www)
		}
	}
	// Wrong client credentials are the server's problem: 503.
	t.Setenv("MCPD_TEST_INTROSPECTION_SECRET", "wrong")
	s.cur.Store(mustCompile(t, src, nil))
	if code, _ := post(t, s.url, "Authorization", "Bearer good"); code != http.StatusServiceUnavailable {
		t.Fatalf("bad client credentials: %d", code)
	}
}

// An OAuth caller's principal carries the token it was verified with, for
// the backends that exchange or forward it; an API key's never does (it is
// mcpd's own secret).
func TestPrincipalCarriesOAuthTokenOnly(t *testing.T) {
	t.Setenv("MCPD_TEST_CI_KEY", "ci-secret-1")
	is := newIssuer(t)
	s := newServer(t, mustCompile(t, authHCL(is, fmt.Sprintf(testKeys, hashHex("hashed-secret"))), nil))
	jwtTok := is.mint("ec-1", nil)
	for _, tc := range []struct{ name, header, value, want string }{
		{"oauth", "Authorization", "Bearer " + jwtTok, hashHex(jwtTok)},
		{"api key", "Authorization", "Bearer ci-secret-1", "none"},
		{"api key header", "X-Api-Key", "ci-secret-1", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := connect(t, s.url, tc.header, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tokenhash"})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != tc.want {
				t.Fatalf("token hash %q, want %q", got, tc.want)
			}
		})
	}
}
