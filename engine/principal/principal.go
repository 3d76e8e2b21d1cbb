// Package principal is the verified caller of one request: who it is, which
// scopes it holds and the attributes (token claims, API key attributes) that
// caller-bound params and the audit log read. The HTTP auth layer produces it
// as the go-sdk's auth.TokenInfo, which the SDK hands to every request of the
// connection (and binds legacy sessions to its UserID); the engine reads it
// back with FromTokenInfo. A request with no principal (stdio, or HTTP with
// auth off) is the local user and is not restricted by scopes.
package principal

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Keys of auth.TokenInfo.Extra that carry mcpd's principal.
const (
	extraMethod    = "mcpd.method"    // "api_key" or "oauth"
	extraClaims    = "mcpd.claims"    // map[string]any
	extraPrincipal = "mcpd.principal" // the *Principal itself
)

// Principal is one verified caller.
type Principal struct {
	// Name identifies the caller: an API key's name, or a token's subject.
	Name string
	// Method is how it was verified: "api_key" or "oauth".
	Method string
	// Scopes are the scopes it was granted.
	Scopes []string
	// Claims are the verified token's claims, or an API key's attributes.
	// Caller-bound params read them as claims.<name>.
	Claims map[string]any

	// token is the bearer token the caller was verified with (OAuth
	// only: an API key is mcpd's own secret and never leaves it), for
	// the backends that exchange or forward it. It is unexported and a
	// pointer so that no printing of a Principal can show it: fmt prints
	// a nested pointer as an address, encoding/json skips unexported
	// fields, and *Token redacts itself in every format.
	token *Token
}

// Token is a caller's bearer token. Its every printed form (fmt verbs,
// slog, JSON) is "[redacted]": only Reveal gives the value, for the one
// place that must send it (a token exchange, or a passthrough header).
type Token struct {
	raw    string
	expiry time.Time
}

const redacted = "[redacted]"

// Reveal returns the token itself. Call it only to send it to the
// authorization server or to a backend that may receive it.
func (t *Token) Reveal() string {
	if t == nil {
		return ""
	}
	return t.raw
}

// Expiry is when the token expires (zero: unknown).
func (t *Token) Expiry() time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.expiry
}

func (t *Token) String() string               { return redacted }
func (t *Token) GoString() string             { return redacted }
func (t *Token) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(redacted)) }
func (t *Token) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (t *Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (t *Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// WithToken returns a copy of p that carries the bearer token it was
// verified with, and when that token expires (zero: unknown). p itself is
// not changed: a Principal may be shared (an API key's).
func (p *Principal) WithToken(raw string, expiry time.Time) *Principal {
	q := *p
	q.token = &Token{raw: raw, expiry: expiry}
	return &q
}

// Token is the caller's bearer token, nil when it has none that may be
// used (an API key, or no auth).
func (p *Principal) Token() *Token {
	if p == nil {
		return nil
	}
	return p.token
}

// Audience is the aud claim of the caller's token: one string or a list
// of them; nil when there is none.
func (p *Principal) Audience() []string {
	if p == nil {
		return nil
	}
	switch a := p.Claims["aud"].(type) {
	case string:
		return []string{a}
	case []string:
		return a
	case []any:
		out := make([]string, 0, len(a))
		for _, v := range a {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// LogValue is what log/slog shows of p: its name and method, never its
// token or claims.
func (p *Principal) LogValue() slog.Value {
	if p == nil {
		return slog.StringValue("local")
	}
	return slog.GroupValue(slog.String("name", p.Name), slog.String("method", p.Method))
}

// TokenInfo encodes p for the SDK, which passes it on to every request.
// It carries p itself too, so that reading it back costs no allocation: a
// Principal is never changed once verified.
func (p *Principal) TokenInfo() *auth.TokenInfo {
	return &auth.TokenInfo{
		UserID: p.Method + ":" + p.Name,
		Scopes: p.Scopes,
		Extra:  map[string]any{extraMethod: p.Method, extraClaims: p.Claims, "name": p.Name, extraPrincipal: p},
	}
}

// FromTokenInfo decodes what TokenInfo encoded; nil when ti is nil (no
// authentication on this transport). The result must not be changed: it
// may be the Principal TokenInfo was called on.
func FromTokenInfo(ti *auth.TokenInfo) *Principal {
	if ti == nil {
		return nil
	}
	if p, ok := ti.Extra[extraPrincipal].(*Principal); ok && p != nil {
		return p
	}
	p := &Principal{Scopes: ti.Scopes, Name: ti.UserID}
	if m, ok := ti.Extra[extraMethod].(string); ok {
		p.Method = m
	}
	if n, ok := ti.Extra["name"].(string); ok {
		p.Name = n
	}
	if c, ok := ti.Extra[extraClaims].(map[string]any); ok {
		p.Claims = c
	}
	return p
}

// HasScopes reports whether p holds every scope in required. A nil
// principal (the local user) holds all of them.
func (p *Principal) HasScopes(required []string) bool {
	if p == nil {
		return true
	}
	for _, r := range required {
		found := false
		for _, s := range p.Scopes {
			if s == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Lookup reads a dotted path such as "claims.org_id" or "name" from p.
func (p *Principal) Lookup(path string) (any, bool) {
	if p == nil {
		return nil, false
	}
	parts := strings.Split(path, ".")
	switch parts[0] {
	case "name":
		return p.Name, len(parts) == 1
	case "method":
		return p.Method, len(parts) == 1
	case "claims":
		var cur any = p.Claims
		for _, k := range parts[1:] {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[k]; !ok {
				return nil, false
			}
		}
		return cur, len(parts) > 1
	}
	return nil, false
}

// ValidPath reports whether path is one Lookup can read for a caller:
// "name", or "claims." followed by one or more non-empty dotted segments.
// It is the path language of from_caller and of every other value read
// from the caller.
func ValidPath(path string) bool {
	if path == "name" {
		return true
	}
	rest, ok := strings.CutPrefix(path, "claims.")
	if !ok {
		return false
	}
	for _, seg := range strings.Split(rest, ".") {
		if seg == "" {
			return false
		}
	}
	return true
}

type ctxKey struct{}

// NewContext returns ctx carrying p, for code below the MCP layer
// (adapters, audit) that has no request to read it from.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal NewContext stored, or nil.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(ctxKey{}).(*Principal)
	return p
}
