package httpadapter

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// A call lent buffers (engine/resultbuf) gives the same output as one
// without, for bodies of known and unknown length, small and large, cut
// at the limit, compressed, and JSON; and a large body's text is in a
// lent buffer, which is what makes no garbage.
func TestLentBodies(t *testing.T) {
	text := strings.Repeat("0123456789abcdef<>\n", 200<<10/19)
	js := `{"items":[` + strings.Repeat(`{"a": "x\u00e9y",  "b": [1, 2.5, null]}, `, 4000) + `{}]}`
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write([]byte(text))
	zw.Close()
	for _, tc := range []struct {
		name    string
		ctype   string
		body    string
		gzip    bool
		chunked bool
		limit   int // max_response_bytes; 0: the default
		lent    bool
	}{
		{name: "large, known length", ctype: "text/plain", body: text, lent: true},
		{name: "large, unknown length", ctype: "text/plain", body: text, chunked: true, lent: true},
		{name: "small, known length", ctype: "text/plain", body: "hello"},
		{name: "small, unknown length", ctype: "text/plain", body: "hello", chunked: true},
		{name: "one chunk exactly, unknown length", ctype: "text/plain", body: strings.Repeat("c", bodyChunk), chunked: true, lent: true},
		// A cut text has a note appended: a copy.
		{name: "cut, known length", ctype: "text/plain", body: text, limit: 100000},
		{name: "cut, unknown length", ctype: "text/plain", body: text, chunked: true, limit: 100000},
		{name: "cut within a chunk", ctype: "text/plain", body: text, chunked: true, limit: 1000},
		{name: "limit is the length", ctype: "text/plain", body: text, limit: len(text), lent: true},
		{name: "gzip", ctype: "text/plain", body: zipped.String(), gzip: true, lent: true},
		{name: "json", ctype: "application/json", body: js, chunked: true, lent: true},
		{name: "invalid utf-8", ctype: "text/plain", body: text + "\xff\xfe" + text}, // replaced: a copy
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				if tc.gzip {
					w.Header().Set("Content-Encoding", "gzip")
				}
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(tc.body)))
					w.Write([]byte(tc.body))
					return
				}
				w.Write([]byte(tc.body[:len(tc.body)/3]))
				w.(http.Flusher).Flush()
				w.Write([]byte(tc.body[len(tc.body)/3:]))
			})
			src := backendSrc + "http {\n  backend = \"api\"\n  path = \"/b\"\n"
			if tc.gzip {
				src += "  headers = { Accept-Encoding = \"gzip\" }\n"
			}
			if tc.limit > 0 {
				src += "  max_response_bytes = " + strconv.Itoa(tc.limit) + "\n"
			}
			h := compile(t, src+"}", srv.URL, nil)
			plain, err := call(h, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			l := resultbuf.NewPool().Lease()
			out, err := adaptertest.Call(resultbuf.With(context.Background(), l), h, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The headers are the two responses' own (Date may differ).
			delete(out.Vars, "headers")
			delete(plain.Vars, "headers")
			if out.Text != plain.Text || !reflect.DeepEqual(out.Structured, plain.Structured) || !reflect.DeepEqual(out.Vars, plain.Vars) {
				t.Fatalf("lent: text of %d bytes, structured %v; without: %d bytes, structured %v",
					len(out.Text), out.Structured != nil, len(plain.Text), plain.Structured != nil)
			}
			if len(out.Text) > 0 {
				inLent := l.Lent(unsafe.Slice(unsafe.StringData(out.Text), len(out.Text)))
				if inLent != tc.lent {
					t.Errorf("the text is in a lent buffer: %v, want %v", inLent, tc.lent)
				}
			}
		})
	}
}
