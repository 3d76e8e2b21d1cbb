package mcpadapter

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// fixedAuth is an upstreamAuth whose token is the caller's name: what a
// mode of the hook must provide, and nothing more.
type fixedAuth struct{ caller bool }

func (a fixedAuth) perCaller() bool { return a.caller }

func (a fixedAuth) tokenForCall(ctx context.Context) (*callToken, error) {
	if !a.caller {
		return &callToken{bearer: "service-token"}, nil
	}
	return &callToken{bearer: "token-of-" + ownerOf(ctx), owner: ownerOf(ctx)}, nil
}

// A session's transport carries the tokens of the identity it is bound to
// and no other: a call of another identity is refused before anything is
// sent; the session's own requests carry its latest token; the
// supervisor's session of a per-caller upstream carries none; another
// origin gets none.
func TestSessionAuthBinding(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer srv.Close()
	origin, _ := url.Parse(srv.URL + "/mcp")
	other, _ := url.Parse(srv.URL)
	other.Host = "localhost:" + other.Port()

	alice := &callToken{bearer: "alice-token", owner: "oauth:iss\x00alice"}
	bob := &callToken{bearer: "bob-token", owner: "oauth:iss\x00bob"}
	aliceSession := &sessionAuth{auth: fixedAuth{caller: true}, owner: alice.owner}
	aliceSession.latest.Store(alice)
	supervisor := &sessionAuth{owner: supervisorSession}
	service := &sessionAuth{auth: fixedAuth{}}

	send := func(sa *sessionAuth, target string, tok *callToken) error {
		ctx := context.Background()
		if tok != nil {
			ctx = context.WithValue(ctx, callTokenKey{}, tok)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target, nil)
		res, err := (&authTransport{session: sa, origin: origin, next: http.DefaultTransport}).RoundTrip(req)
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	for _, c := range []struct {
		name    string
		sa      *sessionAuth
		path    string
		tok     *callToken
		wantErr error
		want    string // what the server saw; "" for nothing
	}{
		{"alice's call on alice's session", aliceSession, "/mcp", alice, nil, "/mcp Bearer alice-token"},
		{"bob's call on alice's session", aliceSession, "/mcp", bob, errWrongSession, ""},
		{"the session's own request", aliceSession, "/mcp", nil, nil, "/mcp Bearer alice-token"},
		{"a call on the supervisor's session", supervisor, "/mcp", alice, errWrongSession, ""},
		{"the supervisor's own request", supervisor, "/mcp", nil, nil, "/mcp "},
		{"mcpd's own identity", service, "/mcp", nil, nil, "/mcp Bearer service-token"},
		{"another origin", aliceSession, other.String() + "/elsewhere", alice, nil, "/elsewhere "},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			target := c.path
			if target == "/mcp" {
				target = origin.String()
			}
			err := send(c.sa, target, c.tok)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case c.want == "" && len(seen) != 0:
				t.Fatalf("the server got %v", seen)
			case c.want != "" && (len(seen) != 1 || seen[0] != c.want):
				t.Fatalf("the server got %v, want %q", seen, c.want)
			}
		})
	}
	if got := aliceSession.latest.Load(); got != alice {
		t.Fatalf("alice's session's latest token is %q", got.bearer)
	}
}
