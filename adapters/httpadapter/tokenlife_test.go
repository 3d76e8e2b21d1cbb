package httpadapter

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/lifetime"
	"github.com/mcpd/mcpd/engine/principal"
)

// hostileAS is an authorization server whose token responses carry the
// lifetime the test chooses, as raw JSON, and a backend that accepts any
// bearer token.
type hostileAS struct {
	as, api   *httptest.Server
	requests  atomic.Int64
	expiresIn string // raw JSON of expires_in; "" for none
	jwtExp    string // raw JSON of the access token's exp; "" for an opaque token
}

func newHostileAS(t *testing.T, expiresIn, jwtExp string) *hostileAS {
	h := &hostileAS{expiresIn: expiresIn, jwtExp: jwtExp}
	h.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := h.requests.Add(1)
		tok := fmt.Sprintf("opaque-token-%d", n)
		if h.jwtExp != "" {
			enc := base64.RawURLEncoding.EncodeToString
			tok = enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(fmt.Sprintf(`{"sub":"mcpd","n":%d,"exp":%s}`, n, h.jwtExp))) + ".sig"
		}
		body := fmt.Sprintf(`{"access_token":%q,"token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token"`, tok)
		if h.expiresIn != "" {
			body += `,"expires_in":` + h.expiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body+"}")
	}))
	t.Cleanup(h.as.Close)
	h.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(h.api.Close)
	return h
}

// A lifetime from the authorization server is bounded (lifetime.Min to
// lifetime.Max), on both grants, whether it comes as expires_in or as the
// JWT's exp: an AS that answers a huge, negative, zero or unreadable one
// gets one token request per lifetime, not one per call. (Before, 1e30 and
// 2^63 overflowed into the past: every call fetched a token.)
func TestHostileTokenLifetime(t *testing.T) {
	const calls = 100
	for _, c := range []struct {
		name, expiresIn, jwtExp string
		life                    time.Duration
	}{
		{"expires_in 1e30", "1e30", "", lifetime.Max},
		{"expires_in 2^63", "9223372036854775808", "", lifetime.Max},
		{"expires_in \"1e30\"", `"1e30"`, "", lifetime.Max},
		{"expires_in -5", "-5", "", identity.DefaultTokenLife},
		{"expires_in 0", "0", "", identity.DefaultTokenLife},
		{"expires_in \"abc\"", `"abc"`, "", identity.DefaultTokenLife},
		{"expires_in 0.001", "0.001", "", lifetime.Min},
		{"exp 1e30", "", "1e30", lifetime.Max},
		{"exp 2^63", "", "9223372036854775808", lifetime.Max},
		{"exp in the past", "", "1", lifetime.Min},
		{"exp 600s ahead", "", "NOW+600", 10 * time.Minute},
		{"expires_in 1e30 beside an exp", "1e30", "NOW+600", lifetime.Max},
	} {
		for _, mode := range []string{"client_credentials", "token_exchange"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				clock := &fakeClock{t: time.Now().Truncate(time.Second)}
				jwtExp := strings.Replace(c.jwtExp, "NOW+600", fmt.Sprint(clock.t.Unix()+600), 1)
				h := newHostileAS(t, c.expiresIn, jwtExp)
				a := New()
				a.tokens.SetClock(clock.Now)
				src := fmt.Sprintf(`http_backend "api" {
  base_url = %q
  identity {
    mode          = %q
    token_url     = %q
    client_id     = "mcpd"
    client_secret = "mcpd-secret-0123456789"
    audience      = "https://api.example.com"
  }
}
http {
  backend = "api"
  path    = "/orders"
}
`, h.api.URL, mode, h.as.URL+"/token")
				hd := adaptertest.MustCompile(t, a, "http", adaptertest.Config{Src: src, Auth: oauthOnly})
				ctx := context.Background()
				if mode == "token_exchange" {
					// A caller whose own token outlives every bound.
					p := (&principal.Principal{Name: "alice", Method: "oauth", Claims: map[string]any{"sub": "alice"}}).
						WithToken("caller-token", clock.t.Add(3*lifetime.Max))
					ctx = principal.NewContext(ctx, p)
				}
				call := func() {
					t.Helper()
					if _, err := adaptertest.Call(ctx, hd, nil, nil); err != nil {
						t.Fatal(err)
					}
				}
				for range calls {
					call()
				}
				n := h.requests.Load()
				t.Logf("%d calls: %d token requests", calls, n)
				if n != 1 {
					t.Fatalf("%d calls made %d token requests, want 1 (a lifetime of %s)", calls, n, c.life)
				}
				// Just before the refresh is due: still the same token.
				margin := min(c.life/5, identity.MaxRefreshMargin)
				clock.Advance(c.life - margin - 10*time.Millisecond)
				call()
				if n := h.requests.Load(); n != 1 {
					t.Fatalf("at %s into a lifetime of %s: %d token requests, want 1", c.life-margin, c.life, n)
				}
				// Past its expiry: one more, for every call after it.
				clock.Advance(margin + time.Second)
				for range calls {
					call()
				}
				if n := h.requests.Load(); n != 2 {
					t.Fatalf("after a lifetime of %s, %d more calls: %d token requests in all, want 2", c.life, calls, n)
				}
			})
		}
	}
}

// A Retry-After from the backend is bounded like any lifetime from a peer:
// a number of seconds too large for a time.Duration waits max_backoff (it
// overflowed, and was ignored).
func TestRetryAfterBounded(t *testing.T) {
	p := retryPolicy{backoff: 100 * time.Millisecond, maxBackoff: 30 * time.Second}
	for _, v := range []string{"99999999999", "9223372036854775808", "1" + strings.Repeat("0", 40), "Fri, 31 Dec 9999 23:59:59 GMT"} {
		res := &response{status: http.StatusServiceUnavailable, header: http.Header{"Retry-After": {v}}}
		if d := p.delay(1, res); d != p.maxBackoff {
			t.Errorf("Retry-After: %s: waits %s, want %s", v, d, p.maxBackoff)
		}
	}
	res := &response{status: http.StatusServiceUnavailable, header: http.Header{"Retry-After": {"2"}}}
	if d := p.delay(1, res); d != 2*time.Second {
		t.Errorf("Retry-After: 2: waits %s", d)
	}
}
