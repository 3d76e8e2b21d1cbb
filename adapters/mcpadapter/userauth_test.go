package mcpadapter_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	connectflow "github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// The per-user connect flow through the gateway, with real parts: the
// test authorization server (authtest) in front of a go-sdk upstream that
// accepts only tokens it issued for the upstream's URL and answers with
// the token's subject; mcpd (engine/serve) with its own callers' bearer
// tokens; go-sdk clients of both eras; a plain HTTP client as the user's
// browser.

const grantKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// userUpstream is a go-sdk server behind the AS, in either era.
type userUpstream struct {
	url  string
	prot *authtest.Protected

	mu    sync.Mutex
	calls map[string]int // subject -> whoami calls
}

func newUserUpstream(t *testing.T, as *authtest.Server, stateless bool) *userUpstream {
	ts := httptest.NewServer(nil)
	t.Cleanup(ts.Close)
	u := &userUpstream{url: ts.URL + "/mcp", calls: map[string]int{}}
	u.prot = as.Protect(u.url)
	srv := mcp.NewServer(&mcp.Implementation{Name: "per-user", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "who calls"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ti := req.Extra.TokenInfo
		if ti == nil {
			return nil, nil, fmt.Errorf("no token")
		}
		u.mu.Lock()
		u.calls[ti.UserID]++
		u.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sub=" + ti.UserID + " aud=" + fmt.Sprint(ti.Extra["aud"])}}}, nil, nil
	})
	// leak answers with the token it was called with, as a careless (or
	// hostile) upstream would.
	mcp.AddTool(srv, &mcp.Tool{Name: "leak", Description: "echoes the token"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		raw, _ := req.Extra.TokenInfo.Extra["raw"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "your token is " + raw}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		claims, err := as.Verify(tok, u.url)
		if err != nil {
			return nil, auth.ErrInvalidToken
		}
		sub, _ := claims["sub"].(string)
		return &auth.TokenInfo{UserID: sub, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"aud": claims["aud"], "raw": tok}}, nil
	}
	ts.Config.Handler = u.prot.Handler(auth.RequireBearerToken(verify, nil)(h))
	return u
}

func (u *userUpstream) callsOf(sub string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[sub]
}

// gateway is mcpd serving a user_authorization upstream, with its callback.
type gateway struct {
	url string // the /mcp endpoint
	svc *connectflow.Service
}

func userGatewayConfig(upstreamURL string) string {
	return fmt.Sprintf(`
mcp_server "up" {
  url = %q
  identity {
    mode      = "user_authorization"
    grant_key = %q
  }
}

tool "whoami" {
  description = "Who the upstream sees."
  mcp { server = "up" }
}

tool "leak" {
  description = "An upstream tool that echoes its token."
  mcp { server = "up" }
}
`, upstreamURL, grantKeyHex)
}

// verifyUsers accepts mcpd's own callers: "alice-key" is alice, and so on.
func verifyUsers(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	name, ok := strings.CutSuffix(token, "-key")
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	ti := (&principal.Principal{Name: name, Method: "api_key"}).TokenInfo()
	ti.Expiration = time.Now().Add(time.Hour)
	return ti, nil
}

func serveUserGateway(t *testing.T, config string, shared grants.Backend) *gateway {
	t.Helper()
	return serveUserGatewayLog(t, config, shared, quiet)
}

func serveUserGatewayLog(t *testing.T, config string, shared grants.Backend, log *slog.Logger) *gateway {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := connectflow.Options{Logger: log}
	if shared != nil {
		opts.Shared = func() grants.Backend { return shared }
	}
	svc := connectflow.NewService(opts)
	reg := adapter.NewRegistry()
	reg.Register("mcp", mcpadapter.New(nil).WithConnect(svc))
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	srv := serve.New(cur, serve.Options{Logger: quiet})
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verifyUsers, nil)(srv.HTTPHandler(serve.HTTPOptions{})))
	mux.Handle(connectflow.CallbackPath, svc.CallbackHandler())
	ts := httptest.NewServer(mux)
	svc.SetListener(ts.URL)
	t.Cleanup(func() {
		ts.Close()
		cur.Load().Close()
	})
	return &gateway{url: ts.URL + "/mcp", svc: svc}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var linkPattern = regexp.MustCompile(`http://\S+/authorize\?\S+`)

// authorizeFromError completes the authorization whose link the tool
// error gives, as user, with a plain HTTP client.
func authorizeFromError(t *testing.T, as *authtest.Server, res *mcp.CallToolResult, user string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error with the link, got %q", textOf(res))
	}
	link := linkPattern.FindString(textOf(res))
	if link == "" {
		t.Fatalf("the tool error has no link: %q", textOf(res))
	}
	browse(t, as.Login(t, link, user))
}

// browse GETs the callback as the user's browser.
func browse(t *testing.T, callback string) {
	t.Helper()
	res, err := http.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("callback: status %d", res.StatusCode)
	}
}

func callWhoami(t *testing.T, cs *mcp.ClientSession) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return res
}

// Each user authorizes once, through the link in a tool error; then
// their calls, 16 at a time and interleaved, each carry their own token,
// never the other's, in both eras of client and upstream.
func TestUserAuthorizationEachCallCarriesItsUsersToken(t *testing.T) {
	for _, up := range []struct {
		name      string
		stateless bool
	}{{"legacy upstream", false}, {"modern upstream", true}} {
		for _, version := range []string{legacy, modern} {
			t.Run(up.name+"/"+version+" client", func(t *testing.T) {
				as := authtest.Start(t)
				as.AddUser("alice", "a-pw")
				as.AddUser("bob", "b-pw")
				u := newUserUpstream(t, as, up.stateless)
				gw := serveUserGateway(t, userGatewayConfig(u.url), nil)
				users := map[string]*mcp.ClientSession{}
				for _, user := range []string{"alice", "bob"} {
					cs := connectAs(t, gw.url, version, user+"-key", nil)
					users[user] = cs
					authorizeFromError(t, as, callWhoami(t, cs), user)
					if got := textOf(callWhoami(t, cs)); got != "sub="+user+" aud="+u.url {
						t.Fatalf("%s's retried call: %q", user, got)
					}
				}
				var wg sync.WaitGroup
				errs := make(chan string, 64)
				for i := 0; i < 16; i++ {
					user := []string{"alice", "bob"}[i%2]
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := 0; j < 4; j++ {
							res, err := users[user].CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
							if err != nil {
								errs <- err.Error()
								return
							}
							if got := textOf(res); !strings.HasPrefix(got, "sub="+user+" ") {
								errs <- fmt.Sprintf("%s's call reached the upstream as %q", user, got)
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for e := range errs {
					t.Error(e)
				}
				for _, user := range []string{"alice", "bob"} {
					if n := u.callsOf(user); n != 33 {
						t.Errorf("the upstream saw %d calls of %s, want 33", n, user)
					}
					// One code exchange per user, no token request per call.
					if n := as.Count("authorization_code", user) + as.Count("refresh_token", user); n != 1 {
						t.Errorf("%d token requests for %s over 33 calls, want 1", n, user)
					}
				}
				if as.Registrations() != 1 {
					t.Errorf("mcpd registered %d clients, want 1", as.Registrations())
				}
			})
		}
	}
}

// A client that can show a URL (URL-mode elicitation) is asked to open
// the link within the call, which then goes on once the user completed
// it: no error, no retry.
func TestUserAuthorizationByURLElicitation(t *testing.T) {
	as := authtest.Start(t)
	as.AddUser("alice", "a-pw")
	u := newUserUpstream(t, as, false)
	gw := serveUserGateway(t, userGatewayConfig(u.url), nil)
	var asked []*mcp.ElicitParams
	var mu sync.Mutex
	opts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params)
			mu.Unlock()
			if req.Params.Mode != "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			// The user opens the link in a browser, after the client said
			// they agreed to (the call fails if the callback fails).
			callback := as.Login(t, req.Params.URL, "alice")
			go func() {
				if res, err := http.Get(callback); err == nil {
					res.Body.Close()
				}
			}()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}
	cs := connectAs(t, gw.url, legacy, "alice-key", opts)
	res := callWhoami(t, cs)
	if res.IsError || !strings.HasPrefix(textOf(res), "sub=alice ") {
		t.Fatalf("the call after the elicitation: %q", textOf(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0].Mode != "url" || !strings.HasPrefix(asked[0].URL, as.Issuer()+"/authorize?") {
		t.Fatalf("asked: %+v", asked)
	}
}

// The user revokes with the disconnect tool; the AS's refresh token is
// gone and the next call asks again. Refresh before expiry keeps calls
// going without the user.
func TestUserAuthorizationRefreshAndDisconnect(t *testing.T) {
	as := authtest.Start(t)
	as.AddUser("alice", "a-pw")
	as.SetTTL(3 * time.Second)
	u := newUserUpstream(t, as, true)
	var logs syncBuffer
	gw := serveUserGatewayLog(t, userGatewayConfig(u.url), nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	cs := connectAs(t, gw.url, modern, "alice-key", nil)
	authorizeFromError(t, as, callWhoami(t, cs), "alice")
	leak, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "leak", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(textOf(leak), "[redacted]") {
		t.Fatalf("an upstream that echoes the token: %v %q", err, textOf(leak))
	}
	defer func() {
		for _, tok := range as.Issued() {
			if strings.Contains(logs.String(), tok) {
				t.Error("a token reached the log")
			}
		}
		if !strings.Contains(logs.String(), "upstream authorized") {
			t.Errorf("the log does not record the authorization: %s", logs.String())
		}
	}()
	// The upstream refuses a token (here: the AS dropped the key that
	// signed it): the grant is refreshed and the request sent again, and
	// the call does not fail.
	as.RotateKey(true)
	if res := callWhoami(t, cs); res.IsError || as.Count("refresh_token", "alice") != 1 {
		t.Fatalf("a call whose token the upstream refused: %q (refreshes: %d)", textOf(res), as.Count("refresh_token", "alice"))
	}
	wait.Until(t, "the token is refreshed while calls go on", func() bool {
		if res := callWhoami(t, cs); res.IsError {
			t.Fatalf("a call failed around the refresh: %q", textOf(res))
		}
		return as.Count("refresh_token", "alice") > 1
	})
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "disconnect_up", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(textOf(res), "Disconnected") {
		t.Fatalf("disconnect: %v %q", err, textOf(res))
	}
	if as.RefreshTokens() != 0 {
		t.Errorf("%d refresh tokens live at the AS after the disconnect", as.RefreshTokens())
	}
	if res := callWhoami(t, cs); !res.IsError || linkPattern.FindString(textOf(res)) == "" {
		t.Fatalf("after the disconnect: %q", textOf(res))
	}
}

// Two mcpd replicas share grants through Redis with the same key: a user
// authorizes through one and calls through the other.
func TestUserAuthorizationReplicasShareGrants(t *testing.T) {
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	backend := func() grants.Backend {
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(opts)
		t.Cleanup(func() { c.Close() })
		return &grants.Redis{Client: c, Prefix: prefix}
	}
	as := authtest.Start(t)
	as.AddUser("alice", "a-pw")
	u := newUserUpstream(t, as, true)
	a := serveUserGateway(t, userGatewayConfig(u.url), backend())
	b := serveUserGateway(t, userGatewayConfig(u.url), backend())
	if err := a.svc.Check(); err != nil {
		t.Fatal(err)
	}
	authorizeFromError(t, as, callWhoami(t, connectAs(t, a.url, modern, "alice-key", nil)), "alice")
	if got := textOf(callWhoami(t, connectAs(t, b.url, legacy, "alice-key", nil))); !strings.HasPrefix(got, "sub=alice ") {
		t.Fatalf("through the other replica: %q", got)
	}
	if res := callWhoami(t, connectAs(t, b.url, modern, "bob-key", nil)); !res.IsError {
		t.Fatalf("bob has no grant: %q", textOf(res))
	}
}

func TestUserAuthorizationConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"stdio", `command = ["x"]
  identity {
    mode = "user_authorization"
  }`, "identity without url"},
		{"expose", `url = "http://127.0.0.1:1/mcp"
  identity {
    mode = "user_authorization"
  }
  expose {}`, "identity with expose"},
		{"secret", `url = "http://127.0.0.1:1/mcp"
  identity {
    mode = "user_authorization"
    client_secret = "s3cret-value"
  }`, "client_secret without client_id"},
		{"key", `url = "http://127.0.0.1:1/mcp"
  identity {
    mode = "user_authorization"
    grant_key = "short"
  }`, "Invalid grant_key"},
		{"authorization header", `url = "http://127.0.0.1:1/mcp"
  headers = { Authorization = "Bearer x" }
  identity {
    mode = "user_authorization"
  }`, "Authorization header"},
		{"callback", `url = "http://127.0.0.1:1/mcp"
  identity {
    mode = "user_authorization"
    callback_url = "https://mcpd.example.com/elsewhere"
  }`, "Invalid callback_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := "mcp_server \"up\" {\n  " + tc.body + "\n}\n"
			if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			reg := adapter.NewRegistry()
			reg.Register("mcp", mcpadapter.New(nil))
			l := loader.Load([]string{dir}, reg, nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
			}
			if !strings.Contains(fmt.Sprint(l.Diagnostics), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, l.Diagnostics)
			}
		})
	}
}
