package auth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// redirector answers every request with a 307 to target.
func redirector(t *testing.T, target string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// A jwks_url that redirects is refused: keys served at another address
// would let whoever answers there sign tokens mcpd accepts. Real parts:
// the configured address redirects to a second issuer with keys of its
// own, which signs a token with the configured issuer's name.
func TestJWKSRedirectRefused(t *testing.T) {
	evil := newIssuer(t)
	front := redirector(t, evil.url()+"/keys?session=s3cr3t")
	src := fmt.Sprintf(`
auth {
  resource = %q
  oauth {
    issuer     = %q
    jwks_url   = %q
    algorithms = ["RS256", "ES256"]
  }
}
`, resource, front, front)
	c := mustCompile(t, src, nil)
	tok := evil.mint("rsa-1", func(cl *jwt.Claims, _ map[string]any) { cl.Issuer = front })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.verify(ctx, tok)
	want := fmt.Sprintf("jwks_url: redirected to %s/keys (status 307); mcpd does not follow redirects: set jwks_url to the final address", evil.url())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("verify: %v\nwant an error with %q", err, want)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error shows the Location's query: %v", err)
	}
	s := newServer(t, c)
	if code, _ := post(t, s.url, "Authorization", "Bearer "+tok); code != http.StatusServiceUnavailable {
		t.Errorf("a token signed by the redirect's keys: %d, want 503", code)
	}
	if n := evil.fetches.Load(); n != 0 {
		t.Errorf("the address the redirect named was asked for keys %d times", n)
	}
}

// An introspection_url that redirects is refused: the request carries the
// client's credentials and the caller's token, and an answer from another
// address must not decide who the caller is.
func TestIntrospectionRedirectRefused(t *testing.T) {
	var mu sync.Mutex
	var seen []string // what the other address was sent
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+string(body))
		mu.Unlock()
		fmt.Fprintf(w, `{"active":true,"sub":"mallory","aud":%q,"exp":%d}`, resource, time.Now().Add(time.Hour).Unix())
	}))
	defer other.Close()
	front := redirector(t, other.URL+"/introspect")
	t.Setenv("MCPD_TEST_INTROSPECTION_SECRET", "s3cret")
	c := mustCompile(t, fmt.Sprintf(`
auth {
  resource = %q
  oauth {
    issuer            = %q
    introspection_url = %q
    client_id         = "mcpd"
    client_secret     = env("MCPD_TEST_INTROSPECTION_SECRET")
  }
}
`, resource, front, front), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, _, err := c.verify(ctx, "callers-opaque-token")
	want := fmt.Sprintf("introspection_url: redirected to %s/introspect (status 307); mcpd does not follow redirects: set introspection_url to the final address", other.URL)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("verify: %v, %v\nwant an error with %q", p, err, want)
	}
	s := newServer(t, c)
	if code, _ := post(t, s.url, "Authorization", "Bearer callers-opaque-token"); code != http.StatusServiceUnavailable {
		t.Errorf("introspection redirected: %d, want 503", code)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("the address the redirect named was sent %q", seen)
	}
}
