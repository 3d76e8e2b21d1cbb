package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWriteJSONString holds writeJSONString to json.Marshal, which
// TextContent.MarshalJSON uses, for every class of byte it escapes, at
// every position relative to the writer's buffer.
func TestWriteJSONString(t *testing.T) {
	cases := []string{
		"",
		"plain",
		`quote " backslash \ slash /`,
		"<script>&amp;</script>",
		"\x00\x01\b\f\n\r\t\x1f\x7f",
		"\u2028\u2029 line and paragraph separators",
		"é ü 日本 🎉",
		"\xff\xfe invalid \xc3 truncated \xe2\x82 \xed\xa0\x80 surrogate",
		strings.Repeat("ab<\"\n\u2028\xff日", 5000),
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "<", ">", "&", "\"", "\\", "\n", "\x01", "\u2028", "\u2029", "é", "日", "🎉", "\xff", "\xe2", "\x82", "\xe2\x80"}
	for range 200 {
		var b strings.Builder
		for range r.IntN(200) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{16, 17, 4096} {
			var got bytes.Buffer
			w := bufio.NewWriterSize(&got, size)
			writeJSONString(w, s)
			w.Flush()
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("writeJSONString(%q) with a %d-byte buffer:\n got %q\nwant %q", s, size, got.Bytes(), want)
			}
		}
	}
}
