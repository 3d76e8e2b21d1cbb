package authtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func tokenRequest(t *testing.T, s *Server, form url.Values, basic bool) (int, map[string]any) {
	t.Helper()
	if !basic {
		form.Set("client_id", "mcpd")
		form.Set("client_secret", "mcpd-secret-0123456789")
	}
	req, _ := http.NewRequest(http.MethodPost, s.TokenURL(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth("mcpd", "mcpd-secret-0123456789")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func TestServer(t *testing.T) {
	s := Start(t)
	const aud = "https://api.example.com"

	code, m := tokenRequest(t, s, url.Values{"grant_type": {GrantClientCredentials}, "audience": {aud}, "scope": {"a b"}}, true)
	if code != 200 || m["token_type"] != "Bearer" || m["scope"] != "a b" {
		t.Fatalf("client credentials: %d %v", code, m)
	}
	claims, err := s.Verify(m["access_token"].(string), aud)
	if err != nil || claims["sub"] != "mcpd" {
		t.Fatalf("client credentials token: %v %v", claims, err)
	}

	user := s.Mint(Claims{Subject: "alice", Audience: []string{"https://mcp.example.com"}, Extra: map[string]any{"act": map[string]any{"sub": "gateway"}}})
	code, m = tokenRequest(t, s, url.Values{"grant_type": {GrantTokenExchange}, "subject_token": {user}, "subject_token_type": {TokenTypeAccessToken}, "audience": {aud}}, false)
	if code != 200 || m["issued_token_type"] != TokenTypeAccessToken {
		t.Fatalf("exchange: %d %v", code, m)
	}
	claims, err = s.Verify(m["access_token"].(string), aud)
	act, _ := claims["act"].(map[string]any)
	if err != nil || claims["sub"] != "alice" || act["sub"] != "mcpd" || act["act"].(map[string]any)["sub"] != "gateway" {
		t.Fatalf("exchanged token: %v %v", claims, err)
	}
	if s.Count("token_exchange", "alice") != 1 || s.Count("client_credentials", "mcpd") != 1 {
		t.Fatal("counts")
	}

	// Refusals: a bad client, an expired subject token, a set refusal.
	req := url.Values{"grant_type": {GrantClientCredentials}}
	req.Set("client_id", "mcpd")
	req.Set("client_secret", "wrong-secret")
	r, _ := http.PostForm(s.TokenURL(), req)
	r.Body.Close()
	if r.StatusCode != 401 {
		t.Fatalf("a wrong secret: %d", r.StatusCode)
	}
	expired := s.Mint(Claims{Subject: "bob", Audience: []string{aud}, TTL: -time.Minute})
	if code, m = tokenRequest(t, s, url.Values{"grant_type": {GrantTokenExchange}, "subject_token": {expired}, "subject_token_type": {TokenTypeAccessToken}, "audience": {aud}}, false); code != 400 || m["error"] != "invalid_grant" {
		t.Fatalf("an expired subject token: %d %v", code, m)
	}
	if _, err := s.Verify(expired, aud); err == nil {
		t.Fatal("an expired token verifies")
	}
	s.Refuse(&Refusal{Status: 403, Code: "access_denied", Description: "no"})
	if code, m = tokenRequest(t, s, url.Values{"grant_type": {GrantClientCredentials}}, true); code != 403 || m["error"] != "access_denied" {
		t.Fatalf("refusal: %d %v", code, m)
	}
	s.Refuse(nil)

	// Rotation: dropping the old key makes its tokens fail.
	old := s.Mint(Claims{Subject: "carol", Audience: []string{aud}})
	s.RotateKey(false)
	if _, err := s.Verify(old, aud); err != nil {
		t.Fatalf("a token of a kept key: %v", err)
	}
	s.RotateKey(true)
	if _, err := s.Verify(old, aud); err == nil {
		t.Fatal("a token of a dropped key verifies")
	}

	// Down and back on the same address.
	s.Stop()
	if _, err := http.Get(s.JWKSURL()); err == nil {
		t.Fatal("the stopped server answered")
	}
	s.Restart()
	r, err = http.Get(s.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
}
