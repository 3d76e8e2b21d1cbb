package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzSecret fuzzes the secret itself (FuzzString fixes it): whatever the
// secret and the text around it, none of the encodings the package
// promises to find survives, and text without it passes unchanged.
func FuzzSecret(f *testing.F) {
	f.Add("s3cr3t-value", "before ", " after")
	f.Add(`pa"ss/w\rd`, `{"k":"`, `"}`)
	f.Add("ünïcødé-key", "%", "\\")
	f.Add("aaaaaaaa", "aaa", "aaa")
	f.Add("tok en+&=?", "q=", "&x=1")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		if len(secret) < MinLen || len(secret) > MaxLen {
			if New([]string{secret}) != nil {
				t.Fatalf("a secret of %d bytes is redacted", len(secret))
			}
			return
		}
		r := New([]string{secret})
		if r == nil {
			t.Fatal("no redactor")
		}
		// The mark itself may spell the secret again ("redact", or one
		// with a bracket followed by what comes after the mark).
		if strings.ContainsAny(secret, "[]") || strings.Contains(Mark, secret) {
			return
		}
		if got := r.String(before + secret + after); strings.Contains(got, secret) {
			t.Errorf("the raw secret survived in %q", got)
		}
		js, _ := json.Marshal(secret)
		for name, enc := range map[string]string{
			"json":      string(js[1 : len(js)-1]),
			"query":     url.QueryEscape(secret),
			"path":      url.PathEscape(secret),
			"base64":    base64.StdEncoding.EncodeToString([]byte(secret)),
			"base64url": base64.RawURLEncoding.EncodeToString([]byte(secret)),
			"hex":       hex.EncodeToString([]byte(secret)),
			"hex upper": strings.ToUpper(hex.EncodeToString([]byte(secret))),
		} {
			if strings.ContainsAny(enc, "[]") || strings.Contains(Mark, enc) {
				continue
			}
			// JSON has no form for invalid UTF-8: Marshal writes U+FFFD,
			// which is another text, not an encoding of the secret.
			if name == "json" && !utf8.ValidString(secret) {
				continue
			}
			if got := r.String("<" + enc + ">"); strings.Contains(got, enc) {
				t.Errorf("the %s form %q survived in %q", name, enc, got)
			}
		}
		clean := strings.ReplaceAll(before+after, secret, "")
		if !strings.Contains(clean, secret[:MinLen-1]) {
			if got := r.String(clean); got != clean && !strings.Contains(got, Mark) {
				t.Errorf("text without the secret changed: %q became %q", clean, got)
			}
		}
		r.Value(map[string]any{"a": []any{before, secret, after}}) // must not panic
	})
}
