package httpadapter

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/internal/wait"
)

var (
	oauthOnly   = &adapter.AuthInfo{OAuth: true}
	apiKeysOnly = &adapter.AuthInfo{APIKeys: true}
)

// Mistakes in identity blocks are load errors at the attribute at fault.
func TestIdentityDiagnostics(t *testing.T) {
	backend := func(body string) string {
		return "http_backend \"api\" {\n  base_url = \"https://api.example.com\"\n" + body + "}\nhttp {\n  backend = \"api\"\n}\n"
	}
	const cc = `  identity {
    mode = "client_credentials"
    token_url = "https://as.example.com/token"
    client_id = "mcpd"
    client_secret = "s3cret-s3cret"
`
	tests := []struct {
		name string
		src  string
		auth *adapter.AuthInfo
		want string
	}{
		{"unknown mode", backend("  identity {\n    mode = \"token-exchange\"\n  }\n"), oauthOnly, `Did you mean "token_exchange"?`},
		{"no mode", backend("  identity {\n    audience = \"x\"\n  }\n"), oauthOnly, `"mode" is required`},
		{"exchange without auth", backend("  identity {\n    mode = \"token_exchange\"\n    token_url = \"https://as.example.com/token\"\n    client_id = \"a\"\n    client_secret = \"b\"\n    audience = \"x\"\n  }\n"), nil, "this config has no auth block"},
		{"passthrough without auth", backend("  identity {\n    mode = \"passthrough\"\n    audience = \"https://api.example.com\"\n  }\n"), nil, "this config has no auth block"},
		{"passthrough with api keys only", backend("  identity {\n    mode = \"passthrough\"\n    audience = \"https://api.example.com\"\n  }\n"), apiKeysOnly, "only has API keys"},
		{"passthrough to mcpd's audience", backend("  identity {\n    mode = \"passthrough\"\n    audience = \"https://mcp.example.com/mcp\"\n  }\n"), &adapter.AuthInfo{OAuth: true, Audience: "https://mcp.example.com/mcp"}, "every token a client sends mcpd would be forwarded"},
		{"passthrough without audience", backend("  identity {\n    mode = \"passthrough\"\n  }\n"), oauthOnly, "needs audience"},
		{"passthrough with a token_url", backend("  identity {\n    mode = \"passthrough\"\n    audience = \"x\"\n    token_url = \"https://as.example.com/token\"\n  }\n"), oauthOnly, `identity.token_url is not used with mode = "passthrough"`},
		{"exchange without audience", backend("  identity {\n    mode = \"token_exchange\"\n    token_url = \"https://as.example.com/token\"\n    client_id = \"a\"\n    client_secret = \"b\"\n  }\n"), oauthOnly, "needs audience (or resource)"},
		{"missing secret", backend("  identity {\n    mode = \"client_credentials\"\n    token_url = \"https://as.example.com/token\"\n    client_id = \"a\"\n  }\n"), nil, "needs client_secret"},
		{"plain http token url", backend(strings.Replace(cc, "https://as.example.com", "http://as.example.com", 1) + "  }\n"), nil, "must use https"},
		{"relative token url", backend(strings.Replace(cc, "https://as.example.com/token", "/token", 1) + "  }\n"), nil, "is not an absolute URL"},
		{"bad scopes", backend(cc + "    scopes = [\"a b\"]\n  }\n"), nil, "scope names without spaces"},
		{"bad client_auth", backend(cc + "    client_auth = \"jwt\"\n  }\n"), nil, `"basic" (HTTP Basic`},
		{"empty client id", backend(strings.Replace(cc, `client_id = "mcpd"`, `client_id = ""`, 1) + "  }\n"), nil, "identity.client_id must not be empty"},
		{"authorization header too", "http_backend \"api\" {\n  base_url = \"https://api.example.com\"\n  headers = { Authorization = \"Bearer x-x-x-x-x\" }\n" + cc + "  }\n}\nhttp {\n  backend = \"api\"\n}\n", nil, "headers sets Authorization"},
		{"tool header beside identity", "http {\n  url = \"https://api.example.com/x\"\n  headers = { authorization = \"Bearer x-x-x-x-x\" }\n" + cc + "  }\n}\n", nil, "headers sets Authorization"},
		{"tool exchange without auth", "http {\n  url = \"https://api.example.com/x\"\n  identity {\n    mode = \"passthrough\"\n    audience = \"x\"\n  }\n}\n", nil, "this config has no auth block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := adaptertest.Compile(t, New(), "http", adaptertest.Config{Src: tc.src, Auth: tc.auth})
			if ok, text := adaptertest.DiagContains(diags, tc.want); !ok {
				t.Fatalf("want an error containing %q; got:\n%s", tc.want, text)
			}
			for _, d := range diags {
				if d.Severity == 1 && d.Subject == nil {
					t.Errorf("diagnostic without a range: %s", d.Summary)
				}
				if strings.Contains(d.Detail, "s3cret-s3cret") {
					t.Errorf("a diagnostic shows the secret: %s", d.Detail)
				}
			}
		})
	}
}

// identityRig is an authorization server, an API that trusts it, and an
// adapter whose token cache runs on a clock the test moves.
type identityRig struct {
	as    *authtest.Server
	api   *authtest.APIServer
	a     *Adapter
	clock *fakeClock
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const apiAudience = "https://api.example.com"

func newIdentityRig(t *testing.T) *identityRig {
	r := &identityRig{as: authtest.Start(t), a: New(), clock: &fakeClock{t: time.Now()}}
	r.api = authtest.API(t, r.as, apiAudience)
	r.a.tokens.SetClock(r.clock.Now)
	return r
}

func (r *identityRig) compile(t *testing.T, identity string) adapter.Handler {
	src := fmt.Sprintf("http_backend \"api\" {\n  base_url = %q\n  identity {\n%s\n  }\n}\nhttp {\n  backend = \"api\"\n  path = \"/orders\"\n}\n", r.api.URL, identity)
	return adaptertest.MustCompile(t, r.a, "http", adaptertest.Config{Src: src, Auth: oauthOnly})
}

func (r *identityRig) clientCredentials(scopes string) string {
	return fmt.Sprintf(`    mode = "client_credentials"
    token_url = %q
    client_id = "mcpd"
    client_secret = "mcpd-secret-0123456789"
    audience = %q
    scopes = [%s]`, r.as.TokenURL(), apiAudience, scopes)
}

func (r *identityRig) exchange() string {
	return fmt.Sprintf(`    mode = "token_exchange"
    token_url = %q
    client_id = "mcpd"
    client_secret = "mcpd-secret-0123456789"
    client_auth = "post"
    audience = %q
    scopes = ["orders.read"]`, r.as.TokenURL(), apiAudience)
}

// caller is the context of a call by sub, verified with a token the AS
// minted for aud, as mcpd's auth middleware would hand it on.
func (r *identityRig) caller(t *testing.T, sub string, aud ...string) (context.Context, string) {
	tok := r.as.Mint(authtest.Claims{Subject: sub, Audience: aud, Scope: "mcp"})
	claims, err := r.as.Verify(tok, aud[0])
	if err != nil {
		t.Fatal(err)
	}
	p := (&principal.Principal{Name: sub, Method: "oauth", Claims: claims}).WithToken(tok, time.Now().Add(time.Hour))
	return principal.NewContext(context.Background(), p), tok
}

type recorder struct {
	mu sync.Mutex
	d  []adapter.Delegation
}

func (r *recorder) RecordDelegation(d adapter.Delegation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.d = append(r.d, d)
}

func idCall(ctx context.Context, h adapter.Handler) (*adapter.Output, error) {
	return adaptertest.Call(ctx, h, nil, nil)
}

func TestClientCredentials(t *testing.T) {
	r := newIdentityRig(t)
	h := r.compile(t, r.clientCredentials(`"orders.read", "orders.write"`))
	rec := &recorder{}
	ctx := context.WithValue(context.Background(), adapter.DelegationKey{}, rec)
	out, err := idCall(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	body := out.Vars["body"].(map[string]any)
	if body["sub"] != "mcpd" || body["scope"] != "orders.read orders.write" {
		t.Fatalf("the API saw %v", body)
	}
	if len(rec.d) != 1 || rec.d[0] != (adapter.Delegation{Mode: "client_credentials", Subject: "mcpd"}) {
		t.Fatalf("delegation %+v", rec.d)
	}
	if strings.Contains(out.Text, r.api.Seen()[0].Token) {
		t.Fatalf("the output shows the token")
	}
}

// Many concurrent calls fetch one token; when it nears its expiry, one
// more, whatever the number of callers: no thundering herd.
func TestClientCredentialsOneFetchPerKey(t *testing.T) {
	r := newIdentityRig(t)
	r.as.SetTTL(10 * time.Minute)
	r.as.SetDelay(100 * time.Millisecond) // so that the calls overlap
	h := r.compile(t, r.clientCredentials(`"orders.read"`))
	burst := func() {
		var wg sync.WaitGroup
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := idCall(context.Background(), h); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	burst()
	if n := r.as.Count("client_credentials", "mcpd"); n != 1 {
		t.Fatalf("64 concurrent calls fetched %d tokens, want 1", n)
	}
	burst()
	if n := r.as.Count("client_credentials", "mcpd"); n != 1 {
		t.Fatalf("a cached token was fetched again: %d fetches", n)
	}
	// 10 minutes, refreshed a minute early: at 9m30s it is due. The
	// calls go on with the current token, valid for 30s more, while one
	// refresh runs in the background.
	r.clock.Advance(9*time.Minute + 30*time.Second)
	burst()
	wait.Until(t, "Count(\"client_credentials\", \"mcpd\") >= 2", func() bool { return r.as.Count("client_credentials", "mcpd") >= 2 })
	burst()
	if n := r.as.Count("client_credentials", "mcpd"); n != 2 {
		t.Fatalf("in the refresh margin, 64 concurrent calls made %d fetches in all, want 2", n)
	}
	// Past the new token's expiry: the calls wait, for one fetch.
	r.clock.Advance(11 * time.Minute)
	burst()
	if n := r.as.Count("client_credentials", "mcpd"); n != 3 {
		t.Fatalf("after expiry, 64 concurrent calls made %d fetches in all, want 3", n)
	}
	if got := len(r.api.Seen()); got != 320 {
		t.Fatalf("the API accepted %d requests, want 320 (refused: %v)", got, r.api.Refused())
	}
}

// A background refresh that fails leaves the current token in use, and is
// not tried again at once.
func TestRefreshFailureKeepsToken(t *testing.T) {
	r := newIdentityRig(t)
	r.as.SetTTL(10 * time.Minute)
	h := r.compile(t, r.clientCredentials(`"orders.read"`))
	if _, err := idCall(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	r.as.Refuse(&authtest.Refusal{Status: 503, Code: "temporarily_unavailable"})
	r.clock.Advance(9*time.Minute + 30*time.Second)
	before := r.as.Requests()
	for i := 0; i < 20; i++ {
		if _, err := idCall(context.Background(), h); err != nil {
			t.Fatalf("in the margin, with the AS refusing: %v", err)
		}
	}
	wait.Until(t, "Requests() > before", func() bool { return r.as.Requests() > before })
	time.Sleep(100 * time.Millisecond) // a window for any extra refresh to arrive: it must not
	if n := r.as.Requests() - before; n != 1 {
		t.Fatalf("20 calls in the margin made %d token requests, want 1", n)
	}
	r.as.Refuse(nil)
	r.clock.Advance(identity.RefreshRetry)
	if _, err := idCall(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "Count(\"client_credentials\", \"mcpd\") == 2", func() bool { return r.as.Count("client_credentials", "mcpd") == 2 })
}

// Token exchange: each caller's token is exchanged once for a token for
// the API, which names the caller as subject and mcpd as actor.
func TestTokenExchangePerSubject(t *testing.T) {
	r := newIdentityRig(t)
	r.as.SetDelay(50 * time.Millisecond)
	h := r.compile(t, r.exchange())
	users := []string{"alice", "bob", "carol", "dave"}
	var wg sync.WaitGroup
	for _, u := range users {
		ctx, userTok := r.caller(t, u, "https://mcp.example.com/mcp")
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := &recorder{}
				out, err := idCall(context.WithValue(ctx, adapter.DelegationKey{}, rec), h)
				if err != nil {
					t.Error(err)
					return
				}
				body := out.Vars["body"].(map[string]any)
				if body["sub"] != u || body["act"] != "mcpd" {
					t.Errorf("%s's call reached the API as %v", u, body)
				}
				if len(rec.d) != 1 || rec.d[0] != (adapter.Delegation{Mode: "token_exchange", Subject: u, Actor: "mcpd"}) {
					t.Errorf("delegation %+v", rec.d)
				}
				if strings.Contains(out.Text, userTok) {
					t.Errorf("the output shows the caller's token")
				}
			}()
		}
	}
	wg.Wait()
	for _, u := range users {
		if n := r.as.Count("token_exchange", u); n != 1 {
			t.Errorf("%s: %d exchanges for 16 calls, want 1", u, n)
		}
	}
	// The API saw 64 requests, 16 per caller, each with that caller's
	// exchanged token (one token per caller) and mcpd as the actor.
	tokens := map[string]map[string]bool{}
	for _, s := range r.api.Seen() {
		if s.Actor != "mcpd" || s.Scope != "orders.read" {
			t.Errorf("the API saw sub=%s act=%s scope=%s", s.Subject, s.Actor, s.Scope)
		}
		if tokens[s.Subject] == nil {
			tokens[s.Subject] = map[string]bool{}
		}
		tokens[s.Subject][s.Token] = true
	}
	for _, u := range users {
		if len(tokens[u]) != 1 {
			t.Errorf("%s's calls carried %d distinct tokens, want 1", u, len(tokens[u]))
		}
	}
	if n := len(r.api.Seen()); n != 64 {
		t.Errorf("the API accepted %d requests, want 64", n)
	}
}

// A failed exchange is a tool error that says what the AS answered, with
// no token in it.
func TestTokenExchangeRefused(t *testing.T) {
	r := newIdentityRig(t)
	h := r.compile(t, r.exchange())
	ctx, userTok := r.caller(t, "alice", "https://mcp.example.com/mcp")
	r.as.Refuse(&authtest.Refusal{Code: "invalid_grant", Description: "subject token " + userTok + " was revoked"})
	_, err := idCall(ctx, h)
	if err == nil {
		t.Fatal("a refused exchange succeeded")
	}
	msg := err.Error()
	for _, want := range []string{`identity of http_backend "api"`, "token exchange", "answered 400 Bad Request: invalid_grant: subject token [redacted] was revoked"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, userTok) || strings.Contains(msg, "mcpd-secret-0123456789") {
		t.Fatalf("the error shows a secret: %s", msg)
	}
	if n := len(r.api.Seen()) + len(r.api.Refused()); n != 0 {
		t.Fatalf("the API received %d requests", n)
	}
	r.as.Refuse(nil)
	if _, err := idCall(ctx, h); err != nil {
		t.Fatalf("after the AS accepts again: %v", err)
	}
}

// The AS down: calls fail with a clean error, and work again once it is
// back.
func TestAuthorizationServerDown(t *testing.T) {
	r := newIdentityRig(t)
	h := r.compile(t, r.clientCredentials(`"orders.read"`))
	r.as.Stop()
	for i := 0; i < 3; i++ {
		_, err := idCall(context.Background(), h)
		if err == nil || !strings.Contains(err.Error(), "cannot reach the authorization server: connection") {
			t.Fatalf("with the AS down: %v", err)
		}
		if strings.Contains(err.Error(), "127.0.0.1:") && !strings.Contains(err.Error(), r.as.TokenURL()) {
			t.Fatalf("the error shows socket addresses: %v", err)
		}
	}
	r.as.Restart()
	if _, err := idCall(context.Background(), h); err != nil {
		t.Fatalf("after the AS is back: %v", err)
	}
}

// A key rotation at the AS makes the API refuse the cached token: the
// call drops it, gets a new one and succeeds.
func TestRefusedCachedTokenIsReplaced(t *testing.T) {
	r := newIdentityRig(t)
	h := r.compile(t, r.clientCredentials(`"orders.read"`))
	if _, err := idCall(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	r.as.RotateKey(true)
	if _, err := idCall(context.Background(), h); err != nil {
		t.Fatalf("after a key rotation: %v", err)
	}
	if n := r.as.Count("client_credentials", "mcpd"); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	if n := len(r.api.Refused()); n != 1 {
		t.Fatalf("the API refused %d requests, want 1", n)
	}
}

// Passthrough forwards the caller's token only when it was issued for the
// backend too.
func TestPassthroughAudience(t *testing.T) {
	r := newIdentityRig(t)
	h := r.compile(t, fmt.Sprintf("    mode = \"passthrough\"\n    audience = %q", apiAudience))

	ctx, tok := r.caller(t, "alice", "https://mcp.example.com/mcp", apiAudience)
	rec := &recorder{}
	out, err := idCall(context.WithValue(ctx, adapter.DelegationKey{}, rec), h)
	if err != nil {
		t.Fatal(err)
	}
	if body := out.Vars["body"].(map[string]any); body["sub"] != "alice" {
		t.Fatalf("the API saw %v", body)
	}
	if seen := r.api.Seen(); len(seen) != 1 || seen[0].Token != tok {
		t.Fatalf("the API did not receive the caller's own token")
	}
	if rec.d[0] != (adapter.Delegation{Mode: "passthrough", Subject: "alice"}) {
		t.Fatalf("delegation %+v", rec.d)
	}

	ctx, tok = r.caller(t, "mallory", "https://mcp.example.com/mcp")
	_, err = idCall(ctx, h)
	if err == nil || !strings.Contains(err.Error(), `refused to forward the caller's token: it was issued for aud "https://mcp.example.com/mcp", not for "https://api.example.com"`) {
		t.Fatalf("a token for another audience: %v", err)
	}
	if strings.Contains(err.Error(), tok) {
		t.Fatal("the error shows the token")
	}
	if n := len(r.api.Seen()) + len(r.api.Refused()); n != 1 {
		t.Fatalf("the API received %d requests, want 1: the wrong token was sent", n)
	}
}

// Modes that need the caller's token refuse calls without one.
func TestCallerTokenRequired(t *testing.T) {
	r := newIdentityRig(t)
	for _, id := range []string{r.exchange(), fmt.Sprintf("    mode = \"passthrough\"\n    audience = %q", apiAudience)} {
		h := r.compile(t, id)
		_, err := idCall(context.Background(), h)
		if err == nil || !strings.Contains(err.Error(), "this call has no verified caller") {
			t.Errorf("no caller: %v", err)
		}
		key := principal.NewContext(context.Background(), &principal.Principal{Name: "ci-bot", Method: "api_key"})
		_, err = idCall(key, h)
		if err == nil || !strings.Contains(err.Error(), "the caller authenticated with an API key") {
			t.Errorf("an API key caller: %v", err)
		}
	}
	if n := r.as.Requests(); n != 0 {
		t.Fatalf("the AS received %d requests", n)
	}
}

// A backend that echoes the token it received shows [redacted] instead,
// in the output and in errors.
func TestIdentityTokenRedactedFromAnswers(t *testing.T) {
	r := newIdentityRig(t)
	echo := newServer(t, func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", req.Header.Get("Authorization"))
		if req.URL.Path == "/fail" {
			w.WriteHeader(http.StatusBadGateway)
		}
		fmt.Fprintf(w, `{"you_sent": %q}`, req.Header.Get("Authorization"))
	})
	for _, path := range []string{"/ok", "/fail"} {
		src := fmt.Sprintf("http_backend \"api\" {\n  base_url = %q\n  identity {\n%s\n  }\n}\nhttp {\n  backend = \"api\"\n  path = %q\n}\n", echo.URL, r.clientCredentials(`"orders.read"`), path)
		h := adaptertest.MustCompile(t, r.a, "http", adaptertest.Config{Src: src})
		out, err := idCall(context.Background(), h)
		issued := r.as.Issued()
		tok := issued[len(issued)-1]
		text := fmt.Sprint(err)
		if out != nil {
			text += out.Text + fmt.Sprint(out.Vars) + fmt.Sprint(out.Structured)
		}
		if strings.Contains(text, tok) || !strings.Contains(text, "[redacted]") {
			t.Errorf("%s: the token is not redacted: %s", path, text)
		}
	}
}

// Token exchange sends only a live caller token: one past its exp, which
// the verifier still accepts within its leeway, is refused with a tool
// error before the AS is asked, as passthrough refuses to forward it; so
// is a caller whose exchanged token is still cached.
func TestTokenExchangeExpiredCaller(t *testing.T) {
	r := newIdentityRig(t)
	h := r.compile(t, r.exchange())
	for _, c := range []struct {
		name  string
		first bool // a call with a live token first, so that an exchanged token is cached
	}{{"nothing cached", false}, {"exchanged token cached", true}} {
		t.Run(c.name, func(t *testing.T) {
			sub := strings.ReplaceAll(c.name, " ", "-")
			if c.first {
				ctx, _ := r.caller(t, sub, "https://mcp.example.com/mcp")
				if _, err := idCall(ctx, h); err != nil {
					t.Fatal(err)
				}
			}
			before := r.as.Requests()
			// A real caller token, expired 10s ago: inside the 30s
			// leeway mcpd's verifier allows, so the call has a caller.
			exp := time.Now().Add(-10 * time.Second).Truncate(time.Second)
			tok := r.as.Mint(authtest.Claims{Subject: sub, Audience: []string{"https://mcp.example.com/mcp"}, Scope: "mcp", TTL: time.Until(exp)})
			claims := map[string]any{"sub": sub, "iss": r.as.Issuer(), "aud": "https://mcp.example.com/mcp", "exp": float64(exp.Unix())}
			p := (&principal.Principal{Name: sub, Method: "oauth", Claims: claims}).WithToken(tok, exp)
			seen := len(r.api.Seen())
			_, err := idCall(principal.NewContext(context.Background(), p), h)
			if err == nil || !strings.Contains(err.Error(), "the caller's token expired at") {
				t.Fatalf("an expired caller token: %v", err)
			}
			if strings.Contains(err.Error(), tok) {
				t.Fatal("the error shows the token")
			}
			if n := r.as.Requests() - before; n != 0 {
				t.Fatalf("the expired token was sent to the AS (%d requests)", n)
			}
			if n := len(r.api.Seen()) - seen; n != 0 {
				t.Fatalf("the API received %d calls for an expired caller", n)
			}
		})
	}
}

// A token endpoint that redirects is refused: the client's credentials
// (and, for an exchange, the caller's token) never reach the address the
// redirect names, and the call fails with an error that names it.
func TestTokenEndpointRedirectRefused(t *testing.T) {
	r := newIdentityRig(t)
	other := newServer(t, jsonHandler(200, `{"access_token":"planted","token_type":"Bearer"}`))
	front := newServer(t, func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, other.URL+"/token?state=s3cr3t", http.StatusTemporaryRedirect)
	})
	want := "token_url: redirected to " + other.URL + "/token (status 307); mcpd does not follow redirects: set token_url to the final address"
	for _, mode := range []string{"client_credentials", "token_exchange"} {
		t.Run(mode, func(t *testing.T) {
			id, ctx := r.clientCredentials(`"orders.read"`), context.Background()
			if mode == "token_exchange" {
				id = r.exchange()
				ctx, _ = r.caller(t, "alice", "mcpd")
			}
			h := r.compile(t, strings.Replace(id, r.as.TokenURL(), front.URL+"/token", 1))
			_, err := idCall(ctx, h)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("call: %v\nwant an error with %q", err, want)
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "mcpd-secret") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
	if n := other.hits(); n != 0 {
		t.Errorf("the address the redirect named got %d requests (the last with %v)", n, other.last(t).Header)
	}
	if n := len(r.api.Seen()); n != 0 {
		t.Errorf("the API was called %d times", n)
	}
}
