package httpadapter

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/mcpd/mcpd/engine/outbound"
)

func TestRedact(t *testing.T) {
	var s secrets
	s.add("Bearer ")              // an unset token: nothing to redact
	s.add("Bearer abcdefgh12345") // the value and the token
	s.add("short")                // too short to redact
	s.add("Basic dXNlcjpwYXNz")
	s = s.finish()
	tests := map[string]string{
		"Bearer token required":               "Bearer token required",
		"got Bearer abcdefgh12345 here":       "got [redacted] here",
		"token abcdefgh12345 alone":           "token [redacted] alone",
		"short stays":                         "short stays",
		"Basic dXNlcjpwYXNz and dXNlcjpwYXNz": "[redacted] and [redacted]",
		// Echoed JSON-escaped (PHP writes \/ and \u00XX), percent-encoded
		// or base64-encoded.
		`{"t":"abcdefgh\u0031\u0032345"}`: `{"t":"[redacted]"}`,
		"?token=abcdefgh%312345":          "?token=[redacted]",
		"YWJjZGVmZ2gxMjM0NQ==":            "[redacted]",
	}
	for in, want := range tests {
		if got := s.redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
		if got := string(s.redactBytes([]byte(in))); got != want {
			t.Errorf("redactBytes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedirectPolicy(t *testing.T) {
	req := func(raw string) *http.Request {
		r, err := http.NewRequest("GET", raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := req("https://api.example.com/a")
	sameOriginRedirects := outbound.SameOriginRedirects("", maxRedirects) // the backends' policy
	tests := []struct {
		to string
		ok bool
	}{
		{"https://api.example.com/b", true},
		{"https://API.example.com:443/b", true},
		{"http://api.example.com/b", false}, // downgrade
		{"https://api.example.com:8443/b", false},
		{"https://evil.example.com/b", false},
		{"https://api.example.com.evil.com/b", false},
	}
	for _, tc := range tests {
		err := sameOriginRedirects(req(tc.to), []*http.Request{first})
		if (err == nil) != tc.ok {
			t.Errorf("redirect to %s: err = %v, want ok=%v", tc.to, err, tc.ok)
		}
	}
	via := make([]*http.Request, maxRedirects)
	for i := range via {
		via[i] = first
	}
	if err := sameOriginRedirects(req("https://api.example.com/c"), via); err == nil {
		t.Errorf("redirect %d was followed", maxRedirects+1)
	}
}

// A decoded JSON body is redacted again, keys included: what \/ or \u0041
// hid from the bytes is plain text after decoding.
func TestRedactValue(t *testing.T) {
	var s secrets
	s.add("tok/en-123456")
	s = s.finish()
	got := s.redactValue(map[string]any{"tok/en-123456": []any{"x tok/en-123456"}})
	want := map[string]any{"[redacted]": []any{"x [redacted]"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
