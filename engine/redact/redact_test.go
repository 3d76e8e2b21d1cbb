package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// secret has the characters that encoders treat specially: / and + (JSON
// \/, percent-encoding, the base64 alphabets) and a non-ASCII letter.
const secret = "s3cr3t/T0ken+Abä"

func allUnicodeEscaped(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}

func TestString(t *testing.T) {
	r := New([]string{secret, "short", "other-secret-value"})
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	tests := []struct {
		name, in, want string
	}{
		{"no secret", "nothing to see here", "nothing to see here"},
		{"too short to be a secret", "a short word", "a short word"},
		{"raw", "token=" + secret + "!", "token=[redacted]!"},
		{"raw twice, apart", secret + " and " + secret, "[redacted] and [redacted]"},
		{"raw twice, adjacent, merged", secret + secret, "[redacted]"},
		{"second secret", "x other-secret-value y", "x [redacted] y"},
		{"in a URL, as git prints it", "fatal: unable to access 'https://user:" + secret + "@example.com/r.git/'",
			"fatal: unable to access 'https://user:[redacted]@example.com/r.git/'"},
		{"JSON, Go encoding", `{"t":` + mustJSON(secret) + `}`, `{"t":"[redacted]"}`},
		{"JSON, escaped slash (PHP)", `{"t":"s3cr3t\/T0ken+Ab\u00e4"}`, `{"t":"[redacted]"}`},
		{"JSON, \\u0041 for a letter", `{"t":"s3cr3t\/T0ken+\u0041b\u00E4"}`, `{"t":"[redacted]"}`},
		{"JSON, every character escaped", `"` + allUnicodeEscaped(secret) + `"`, `"[redacted]"`},
		{"JSON, escaped backslash before, not part", `"\\` + secret + `"`, `"\\[redacted]"`},
		{"query escaped", "?t=" + url.QueryEscape(secret) + "&x=1", "?t=[redacted]&x=1"},
		{"path escaped", "/t/" + url.PathEscape(secret) + "/x", "/t/[redacted]/x"},
		{"percent-encoded in any mix", "%73%33cr3t%2fT0ken%2BAb%C3%A4", "[redacted]"},
		{"base64 std", "x " + b64(base64.StdEncoding, secret) + " y", "x [redacted] y"},
		{"base64 url", b64(base64.URLEncoding, secret), "[redacted]"},
		{"base64 raw url", b64(base64.RawURLEncoding, secret), "[redacted]"},
		{"hex", "0x" + hex.EncodeToString([]byte(secret)), "0x[redacted]"},
		{"HEX", strings.ToUpper(hex.EncodeToString([]byte(secret))), "[redacted]"},
		{"broken escapes left alone", `\u12 % %Z \`, `\u12 % %Z \`},
		{"lone surrogate left alone", `\ud800x` + secret, `\ud800x[redacted]`},
		{"prefix of a secret is not redacted", "s3cr3t/T0ken", "s3cr3t/T0ken"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.String(tc.in)
			if got != tc.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if b := r.Bytes([]byte(tc.in)); string(b) != got {
				t.Errorf("Bytes(%q) = %q, String gave %q", tc.in, b, got)
			}
		})
	}
}

// Every base64 alignment of the secret inside a longer base64 text is found.
func TestBase64Offsets(t *testing.T) {
	r := New([]string{secret})
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
		for pre := 0; pre < 6; pre++ {
			for post := 0; post < 4; post++ {
				plain := strings.Repeat("p", pre) + secret + strings.Repeat("q", post)
				enc64 := enc.EncodeToString([]byte(plain))
				got := r.String(enc64)
				// What is left of the encoding are the characters that mix
				// the secret's bits with its neighbours': at most one each
				// side, besides the neighbours' own.
				kept := len(got) - len(Mark)
				limit := (pre*8+5)/6 + 1 + (post*8+5)/6 + 1 + 2
				if !strings.Contains(got, Mark) || kept > limit {
					t.Errorf("offset %d+%d: %q became %q", pre, post, enc64, got)
				}
			}
		}
	}
}

func TestNilAndEmpty(t *testing.T) {
	var r *Redactor
	if got := r.String("x" + secret); got != "x"+secret {
		t.Errorf("nil redactor changed text: %q", got)
	}
	if New([]string{"1", "true", ""}) != nil {
		t.Error("New of values shorter than MinLen should be nil")
	}
	var s *Set
	s.Add(secret)
	if s.Redactor() != nil {
		t.Error("nil Set gave a redactor")
	}
	var empty Set
	empty.Add("short")
	if empty.Redactor() != nil || empty.Redactor().String("x") != "x" {
		t.Error("an empty Set gave a redactor")
	}
}

func TestSet(t *testing.T) {
	var s Set
	s.Add("1")                           // too short
	s.Add("  " + secret + "\n")          // trimmed: a token file's newline
	s.Add(secret)                        // duplicate
	s.Add(strings.Repeat("x", MaxLen+1)) // too long to be a credential
	if s.Len() != 1 {
		t.Fatalf("Len = %d, want 1", s.Len())
	}
	r := s.Redactor()
	if got := r.String("a " + secret); got != "a [redacted]" {
		t.Errorf("got %q", got)
	}
	if s.Redactor() != r {
		t.Error("the redactor is rebuilt without a change")
	}
	s.Add("another-one")
	if got := s.Redactor().String("another-one"); got != Mark {
		t.Errorf("after Add: got %q", got)
	}
}

func TestValue(t *testing.T) {
	r := New([]string{secret})
	type row struct{ Token string }
	in := map[string]any{
		"plain":     "ok",
		"n":         1.5,
		"nested":    map[string]any{"list": []any{"a", "x" + secret, 3.0, nil, true}},
		secret:      "the key is secret",
		"rows":      []map[string]any{{"v": secret}, {"v": "fine"}},
		"strings":   []string{"x", secret},
		"headers":   map[string]string{"x-token": secret},
		"struct":    row{Token: secret},
		"bytes":     []byte("b" + secret),
		"untouched": []any{"same"},
	}
	before, _ := json.Marshal(in)
	got := r.Value(in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatalf("Value modified its input:\n%s\n%s", before, after)
	}
	want := map[string]any{
		"plain":     "ok",
		"n":         1.5,
		"nested":    map[string]any{"list": []any{"a", "x[redacted]", 3.0, nil, true}},
		Mark:        "the key is secret",
		"rows":      []map[string]any{{"v": Mark}, {"v": "fine"}},
		"strings":   []string{"x", Mark},
		"headers":   map[string]string{"x-token": Mark},
		"struct":    map[string]any{"Token": Mark},
		"bytes":     []byte("b" + Mark),
		"untouched": []any{"same"},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("Value\n got %s\nwant %s", g, w)
	}
	// Unchanged parts are shared, not copied.
	clean := map[string]any{"a": []any{"b"}}
	if out := r.Value(clean).(map[string]any); reflect.ValueOf(out).Pointer() != reflect.ValueOf(clean).Pointer() {
		t.Error("a value without secrets was copied")
	}
}

func TestNoAllocWithoutSecret(t *testing.T) {
	r := New([]string{secret, "other-secret-value"})
	text := strings.Repeat(`{"name":"value \/ 100%","n":1} `, 20)
	if n := testing.AllocsPerRun(100, func() { r.String(text) }); n != 0 {
		t.Errorf("String of clean text allocated %v times", n)
	}
	value := map[string]any{"id": 42.0, "tags": []any{"a", "b", text}, "rows": []map[string]any{{"k": "v"}},
		"h": map[string]string{"a": "b"}, "s": []string{"x"}}
	if n := testing.AllocsPerRun(100, func() { r.Value(value) }); n != 0 {
		t.Errorf("Value of a clean value allocated %v times", n)
	}
}

func FuzzString(f *testing.F) {
	r := New([]string{secret})
	f.Add("", "")
	f.Add(`\`, "%")
	f.Add(`"\u00`, `\ud83d`)
	f.Fuzz(func(t *testing.T, before, after string) {
		got := r.String(before + secret + after)
		if strings.Contains(got, secret) {
			t.Errorf("secret survived in %q", got)
		}
		r.String(before + after) // must not panic
	})
}

func mustJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// A secret with an escape is found whatever the distance to the escape
// before it (decoding works on regions around escapes).
func TestDecodedRegions(t *testing.T) {
	r := New([]string{"abcdefgh12345"})
	for d := 0; d < 80; d++ {
		for _, first := range []string{`\n`, `%20`, `\u00e4`} {
			in := first + strings.Repeat("y", d) + `abcdefgh\u0031` + "2345" + strings.Repeat("z", d%7)
			want := first + strings.Repeat("y", d) + Mark + strings.Repeat("z", d%7)
			if got := r.String(in); got != want {
				t.Fatalf("d=%d: %q became %q", d, in, got)
			}
		}
	}
}
