package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth/authtest"
)

// The identity example (examples/identity) served for real: mcpd verifies
// the callers' JWTs against a test authorization server's JWKS, and its
// tools reach two APIs that accept only tokens issued for them, in the
// three identity modes.
func TestIdentityExample(t *testing.T) {
	const (
		resource = "https://mcp.example.com/mcp"
		secret   = "mcpd-secret-0123456789"
	)
	as := authtest.Start(t)
	orders := authtest.API(t, as, "https://orders.example.com")
	profile := authtest.API(t, as, "https://profile.example.com")
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", filepath.Join("..", "..", "examples", "identity"),
		"--audit-log", auditPath, "--log-level", "debug")
	cmd.Env = append(cmd.Env,
		"MCPD_RESOURCE="+resource,
		"AUTH_ISSUER="+as.Issuer(),
		"AUTH_JWKS_URL="+as.JWKSURL(),
		"AUTH_TOKEN_URL="+as.TokenURL(),
		"ORDERS_API_URL="+orders.URL+"/v1",
		"PROFILE_API_URL="+profile.URL,
		"ORDERS_CLIENT_SECRET="+secret,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL,
	)
	endpoint, logs := startHTTPLogs(t, cmd)

	session := func(t *testing.T, sub string, aud ...string) *mcp.ClientSession {
		t.Helper()
		tok := as.Mint(authtest.Claims{Subject: sub, Audience: aud, Scope: "mcp"})
		cs, err := connectWith(t, endpoint, &http.Client{Transport: keyTransport{"Authorization", "Bearer " + tok, http.DefaultTransport}})
		if err != nil {
			t.Fatalf("%s connects: %v", sub, err)
		}
		return cs
	}
	callOK := func(t *testing.T, cs *mcp.ClientSession, tool string) map[string]any {
		t.Helper()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tool})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", tool, err, textOf(res))
		}
		m, _ := res.StructuredContent.(map[string]any)
		return m
	}
	callErr := func(t *testing.T, cs *mcp.ClientSession, tool, want string) {
		t.Helper()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tool})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), want) {
			t.Fatalf("%s: want a tool error containing %q; got %v %s", tool, want, err, textOf(res))
		}
	}

	// alice's token is for mcpd and for the profile API; bob's for mcpd
	// only.
	alice := session(t, "alice", resource, "https://profile.example.com")
	bob := session(t, "bob", resource)

	t.Run("token exchange", func(t *testing.T) {
		got := callOK(t, alice, "list_orders")
		if got["sub"] != "alice" || got["act"] != "mcpd" || got["scope"] != "orders.read" || got["path"] != "/v1/orders" {
			t.Fatalf("the orders API saw %v", got)
		}
		if got := callOK(t, bob, "list_orders"); got["sub"] != "bob" {
			t.Fatalf("bob's call reached the API as %v", got)
		}
	})
	t.Run("client credentials", func(t *testing.T) {
		got := callOK(t, bob, "orders_health")
		if got["sub"] != "mcpd" || got["act"] != "" || got["scope"] != "orders.health" {
			t.Fatalf("the orders API saw %v", got)
		}
	})
	t.Run("passthrough", func(t *testing.T) {
		if got := callOK(t, alice, "my_profile"); got["sub"] != "alice" {
			t.Fatalf("the profile API saw %v", got)
		}
		before := len(profile.Seen()) + len(profile.Refused())
		callErr(t, bob, "my_profile", `refused to forward the caller's token: it was issued for aud "https://mcp.example.com/mcp", not for "https://profile.example.com"`)
		if after := len(profile.Seen()) + len(profile.Refused()); after != before {
			t.Fatal("bob's token reached the profile API")
		}
	})

	// Many callers at once, each with several concurrent calls: one
	// exchange per caller, and every request reaches the API as its
	// own caller.
	t.Run("concurrent callers", func(t *testing.T) {
		as.SetDelay(100 * time.Millisecond)
		defer as.SetDelay(0)
		var wg sync.WaitGroup
		for i := 0; i < 6; i++ {
			sub := fmt.Sprintf("user%d", i)
			cs := session(t, sub, resource)
			for j := 0; j < 8; j++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "list_orders"})
					if err != nil || res.IsError {
						t.Errorf("%s: %v %s", sub, err, textOf(res))
						return
					}
					if m, _ := res.StructuredContent.(map[string]any); m["sub"] != sub {
						t.Errorf("%s's call reached the API as %v", sub, m)
					}
				}()
			}
		}
		wg.Wait()
		for i := 0; i < 6; i++ {
			if n := as.Count("token_exchange", fmt.Sprintf("user%d", i)); n != 1 {
				t.Errorf("user%d: %d exchanges for 8 concurrent calls, want 1", i, n)
			}
		}
	})

	t.Run("authorization server down", func(t *testing.T) {
		erin := session(t, "erin", resource)
		as.Stop()
		callErr(t, erin, "list_orders", "cannot reach the authorization server")
		as.Restart()
		if got := callOK(t, erin, "list_orders"); got["sub"] != "erin" {
			t.Fatalf("after the AS is back: %v", got)
		}
	})

	t.Run("refused exchange", func(t *testing.T) {
		frank := session(t, "frank", resource)
		as.Refuse(&authtest.Refusal{Code: "access_denied", Description: "frank may not use the orders API"})
		defer as.Refuse(nil)
		callErr(t, frank, "list_orders", "the authorization server answered 400 Bad Request: access_denied: frank may not use the orders API")
	})

	cmd.Process.Signal(syscall.SIGTERM) // flushes the audit log and the spans
	if code, _ := waitExit(t, cmd, 15*time.Second); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, logs.String())
	}

	// The audit log names the caller and the identity each call used.
	lines := readAudit(t, auditPath)
	found := map[string]bool{}
	for _, l := range lines {
		key := fmt.Sprintf("%v %v %v %v %v %v", l["name"], l["principal"], l["outcome"], l["identity"], l["identity_subject"], l["actor"])
		found[key] = true
	}
	for _, want := range []string{
		"list_orders alice ok token_exchange alice mcpd",
		"orders_health bob ok client_credentials mcpd ",
		"my_profile alice ok passthrough alice ",
		"my_profile bob tool_error   ",
	} {
		if !found[want] {
			t.Errorf("no audit line %q in:\n%v", want, found)
		}
	}

	// So do the spans: the caller, and the identity the backend got.
	var spanText strings.Builder
	byCaller := map[string]map[string]string{}
	rcv.mu.Lock()
	for _, sp := range rcv.spans {
		attrs := map[string]string{}
		for _, kv := range sp.Attributes {
			attrs[kv.Key] = kv.Value.GetStringValue()
			spanText.WriteString(kv.Key + "=" + kv.Value.GetStringValue() + "\n")
		}
		spanText.WriteString(sp.Name + " " + sp.GetStatus().GetMessage() + "\n")
		byCaller[sp.Name+" "+attrs["enduser.id"]] = attrs
	}
	rcv.mu.Unlock()
	if a := byCaller["tools/call list_orders alice"]; a["mcpd.identity.mode"] != "token_exchange" || a["mcpd.identity.subject"] != "alice" || a["mcpd.identity.actor"] != "mcpd" {
		t.Errorf("span of alice's list_orders: %v", a)
	}
	if a := byCaller["tools/call orders_health bob"]; a["mcpd.identity.mode"] != "client_credentials" || a["mcpd.identity.subject"] != "mcpd" {
		t.Errorf("span of bob's orders_health: %v", a)
	}

	// No token and no secret anywhere in what mcpd wrote.
	raw, _ := os.ReadFile(auditPath)
	written := logs.String() + string(raw) + spanText.String()
	for _, tok := range append(as.Issued(), secret) {
		if strings.Contains(written, tok) {
			t.Fatalf("a token or secret is in mcpd's log or audit log: %.40s...", tok)
		}
	}
	if len(as.Issued()) < 20 {
		t.Fatalf("only %d tokens issued: the test did not exercise the AS", len(as.Issued()))
	}
}

// A mode that needs the caller's token, in a config without OAuth, is a
// load error at the mode.
func TestIdentityNeedsAuth(t *testing.T) {
	dir := writeConfig(t, `
http_backend "api" {
  base_url = "https://api.example.com"
  identity {
    mode     = "token_exchange"
    token_url = "https://auth.example.com/token"
    client_id = "mcpd"
    client_secret = env("API_SECRET", "s3cret-value")
    audience = "https://api.example.com"
  }
}

tool "get" {
  description = "Gets a thing."
  http {
    backend = "api"
  }
}
`)
	r := runCLI(t, "validate", "-c", dir)
	if r.code != 1 || !strings.Contains(r.stderr+r.stdout, "tools.hcl:5:16: error: Identity without auth") {
		t.Fatalf("exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, "s3cret-value") {
		t.Fatal("validate printed the secret")
	}
}
