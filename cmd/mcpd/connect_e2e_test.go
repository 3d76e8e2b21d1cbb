package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
)

// perUserUpstream is a go-sdk server that accepts only tokens the AS
// issued for its URL, and answers whoami with the token's subject.
func perUserUpstream(t *testing.T, as *authtest.Server) string {
	ts := httptest.NewServer(nil)
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	srv := mcp.NewServer(&mcp.Implementation{Name: "per-user", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "who calls"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sub=" + req.Extra.TokenInfo.UserID}}}, nil, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		claims, err := as.Verify(tok, url)
		if err != nil {
			return nil, auth.ErrInvalidToken
		}
		sub, _ := claims["sub"].(string)
		return &auth.TokenInfo{UserID: sub, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts.Config.Handler = as.Protect(url).Handler(auth.RequireBearerToken(verify, nil)(h))
	return url
}

func perUserConfig(redisURL, prefix, upstream string, withKey bool) string {
	key := ""
	if withKey {
		key = `grant_key = env("MCPD_GRANT_KEY")`
	}
	return fmt.Sprintf(`
server {
  name = "per-user"
  state {
    redis      = %q
    key_prefix = %q
  }
}

auth {
  api_key "alice" {
    value = "alice-key-0123456789"
  }
}

mcp_server "up" {
  url = %q
  identity {
    mode = "user_authorization"
    %s
  }
}

tool "whoami" {
  description = "Who the upstream sees."
  mcp { server = "up" }
}
`, redisURL, prefix, upstream, key)
}

var authorizeLink = regexp.MustCompile(`http://\S+/authorize\?\S+`)

// Two real mcpd processes share grants through Redis: alice authorizes
// through one (its /oauth/callback), calls through the other; an admin
// lists and revokes her grant with `mcpd grants`, which ends it on both;
// no token reaches either log. Without grant_key, serve refuses to start.
func TestPerUserAuthorizationTwoReplicas(t *testing.T) {
	redisURL := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, redisURL)
	as := authtest.Start(t)
	as.AddUser("alice", "a-pw")
	dir := configDir(t, map[string]string{"tools.hcl": perUserConfig(redisURL, prefix, perUserUpstream(t, as), true)})
	const key = "MCPD_GRANT_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	start := func() (string, *lockedBuffer) {
		cmd := mcpdCommand("serve", "-c", dir, "--http", "127.0.0.1:0", "--ui=false")
		cmd.Env = append(cmd.Env, key)
		return startHTTPLogs(t, cmd)
	}
	a, logsA := start()
	b, logsB := start()
	call := func(endpoint, version string) *mcp.CallToolResult {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "per-user-test", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: &http.Client{Transport: authtest.Bearer("alice-key-0123456789", nil)}}
		cs, err := c.Connect(bounded(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := call(a, "2025-11-25")
	link := authorizeLink.FindString(textOf(first))
	if !first.IsError || link == "" {
		t.Fatalf("a call without a grant: %q", textOf(first))
	}
	callback := as.Login(t, link, "alice")
	if !strings.HasPrefix(callback, strings.TrimSuffix(a, "/mcp")+"/oauth/callback?") {
		t.Fatalf("the AS redirects to %s, not replica A's callback", callback)
	}
	res, err := http.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("callback: %d", res.StatusCode)
	}
	for _, ep := range []string{a, b} {
		if got := call(ep, "2026-07-28"); got.IsError || textOf(got) != "sub=alice" {
			t.Fatalf("%s after authorizing: %q", ep, textOf(got))
		}
	}
	t.Setenv("MCPD_GRANT_KEY", strings.TrimPrefix(key, "MCPD_GRANT_KEY="))
	list := runCLI(t, "grants", "-c", dir, "list")
	if list.code != 0 || !strings.Contains(list.stdout, "api_key:alice") {
		t.Fatalf("grants list: %+v", list)
	}
	rev := runCLI(t, "grants", "-c", dir, "revoke", "up", "api_key:alice")
	if rev.code != 0 {
		t.Fatalf("grants revoke: %+v", rev)
	}
	for _, ep := range []string{a, b} {
		if got := call(ep, "2026-07-28"); !got.IsError || authorizeLink.FindString(textOf(got)) == "" {
			t.Fatalf("%s after the admin's revocation: %q", ep, textOf(got))
		}
	}
	for _, tok := range as.Issued() {
		for _, logs := range []*lockedBuffer{logsA, logsB} {
			if strings.Contains(logs.String(), tok) || strings.Contains(list.stdout, tok) {
				t.Fatal("a token reached a log or the grants list")
			}
		}
	}

	noKey := configDir(t, map[string]string{"tools.hcl": perUserConfig(redisURL, prefix, "http://127.0.0.1:1/mcp", false)})
	cmd := mcpdCommand("serve", "-c", noKey, "--http", "127.0.0.1:0", "--ui=false")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "grant_key") {
		t.Fatalf("serve without grant_key, grants in Redis: %v\n%s", err, out)
	}
}
