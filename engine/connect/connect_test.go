package connect_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// rig is an authorization server, an upstream it protects, and a
// connect service with its callback on a listener of its own.
type rig struct {
	as       *authtest.Server
	upstream *authtest.Protected
	svc      *connect.Service
	cb       *httptest.Server
}

func newRig(t *testing.T, shared grants.Backend) *rig {
	as := authtest.Start(t)
	as.AddUser("alice", "alice-pw")
	as.AddUser("bob", "bob-pw")
	up := httptest.NewServer(nil)
	t.Cleanup(up.Close)
	prot := as.Protect(up.URL + "/mcp")
	up.Config.Handler = prot.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+authtest.Subject(r.Context()))
	}))
	return &rig{as: as, upstream: prot, svc: newService(t, shared)}
}

func newService(t *testing.T, shared grants.Backend) *connect.Service {
	opts := connect.Options{}
	if shared != nil {
		opts.Shared = func() grants.Backend { return shared }
	}
	svc := connect.NewService(opts)
	mux := http.NewServeMux()
	mux.Handle(connect.CallbackPath, svc.CallbackHandler())
	cb := httptest.NewServer(mux)
	t.Cleanup(cb.Close)
	svc.SetListener(cb.URL)
	return svc
}

func (r *rig) config() connect.Config {
	return connect.Config{Upstream: "github", Resource: r.upstream.Resource, Key: key(1)}
}

func key(b byte) []byte {
	k := make([]byte, grants.KeySize)
	for i := range k {
		k[i] = b
	}
	return k
}

// connectUser runs the flow for user as a browser would: mcpd's link,
// the AS's login, the redirect to mcpd's callback.
func connectUser(t *testing.T, as *authtest.Server, f *connect.Flow, principal, user string) string {
	t.Helper()
	link, err := f.Authorize(context.Background(), principal)
	if err != nil {
		t.Fatal(err)
	}
	callback := as.Login(t, link, user)
	res, err := http.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("callback: %d %s", res.StatusCode, body)
	}
	return string(body)
}

func mustToken(t *testing.T, f *connect.Flow, principal string) string {
	t.Helper()
	tok, err := f.Token(context.Background(), principal)
	if err != nil {
		t.Fatalf("token of %s: %v", principal, err)
	}
	return tok
}

func TestConnectEachUserGetsTheirOwnToken(t *testing.T) {
	r := newRig(t, nil)
	f, err := r.svc.Register(r.config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Token(ctx, "oauth:alice"); !connect.IsNeedAuthorization(err) {
		t.Fatalf("no grant yet: want NeedAuthorization, got %v", err)
	}
	page := connectUser(t, r.as, f, "oauth:alice", "alice")
	connectUser(t, r.as, f, "oauth:bob", "bob")
	for principal, user := range map[string]string{"oauth:alice": "alice", "oauth:bob": "bob"} {
		tok := mustToken(t, f, principal)
		claims, err := r.as.Verify(tok, r.upstream.Resource)
		if err != nil || claims["sub"] != user {
			t.Fatalf("%s's token: sub %v, err %v (want %s, audience the upstream)", principal, claims["sub"], err, user)
		}
	}
	if r.as.Registrations() != 1 {
		t.Errorf("mcpd registered %d times; one registration serves every user", r.as.Registrations())
	}
	for _, tok := range r.as.Issued() {
		if strings.Contains(page, tok) {
			t.Fatal("the callback page shows a token")
		}
	}
	if !strings.Contains(page, "oauth:alice") {
		t.Errorf("the page does not say whose grant it stored: %s", page)
	}
}

func TestConnectCallbackIsSingleUseAndBound(t *testing.T) {
	r := newRig(t, nil)
	f, _ := r.svc.Register(r.config())
	link, err := f.Authorize(context.Background(), "oauth:alice")
	if err != nil {
		t.Fatal(err)
	}
	callback := r.as.Login(t, link, "alice")
	for i, want := range []int{200, 400} {
		res, err := http.Get(callback)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("callback #%d: status %d, want %d", i+1, res.StatusCode, want)
		}
	}
	// A forged state, and the AS's error, are pages, not grants.
	for _, q := range []string{"?state=x.Z2l0aHVi&code=abc", "?error=access_denied&error_description=no%07", "?state=&code="} {
		res, err := http.Get(strings.Split(callback, "?")[0] + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || strings.Contains(string(body), "\a") {
			t.Fatalf("%s: %d %q", q, res.StatusCode, body)
		}
	}
	if _, err := f.Token(context.Background(), "oauth:mallory"); !connect.IsNeedAuthorization(err) {
		t.Fatalf("another principal must not have alice's grant: %v", err)
	}
}

func TestConnectRefreshesOncePerPrincipal(t *testing.T) {
	r := newRig(t, nil)
	r.as.SetTTL(4 * time.Second) // refreshed in its last second
	f, _ := r.svc.Register(r.config())
	connectUser(t, r.as, f, "oauth:alice", "alice")
	first := mustToken(t, f, "oauth:alice")
	r.as.SetDelay(200 * time.Millisecond) // the 16 calls overlap the refresh
	var got []string
	wait.Until(t, "the token is refreshed", func() bool {
		var mu sync.Mutex
		got = nil
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tok := mustToken(t, f, "oauth:alice")
				mu.Lock()
				got = append(got, tok)
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, tok := range got {
			if tok != first {
				return true
			}
		}
		return false
	})
	if n := r.as.Count("refresh_token", "alice"); n != 1 {
		t.Fatalf("%d refresh requests; concurrent calls share one", n)
	}
	if _, err := r.as.Verify(mustToken(t, f, "oauth:alice"), r.upstream.Resource); err != nil {
		t.Fatalf("the refreshed token: %v", err)
	}
}

func TestConnectRevoke(t *testing.T) {
	r := newRig(t, nil)
	f, _ := r.svc.Register(r.config())
	connectUser(t, r.as, f, "oauth:alice", "alice")
	connectUser(t, r.as, f, "oauth:bob", "bob")
	tok := mustToken(t, f, "oauth:alice")
	list, err := r.svc.List(context.Background(), "")
	if err != nil || len(list) != 2 {
		t.Fatalf("list: %v %v", list, err)
	}
	if ok, err := f.Revoke(context.Background(), "oauth:alice"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if _, err := f.Token(context.Background(), "oauth:alice"); !connect.IsNeedAuthorization(err) {
		t.Fatalf("after revocation: %v", err)
	}
	if _, err := r.as.Verify(tok, r.upstream.Resource); err == nil {
		t.Error("the AS was not asked to revoke the access token")
	}
	if r.as.RefreshTokens() != 1 {
		t.Errorf("%d refresh tokens live at the AS; alice's was not revoked", r.as.RefreshTokens())
	}
	// An admin's revocation of bob's.
	if ok, err := r.svc.Revoke(context.Background(), "github", "oauth:bob"); !ok || err != nil {
		t.Fatalf("admin revoke: %v %v", ok, err)
	}
	if ok, _ := r.svc.Revoke(context.Background(), "github", "oauth:bob"); ok {
		t.Fatal("a second revocation found a grant")
	}
}

func TestConnectRevokedAtTheServer(t *testing.T) {
	r := newRig(t, nil)
	r.as.SetTTL(4 * time.Second)
	f, _ := r.svc.Register(r.config())
	connectUser(t, r.as, f, "oauth:alice", "alice")
	r.as.RevokeUser("alice")
	var err error
	wait.Until(t, "the refresh is refused", func() bool {
		_, err = f.Token(context.Background(), "oauth:alice")
		return err != nil
	})
	if !connect.IsNeedAuthorization(err) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("want NeedAuthorization naming invalid_grant, got %v", err)
	}
}

func TestConnectAuthorizationServerDown(t *testing.T) {
	r := newRig(t, nil)
	r.as.SetTTL(3 * time.Second)
	f, _ := r.svc.Register(r.config())
	connectUser(t, r.as, f, "oauth:alice", "alice")
	tok := mustToken(t, f, "oauth:alice")
	r.as.Stop()
	// Within its life the token is used, even once a refresh is due.
	var err error
	wait.Until(t, "the token expires with the AS down", func() bool {
		var got string
		got, err = f.Token(context.Background(), "oauth:alice")
		if err == nil && got != tok {
			t.Fatal("a new token with the AS down")
		}
		return err != nil
	})
	if connect.IsNeedAuthorization(err) || !strings.Contains(err.Error(), "token endpoint") {
		t.Fatalf("the AS down is not the user's to fix: %v", err)
	}
	r.as.Restart()
	wait.Until(t, "the refresh succeeds once the AS is back", func() bool {
		_, err := f.Token(context.Background(), "oauth:alice")
		return err == nil
	})
}

func TestConnectPreregisteredClient(t *testing.T) {
	r := newRig(t, nil)
	r.as.NoRegistration()
	cfg := r.config()
	f, _ := r.svc.Register(cfg)
	if _, err := f.Authorize(context.Background(), "oauth:alice"); err == nil || !strings.Contains(err.Error(), "client_id") {
		t.Fatalf("without registration and client_id: %v", err)
	}
	cfg.ClientID, cfg.ClientSecret = "mcpd", "mcpd-secret-0123456789"
	cfg.Upstream = "github2"
	f2, _ := r.svc.Register(cfg)
	r.as.AllowRedirect("mcpd", strings.TrimSuffix(callbackOf(t, f2), "?"))
	connectUser(t, r.as, f2, "oauth:alice", "alice")
	mustToken(t, f2, "oauth:alice")
	if r.as.Registrations() != 0 {
		t.Fatal("registered with a configured client")
	}
}

// callbackOf is the redirect_uri the flow sends.
func callbackOf(t *testing.T, f *connect.Flow) string {
	link, err := f.Authorize(context.Background(), "probe")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(link, "redirect_uri=")
	rest := link[i+len("redirect_uri="):]
	rest, _, _ = strings.Cut(rest, "&")
	u, _ := urlUnescape(rest)
	return u
}

func TestConnectRefusesWithoutPKCE(t *testing.T) {
	r := newRig(t, nil)
	r.as.NoPKCE()
	f, _ := r.svc.Register(r.config())
	if _, err := f.Authorize(context.Background(), "oauth:alice"); err == nil || !strings.Contains(err.Error(), "PKCE") {
		t.Fatalf("want a refusal naming PKCE, got %v", err)
	}
}

func TestConnectNeedsAKeyForRedis(t *testing.T) {
	url := sharedstatetest.URL(t)
	b := redisBackend(t, url, sharedstatetest.Prefix(t, url))
	svc := newService(t, b)
	r := newRig(t, nil)
	cfg := r.config()
	cfg.Key = nil
	if _, err := svc.Register(cfg); err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(); err == nil || !strings.Contains(err.Error(), "grant_key") {
		t.Fatalf("check: %v", err)
	}
}

func redisBackend(t *testing.T, url, prefix string) grants.Backend {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return &grants.Redis{Client: c, Prefix: prefix}
}

// Three replicas share grants through Redis: a user authorizes through
// one, whose callback lands on another, and the third calls with the
// grant; a revocation on one ends it on all; a replica with another key
// cannot open them.
func TestConnectReplicasShareGrantsThroughRedis(t *testing.T) {
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	r := newRig(t, nil)
	var flows []*connect.Flow
	var svcs []*connect.Service
	for i := 0; i < 3; i++ {
		svc := newService(t, redisBackend(t, url, prefix))
		f, err := svc.Register(r.config())
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Check(); err != nil {
			t.Fatal(err)
		}
		svcs, flows = append(svcs, svc), append(flows, f)
	}
	link, err := flows[0].Authorize(context.Background(), "oauth:alice")
	if err != nil {
		t.Fatal(err)
	}
	callback := r.as.Login(t, link, "alice")
	// The browser comes back to replica 1 (a load balancer's choice).
	other := strings.Replace(callback, callbackOf(t, flows[0]), callbackOf(t, flows[1]), 1)
	res, err := http.Get(other)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("callback on another replica: %d", res.StatusCode)
	}
	waited := make(chan error, 1)
	go func() { waited <- flows[0].Wait(context.Background(), "oauth:alice") }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait.Deadline):
		t.Fatal("replica 0 never saw the grant replica 1 stored")
	}
	tok := mustToken(t, flows[2], "oauth:alice")
	if c, err := r.as.Verify(tok, r.upstream.Resource); err != nil || c["sub"] != "alice" {
		t.Fatalf("replica 2's token: %v %v", c, err)
	}
	// Another key opens nothing.
	stranger := newService(t, redisBackend(t, url, prefix))
	cfg := r.config()
	cfg.Key = key(2)
	sf, _ := stranger.Register(cfg)
	if _, err := sf.Token(context.Background(), "oauth:alice"); err == nil || connect.IsNeedAuthorization(err) {
		t.Fatalf("a replica with another key: %v", err)
	}
	if ok, err := svcs[1].Revoke(context.Background(), "github", "oauth:alice"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	for i, f := range flows {
		if _, err := f.Token(context.Background(), "oauth:alice"); !connect.IsNeedAuthorization(err) {
			t.Fatalf("replica %d after revocation: %v", i, err)
		}
	}
}

var _ = errors.New

func urlUnescape(s string) (string, error) { return neturl.QueryUnescape(s) }
