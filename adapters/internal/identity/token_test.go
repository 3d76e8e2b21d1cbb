package identity

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/lifetime"
	"github.com/mcpd/mcpd/engine/principal"
)

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

// hostileAS is an authorization server whose token responses carry the
// lifetime the test chooses, as raw JSON.
type hostileAS struct {
	*httptest.Server
	requests  atomic.Int64
	expiresIn string // raw JSON of expires_in; "" for none
	jwtExp    string // raw JSON of the access token's exp; "" for an opaque token
}

func newHostileAS(t *testing.T, expiresIn, jwtExp string) *hostileAS {
	h := &hostileAS{expiresIn: expiresIn, jwtExp: jwtExp}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	t.Cleanup(h.Close)
	return h
}

// A lifetime from the authorization server is bounded (lifetime.Min to
// lifetime.Max), on both grants, whether it comes as expires_in or as the
// JWT's exp: an AS that answers a huge, negative, zero or unreadable one
// gets one token request per lifetime, not one per call. (Before, 1e30 and
// 2^63 overflowed into the past: every call fetched a token.) The HTTP
// adapter's TestHostileTokenLifetime checks the same through its calls.
func TestTokenLifetimeBounded(t *testing.T) {
	const calls = 100
	for _, c := range []struct {
		name, expiresIn, jwtExp string
		life                    time.Duration
	}{
		{"expires_in 1e30", "1e30", "", lifetime.Max},
		{"expires_in -5", "-5", "", DefaultTokenLife},
		{"expires_in \"abc\"", `"abc"`, "", DefaultTokenLife},
		{"expires_in 0.001", "0.001", "", lifetime.Min},
		{"exp 2^63", "", "9223372036854775808", lifetime.Max},
		{"exp in the past", "", "1", lifetime.Min},
		{"exp 600s ahead", "", "NOW+600", 10 * time.Minute},
	} {
		for _, mode := range []string{ModeClientCredentials, ModeTokenExchange} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				clock := &fakeClock{t: time.Now().Truncate(time.Second)}
				jwtExp := strings.Replace(c.jwtExp, "NOW+600", fmt.Sprint(clock.t.Unix()+600), 1)
				as := newHostileAS(t, c.expiresIn, jwtExp)
				cache := NewCache("test")
				cache.SetClock(clock.Now)
				id := New(&Config{Owner: `mcp_server "up"`, Mode: mode, TokenURL: as.URL + "/token", ClientID: "mcpd",
					ClientSecret: "mcpd-secret-0123456789", ClientAuth: "basic", Audience: "https://api.example.com", Timeout: 10 * time.Second}, cache)
				ctx := context.Background()
				if mode == ModeTokenExchange {
					// A caller whose own token outlives every bound.
					p := (&principal.Principal{Name: "alice", Method: "oauth", Claims: map[string]any{"sub": "alice"}}).
						WithToken("caller-token", clock.t.Add(3*lifetime.Max))
					ctx = principal.NewContext(ctx, p)
				}
				call := func() {
					t.Helper()
					if _, err := id.Token(ctx); err != nil {
						t.Fatal(err)
					}
				}
				for range calls {
					call()
				}
				if n := as.requests.Load(); n != 1 {
					t.Fatalf("%d calls made %d token requests, want 1 (a lifetime of %s)", calls, n, c.life)
				}
				margin := min(c.life/5, MaxRefreshMargin)
				clock.Advance(c.life - margin - 10*time.Millisecond)
				call()
				if n := as.requests.Load(); n != 1 {
					t.Fatalf("at %s into a lifetime of %s: %d token requests, want 1", c.life-margin, c.life, n)
				}
				clock.Advance(margin + time.Second)
				for range calls {
					call()
				}
				if n := as.requests.Load(); n != 2 {
					t.Fatalf("after a lifetime of %s, %d more calls: %d token requests in all, want 2", c.life, calls, n)
				}
			})
		}
	}
}

// A grant from the cache can be dropped (the backend refused it): the
// next Token fetches another; a passthrough grant has nothing to drop.
func TestDrop(t *testing.T) {
	as := newHostileAS(t, "600", "")
	id := New(&Config{Owner: "x", Mode: ModeClientCredentials, TokenURL: as.URL, ClientID: "mcpd", ClientSecret: "mcpd-secret-0123456789",
		ClientAuth: "post", Timeout: 10 * time.Second}, NewCache("test"))
	g1, err := id.Token(context.Background())
	if err != nil || g1.Cached {
		t.Fatalf("first: %v cached=%v", err, g1 != nil && g1.Cached)
	}
	g2, _ := id.Token(context.Background())
	if !g2.Cached || g2.Token != g1.Token {
		t.Fatalf("second: not the cached token")
	}
	id.Drop(g2)
	g3, _ := id.Token(context.Background())
	if g3.Cached || g3.Token == g1.Token || as.requests.Load() != 2 {
		t.Fatalf("after Drop: cached=%v, %d requests", g3.Cached, as.requests.Load())
	}
	id.Drop(&Grant{Token: "x"}) // passthrough: no key, nothing happens
}
