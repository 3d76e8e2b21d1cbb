package redact

import (
	"strings"
	"testing"
)

// Five typical secrets; texts without them (the common case) and with one.
var benchSecrets = []string{"ghp_0123456789abcdefABCDEF0123456789abcd", "sk-live-51H8xYzabcdefghijklmnop",
	"postgres://u:p4ssw0rd@db/x", "hunter2hunter2", "eyJhbGciOiJIUzI1NiJ9.e30.abc"}

func BenchmarkString(b *testing.B) {
	r := New(benchSecrets)
	for _, bm := range []struct{ name, text string }{
		{"static_26B", "This is a static response."},
		{"plain_1KiB", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)},
		{"json_escaped_1KiB", strings.Repeat(`{"url":"https:\/\/x.example\/a?b=1%20c","n":1},`, 22)},
		{"plain_64KiB", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 1490)},
		{"with_secret_1KiB", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 22) + "token hunter2hunter2"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.text)))
			for b.Loop() {
				r.String(bm.text)
			}
		})
	}
}

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		New(benchSecrets)
	}
}

// The structured result of a tool: an object with a hundred short strings.
func BenchmarkValue(b *testing.B) {
	r := New(benchSecrets)
	tags := make([]any, 100)
	for i := range tags {
		tags[i] = "some-tag-value"
	}
	v := map[string]any{"id": 42.0, "even": true, "tags": tags}
	b.ReportAllocs()
	for b.Loop() {
		r.Value(v)
	}
}
