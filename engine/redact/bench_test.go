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
