package principal

import (
	"context"
	"testing"
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
