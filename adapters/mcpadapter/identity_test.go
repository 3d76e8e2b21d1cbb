package mcpadapter_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// Identity to upstream MCP servers, with real parts: the project's test
// authorization server (engine/auth/authtest); an upstream of the test's
// own (a go-sdk server, stateful for 2025-11-25 and stateless for
// 2026-07-28) behind a bearer check that verifies each request's token
// for the upstream's audience and records its subject on every request,
// by session; mcpd as the gateway, verifying its callers' tokens; go-sdk
// clients of both eras as the callers.

const (
	gatewayAudience  = "https://mcp.example.com/mcp"
	upstreamAudience = "https://tools.example.com/mcp"
)

// idUpstream is the upstream: its tool whoami answers the subject and
// actor of the token its request carried, and fails when the subject is
// not the caller the arguments name (so that a call carrying another
// user's token is seen on the spot).
type idUpstream struct {
	url string

	mu       sync.Mutex
	sessions map[string]map[string]bool // Mcp-Session-Id → subjects seen on it
	calls    map[string]int             // subject → whoami calls
	refused  int                        // requests without a token valid for the audience
	deletes  int                        // sessions ended by the client
}

func newIDUpstream(t *testing.T, as *authtest.Server, version string) *idUpstream {
	t.Helper()
	u := &idUpstream{sessions: map[string]map[string]bool{}, calls: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "id-up", Version: "1"}, nil)
	type whoIn struct {
		Caller string `json:"caller"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Who the request's token names."},
		func(_ context.Context, req *mcp.CallToolRequest, in whoIn) (*mcp.CallToolResult, map[string]any, error) {
			ti := req.Extra.TokenInfo
			sub, _ := ti.Extra["sub"].(string)
			act, _ := ti.Extra["act"].(string)
			u.mu.Lock()
			u.calls[sub]++
			u.mu.Unlock()
			if in.Caller != "" && sub != in.Caller {
				return nil, nil, fmt.Errorf("a call of %s carried %s's token", in.Caller, sub)
			}
			return nil, map[string]any{"sub": sub, "act": act}, nil
		})
	// echo_token answers the token it got: an upstream that leaks it.
	mcp.AddTool(srv, &mcp.Tool{Name: "echo_token", Description: "The request's token, echoed."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, map[string]any, error) {
			raw, _ := req.Extra.TokenInfo.Extra["raw"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you sent " + raw}}}, map[string]any{"token": raw}, nil
		})
	verify := func(_ context.Context, raw string, _ *http.Request) (*auth.TokenInfo, error) {
		claims, err := as.Verify(raw, upstreamAudience)
		if err != nil {
			u.mu.Lock()
			u.refused++
			u.mu.Unlock()
			return nil, auth.ErrInvalidToken
		}
		sub, _ := claims["sub"].(string)
		act := ""
		if a, ok := claims["act"].(map[string]any); ok {
			act, _ = a["sub"].(string)
		}
		exp, _ := claims["exp"].(float64)
		return &auth.TokenInfo{UserID: sub, Expiration: time.Unix(int64(exp), 0), Extra: map[string]any{"sub": sub, "act": act, "raw": raw}}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: version == modern}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := r.Header.Get("Mcp-Session-Id")
		// Whom the token names, valid or not (expired, of a dropped
		// key): a session must carry one identity's tokens only.
		sub := "(no token)"
		if _, raw, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok {
			sub = claimedSubject(raw)
		}
		u.seen(sid, sub)
		if r.Method == http.MethodDelete {
			u.mu.Lock()
			u.deletes++
			u.mu.Unlock()
		}
		h.ServeHTTP(w, r)
		if sid == "" {
			u.seen(w.Header().Get("Mcp-Session-Id"), sub) // initialize made it
		}
	}))
	t.Cleanup(ts.Close)
	u.url = ts.URL
	return u
}

// claimedSubject is the sub claim of a JWT, unverified.
func claimedSubject(raw string) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "(not a JWT)"
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Sub string `json:"sub"`
	}
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return "(not a JWT)"
	}
	return c.Sub
}

func (u *idUpstream) seen(sid, sub string) {
	if sid == "" {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sessions[sid] == nil {
		u.sessions[sid] = map[string]bool{}
	}
	u.sessions[sid][sub] = true
}

// mixedSessions are the upstream sessions that carried the requests of
// more than one identity (no token counts as one).
func (u *idUpstream) mixedSessions() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for sid, subs := range u.sessions {
		if len(subs) > 1 {
			out = append(out, fmt.Sprintf("%s: %v", sid, subs))
		}
	}
	return out
}

func (u *idUpstream) callsOf(sub string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[sub]
}

// idGateway is mcpd's config: callers' tokens verified for the gateway's
// audience, and whoami of the upstream at url with identity.
func idGateway(as *authtest.Server, url, version, identity string) string {
	return fmt.Sprintf(`
auth {
  resource = %q
  oauth {
    issuer   = %q
    jwks_url = %q
  }
}

mcp_server "up" {
  url              = %q
  protocol_version = %q
  identity {
%s
  }
}

tool "echo_token" {
  description = "What token the upstream got."
  mcp {
    server = "up"
  }
}

tool "whoami" {
  description = "Who the upstream sees."
  param "caller" {
    type     = "string"
    required = false
  }
  mcp {
    server = "up"
  }
}
`, gatewayAudience, as.Issuer(), as.JWKSURL(), url, version, identity)
}

func exchangeIdentity(as *authtest.Server) string {
	return fmt.Sprintf(`    mode          = "token_exchange"
    token_url     = %q
    client_id     = "mcpd"
    client_secret = "mcpd-secret-0123456789"
    audience      = %q`, as.TokenURL(), upstreamAudience)
}

func clientCredentialsIdentity(as *authtest.Server) string {
	return fmt.Sprintf(`    mode          = "client_credentials"
    token_url     = %q
    client_id     = "mcpd"
    client_secret = "mcpd-secret-0123456789"
    audience      = %q`, as.TokenURL(), upstreamAudience)
}

const passthroughIdentity = `    mode     = "passthrough"
    audience = "` + upstreamAudience + `"`

// verifyGatewayCaller is the gateway's bearer check, as mcpd's auth
// middleware does it: the token verified for the gateway's audience, and
// kept in the principal for the identity to exchange or forward.
func verifyGatewayCaller(as *authtest.Server) auth.TokenVerifier {
	return func(_ context.Context, raw string, _ *http.Request) (*auth.TokenInfo, error) {
		claims, err := as.Verify(raw, gatewayAudience)
		if err != nil {
			return nil, auth.ErrInvalidToken
		}
		sub, _ := claims["sub"].(string)
		exp, _ := claims["exp"].(float64)
		expiry := time.Unix(int64(exp), 0)
		ti := (&principal.Principal{Name: sub, Method: "oauth", Claims: claims}).WithToken(raw, expiry).TokenInfo()
		ti.Expiration = expiry
		return ti, nil
	}
}

type idEnv struct {
	as *authtest.Server
	up *idUpstream
	gw *watched
}

func newIDEnv(t *testing.T, version, identity string) *idEnv {
	t.Helper()
	e := &idEnv{as: authtest.Start(t)}
	e.up = newIDUpstream(t, e.as, version)
	if identity == "" {
		identity = exchangeIdentity(e.as)
	}
	e.gw = serveWatchedWith(t, idGateway(e.as, e.up.url, version, identity), verifyGatewayCaller(e.as), serve.HTTPOptions{})
	return e
}

// user connects to the gateway as sub with a token for aud, on version.
func (e *idEnv) user(t *testing.T, sub, version string, aud ...string) *mcp.ClientSession {
	t.Helper()
	return e.userWith(t, sub, version, nil, aud...)
}

func (e *idEnv) userWith(t *testing.T, sub, version string, opts *mcp.ClientOptions, aud ...string) *mcp.ClientSession {
	t.Helper()
	if len(aud) == 0 {
		aud = []string{gatewayAudience}
	}
	return connectAs(t, e.gw.url, version, e.as.Mint(authtest.Claims{Subject: sub, Audience: aud, Scope: "mcp"}), opts)
}

// whoami calls the tool as caller; it returns what the upstream saw, or
// the tool error's text.
func whoami(t *testing.T, cs *mcp.ClientSession, caller string) (map[string]any, string) {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{"caller": caller}})
	if err != nil {
		return nil, "protocol error: " + err.Error()
	}
	if res.IsError {
		return nil, textOf(res)
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m, ""
}

// Two users at 16 concurrent calls each, through the gateway, in both
// eras of the upstream and with callers of both eras: each upstream call
// carries its own user's token (the upstream checks it against the caller
// the call names) and never the other's, no upstream session carries two
// identities, and a user's token is exchanged once for all their calls.
// Callers that declare nothing an upstream may ask share their user's
// session; callers that do (roots, the SDK client's default) take pooled
// sessions, which are their user's too.
func TestIdentityPerCallerConcurrent(t *testing.T) {
	const perUser = 16
	for _, version := range []string{legacy, modern} {
		for _, mode := range []string{"token_exchange", "passthrough"} {
			for _, askable := range []bool{false, true} {
				name := version + "/" + mode + "/caller's session"
				if askable {
					name = version + "/" + mode + "/pooled sessions"
				}
				t.Run(name, func(t *testing.T) {
					as := authtest.Start(t)
					up := newIDUpstream(t, as, version)
					identity := exchangeIdentity(as)
					if mode == "passthrough" {
						identity = passthroughIdentity
					}
					gw := serveWatchedWith(t, idGateway(as, up.url, version, identity), verifyGatewayCaller(as), serve.HTTPOptions{})
					e := &idEnv{as: as, up: up, gw: gw}
					aud := []string{gatewayAudience}
					if mode == "passthrough" {
						aud = append(aud, upstreamAudience) // passthrough forwards only such a token
					}
					as.SetDelay(50 * time.Millisecond) // the first calls of each user overlap their exchange
					var opts *mcp.ClientOptions
					if !askable {
						opts = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}
					}
					users := map[string]*mcp.ClientSession{
						"alice": e.userWith(t, "alice", modern, opts, aud...),
						"bob":   e.userWith(t, "bob", legacy, opts, aud...),
					}
					var wg sync.WaitGroup
					for round := 0; round < 2; round++ {
						for sub, cs := range users {
							for range perUser {
								wg.Go(func() {
									got, errText := whoami(t, cs, sub)
									if errText != "" {
										t.Errorf("%s: %s", sub, errText)
										return
									}
									if got["sub"] != sub {
										t.Errorf("%s's call reached the upstream as %v", sub, got)
									}
									if wantAct := map[string]string{"token_exchange": "mcpd", "passthrough": ""}[mode]; got["act"] != wantAct {
										t.Errorf("%s's call: act %v, want %q", sub, got["act"], wantAct)
									}
								})
							}
						}
						wg.Wait()
					}
					for sub := range users {
						if n := up.callsOf(sub); n != 2*perUser {
							t.Errorf("the upstream ran %d calls of %s, want %d", n, sub, 2*perUser)
						}
						want := map[string]int{"token_exchange": 1, "passthrough": 0}[mode]
						n := as.Count("token_exchange", sub)
						t.Logf("%s: %d token requests for %d calls", sub, n, 2*perUser)
						if n != want {
							t.Errorf("%s: %d token exchanges for %d calls, want %d", sub, n, 2*perUser, want)
						}
					}
					if mixed := up.mixedSessions(); len(mixed) > 0 {
						t.Errorf("upstream sessions carried more than one identity: %v", mixed)
					}
					if st := upstreamStatus(t, gw.cur, "up"); st.State != "up" {
						t.Errorf("the upstream's state is %q, want up", st.State)
					}
					if version == legacy && !askable && len(up.sessions) != 2 {
						t.Errorf("the upstream saw %d sessions; want one per user", len(up.sessions))
					}
					t.Logf("upstream sessions: %d", len(up.sessions))
				})
			}
		}
	}
}

// Client credentials: every caller's calls reach the upstream as mcpd,
// with one token for all of them, in both eras; mcpd's own session (the
// listing behind expose) carries it too.
func TestIdentityClientCredentials(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			as := authtest.Start(t)
			up := newIDUpstream(t, as, version)
			config := strings.Replace(idGateway(as, up.url, version, clientCredentialsIdentity(as)), "  protocol_version", "  expose {\n    prefix = \"all_\"\n  }\n  protocol_version", 1)
			gw := serveWatchedWith(t, config, verifyGatewayCaller(as), serve.HTTPOptions{})
			e := &idEnv{as: as, up: up, gw: gw}
			alice, bob := e.user(t, "alice", modern), e.user(t, "bob", legacy)
			wait.Until(t, "the upstream's tools are exposed", func() bool {
				res, err := alice.ListTools(bounded(t), nil)
				if err != nil {
					t.Fatal(err)
				}
				return slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "all_whoami" })
			})
			res, err := bob.CallTool(bounded(t), &mcp.CallToolParams{Name: "all_whoami", Arguments: map[string]any{"caller": "mcpd"}})
			if m, _ := res.StructuredContent.(map[string]any); err != nil || res.IsError || m["sub"] != "mcpd" {
				t.Fatalf("all_whoami: %v %s %v", err, textOf(res), res.StructuredContent)
			}
			var wg sync.WaitGroup
			for range 8 {
				for _, cs := range []*mcp.ClientSession{alice, bob} {
					wg.Go(func() {
						got, errText := whoami(t, cs, "")
						if errText != "" || got["sub"] != "mcpd" {
							t.Errorf("the upstream saw %v %s, want mcpd", got, errText)
						}
					})
				}
			}
			wg.Wait()
			if n := as.Count("client_credentials", "mcpd"); n != 1 {
				t.Errorf("%d client credentials grants for 16 calls, want 1", n)
			}
			// mcpd's service token never reaches a caller, even from an
			// upstream that echoes it.
			res, err = alice.CallTool(bounded(t), &mcp.CallToolParams{Name: "echo_token"})
			if err != nil || res.IsError {
				t.Fatalf("echo_token: %v %s", err, textOf(res))
			}
			issued := as.Issued()
			service := issued[len(issued)-1]
			shown := fmt.Sprint(textOf(res), res.StructuredContent)
			if strings.Contains(shown, service) || !strings.Contains(shown, "[redacted]") {
				t.Errorf("the upstream's echo of the service token reached the caller: %s", shown)
			}
			if up.refused != 0 {
				t.Errorf("the upstream refused %d requests", up.refused)
			}
		})
	}
}

// Passthrough refuses, with a tool error and before anything reaches the
// upstream, a caller's token that was not issued for the upstream.
func TestIdentityPassthroughAudience(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			e := newIDEnv(t, version, passthroughIdentity)
			_, errText := whoami(t, e.user(t, "mallory", modern), "mallory")
			want := `refused to forward the caller's token: it was issued for aud "` + gatewayAudience + `", not for "` + upstreamAudience + `"`
			if !strings.Contains(errText, want) {
				t.Fatalf("got %q, want a tool error with %q", errText, want)
			}
			if n := e.up.callsOf("mallory"); n != 0 || e.up.refused != 0 {
				t.Fatalf("the upstream got %d calls of mallory, refused %d", n, e.up.refused)
			}
			if got, errText := whoami(t, e.user(t, "alice", legacy, gatewayAudience, upstreamAudience), "alice"); errText != "" || got["sub"] != "alice" {
				t.Fatalf("alice: %v %s", got, errText)
			}
		})
	}
}

// The authorization server down is a tool error that says so, and calls
// work again once it is back; an exchanged token that expires is
// exchanged again; a token the upstream refuses (the AS rotated its keys)
// is replaced within the call.
func TestIdentityTokenFailures(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			e := newIDEnv(t, version, "")
			alice := e.user(t, "alice", modern)

			e.as.Stop()
			_, errText := whoami(t, alice, "alice")
			if !strings.Contains(errText, "token exchange at "+e.as.TokenURL()+" failed: cannot reach the authorization server") {
				t.Fatalf("with the AS down: %q", errText)
			}
			if strings.Contains(errText, "mcpd-secret") {
				t.Fatalf("the error shows the client secret: %s", errText)
			}
			e.as.Restart()
			if got, errText := whoami(t, alice, "alice"); errText != "" || got["sub"] != "alice" {
				t.Fatalf("after the AS is back: %v %s", got, errText)
			}

			// Keys rotated, the old one dropped: the upstream refuses the
			// cached token (401), and the call gets a new one.
			e.as.RotateKey(true)
			bob := e.user(t, "bob", legacy) // a token of the new key
			if got, errText := whoami(t, bob, "bob"); errText != "" || got["sub"] != "bob" {
				t.Fatalf("bob: %v %s", got, errText)
			}
			alice = e.user(t, "alice", modern)
			before := e.as.Count("token_exchange", "alice")
			if got, errText := whoami(t, alice, "alice"); errText != "" || got["sub"] != "alice" {
				t.Fatalf("alice after a key rotation: %v %s", got, errText)
			}
			if n := e.as.Count("token_exchange", "alice"); n != before+1 {
				t.Fatalf("after a refused token: %d more exchanges, want 1", n-before)
			}

			// Short-lived exchanged tokens: a new one before each expires.
			e.as.SetTTL(time.Second)
			carol := e.user(t, "carol", modern)
			wait.Until(t, "carol's exchanged token is exchanged again", func() bool {
				if got, errText := whoami(t, carol, "carol"); errText != "" || got["sub"] != "carol" {
					t.Fatalf("carol: %v %s", got, errText)
				}
				return e.as.Count("token_exchange", "carol") >= 2
			})
			if mixed := e.up.mixedSessions(); len(mixed) > 0 {
				t.Errorf("upstream sessions carried more than one identity: %v", mixed)
			}
		})
	}
}

// A caller's session ends after idle_session_timeout without a call, and
// the caller's next call makes another, with the caller's token.
func TestIdentityCallerSessionExpires(t *testing.T) {
	as := authtest.Start(t)
	up := newIDUpstream(t, as, legacy)
	config := strings.Replace(idGateway(as, up.url, legacy, exchangeIdentity(as)), "  protocol_version", "  idle_session_timeout = \"200ms\"\n  protocol_version", 1)
	gw := serveWatchedWith(t, config, verifyGatewayCaller(as), serve.HTTPOptions{})
	e := &idEnv{as: as, up: up, gw: gw}
	alice := e.userWith(t, "alice", modern, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	for i := range 2 {
		if got, errText := whoami(t, alice, "alice"); errText != "" || got["sub"] != "alice" {
			t.Fatalf("call %d: %v %s", i, got, errText)
		}
		wait.Until(t, "the idle session is closed", func() bool {
			up.mu.Lock()
			defer up.mu.Unlock()
			return up.deletes == i+1
		})
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.sessions) != 2 {
		t.Fatalf("the upstream saw %d sessions, want 2", len(up.sessions))
	}
	if n := as.Count("token_exchange", "alice"); n != 1 {
		t.Fatalf("%d exchanges, want 1 (the token outlives the session)", n)
	}
}
