package principal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestRoundTripAndLookup(t *testing.T) {
	p := &Principal{Name: "ci-bot", Method: "api_key", Scopes: []string{"read", "write"},
		Claims: map[string]any{"org_id": "acme", "nested": map[string]any{"team": "db"}}}
	got := FromTokenInfo(p.TokenInfo())
	if got.Name != "ci-bot" || got.Method != "api_key" || len(got.Scopes) != 2 {
		t.Fatalf("round trip: %+v", got)
	}
	tests := []struct {
		path string
		want any
		ok   bool
	}{
		{"claims.org_id", "acme", true},
		{"claims.nested.team", "db", true},
		{"claims.missing", nil, false},
		{"claims", nil, false},
		{"name", "ci-bot", true},
		{"method", "api_key", true},
		{"other", nil, false},
	}
	for _, tt := range tests {
		v, ok := got.Lookup(tt.path)
		if ok != tt.ok || (ok && v != tt.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.path, v, ok, tt.want, tt.ok)
		}
	}
	if !got.HasScopes([]string{"read"}) || got.HasScopes([]string{"admin"}) {
		t.Error("HasScopes")
	}
	var none *Principal
	if !none.HasScopes([]string{"admin"}) {
		t.Error("nil principal is the local user and holds every scope")
	}
	if FromTokenInfo(nil) != nil {
		t.Error("FromTokenInfo(nil)")
	}
	ctx := NewContext(context.Background(), got)
	if FromContext(ctx) != got || FromContext(context.Background()) != nil {
		t.Error("context round trip")
	}
}

// Reading the principal back from the SDK's TokenInfo, once per request,
// allocates nothing; a TokenInfo built elsewhere (without the principal
// itself) still decodes.
func TestFromTokenInfoAllocs(t *testing.T) {
	p := &Principal{Name: "ci-bot", Method: "api_key", Scopes: []string{"read"}}
	ti := p.TokenInfo()
	if n := testing.AllocsPerRun(100, func() { FromTokenInfo(ti) }); n != 0 {
		t.Errorf("FromTokenInfo allocates %v times", n)
	}
	delete(ti.Extra, extraPrincipal)
	if got := FromTokenInfo(ti); got.Name != "ci-bot" || got.Method != "api_key" || !got.HasScopes([]string{"read"}) {
		t.Errorf("decoded without the principal: %+v", got)
	}
}

// The caller's token is reachable through Token().Reveal() only: no
// printing of a principal, its token, or a struct holding it shows it.
func TestTokenNeverPrinted(t *testing.T) {
	const secret = "eyJhbGciOiJFUzI1NiJ9.c2VjcmV0LXBheWxvYWQ.c2lnbmF0dXJl"
	base := &Principal{Name: "alice", Method: "oauth", Claims: map[string]any{"aud": []any{"a", "b"}}}
	p := base.WithToken(secret, time.Now().Add(time.Hour))
	if base.Token() != nil {
		t.Fatal("WithToken changed the principal it was called on")
	}
	if p.Token().Reveal() != secret {
		t.Fatal("Reveal does not return the token")
	}
	if got := p.Audience(); len(got) != 2 || got[0] != "a" {
		t.Fatalf("Audience = %v", got)
	}
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&buf, nil), slog.NewTextHandler(&buf, nil)} {
		slog.New(h).Info("call", "caller", p, "token", p.Token(), "struct", struct{ P *Principal }{p}, "value", *p)
	}
	j, _ := json.Marshal(p)
	tj, _ := json.Marshal(p.Token())
	texts := []string{
		fmt.Sprint(p), fmt.Sprintf("%v %+v %#v %s %q", p, p, p, p.Token(), p.Token()),
		fmt.Sprintf("%v %+v %#v", *p, *p, *p), fmt.Sprintf("%+v", struct{ P Principal }{*p}),
		string(j), string(tj), buf.String(),
	}
	for _, s := range texts {
		if strings.Contains(s, secret) || strings.Contains(s, "c2VjcmV0") {
			t.Errorf("the token shows in %q", s)
		}
	}
	if !strings.Contains(buf.String(), "alice") {
		t.Errorf("the log lost the caller's name: %s", buf.String())
	}
}
