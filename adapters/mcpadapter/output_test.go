package mcpadapter

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// messageLines passes the lines the SDK's stdio transport takes and skips
// the rest, whatever the reads' boundaries; a line that does not start
// like JSON is never buffered past its head.
func TestMessageLines(t *testing.T) {
	const (
		req   = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
		note  = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","progress":1}}`
		resp  = `{"jsonrpc":"2.0","id":"a","result":{}}`
		batch = `[` + req + `,` + note + `]`
	)
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, in, out string
		stray         []string // the heads logged
		strayLen      []int
	}{
		{"messages only", req + "\n" + note + "\n" + resp + "\n", req + "\n" + note + "\n" + resp + "\n", nil, nil},
		{"CRLF, blanks around, blank lines", "  " + req + " \r\n\r\n\n   \n" + resp, req + "\n" + resp + "\n", nil, nil},
		{"a banner and debug lines", "server v1 starting\n" + req + "\ndebug: x\n" + resp + "\n", req + "\n" + resp + "\n",
			[]string{"server v1 starting", "debug: x"}, []int{18, 8}},
		{"JSON that is not JSON-RPC", `{"level":"info","msg":"ready"}` + "\n" + `{"jsonrpc":"1.0","id":1,"method":"x"}` + "\n" + `{"jsonrpc":"2.0"}` + "\n" + req + "\n",
			req + "\n", []string{`{"level":"info","msg":"ready"}`, `{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0"}`}, []int{30, 37, 17}},
		{"not JSON though it starts like it", `{'jsonrpc': '2.0'}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/progress"` + "\n" + `[1, 2]` + "\n" + `[]` + "\n" + resp + "\n",
			resp + "\n", []string{`{'jsonrpc': '2.0'}`, `{"jsonrpc":"2.0","method":"notifications/progress"`, `[1, 2]`, `[]`}, []int{18, 50, 6, 2}},
		{"a batch", batch + "\n", batch + "\n", nil, nil},
		{"a long line that is not JSON", long + "\n" + req + "\n", req + "\n", []string{long[:strayLogBytes]}, []int{1 << 20}},
		{"a long line of blanks", strings.Repeat(" ", 1<<20) + "\n" + strings.Repeat("\t", 1<<20) + req + "\n", req + "\n", nil, nil},
		{"a last message without a line ending", "hi\n" + req, req + "\n", []string{"hi"}, []int{2}},
	} {
		for _, read := range []struct {
			name string
			r    func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"byte by byte", iotest.OneByteReader}} {
			t.Run(tc.name+", "+read.name, func(t *testing.T) {
				var heads []string
				var lens []int
				m := newMessageLines(io.NopCloser(read.r(strings.NewReader(tc.in))), 1<<20+100, func(head []byte, n int) {
					heads, lens = append(heads, string(head)), append(lens, n)
				})
				// Read as the SDK's decoder does, through the progress
				// scanner, which counts only what is passed on.
				var p pendingProgress
				got, err := io.ReadAll(&progressScanner{r: m, pending: &p})
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tc.out {
					t.Errorf("passed %q\nwant   %q", got, tc.out)
				}
				if strings.Join(heads, "|") != strings.Join(tc.stray, "|") || len(lens) != len(tc.strayLen) {
					t.Errorf("skipped %q %v\nwant    %q %v", heads, lens, tc.stray, tc.strayLen)
				}
				for i := range lens {
					if i < len(tc.strayLen) && lens[i] != tc.strayLen[i] {
						t.Errorf("skipped line %d of %d bytes, want %d", i, lens[i], tc.strayLen[i])
					}
				}
				want := strings.Count(tc.out, "notifications/progress")
				if strings.HasPrefix(tc.out, "[") {
					want = 0 // the scanner does not look into batches (upstreams send none)
				}
				if p.n["mcpd-1"] != want {
					t.Errorf("%d progress notifications counted, want %d", p.n["mcpd-1"], want)
				}
				if cap(m.line) > bigBuffer || cap(m.head) > strayLogBytes+64<<10 {
					t.Errorf("buffers kept: line %d, head %d", cap(m.line), cap(m.head))
				}
			})
		}
	}
}

// A line that starts like JSON and is longer than the bound ends the
// read (and the session) once the bound is passed, without buffering more.
func TestMessageLinesTooLong(t *testing.T) {
	in := io.MultiReader(strings.NewReader("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\""), endless{})
	m := newMessageLines(io.NopCloser(in), 1<<20, func([]byte, int) {})
	_, err := io.ReadAll(m)
	if err == nil || !strings.Contains(err.Error(), "a line over 1048576 bytes") {
		t.Fatalf("err %v", err)
	}
	if cap(m.line) > 2<<20 {
		t.Errorf("buffered %d bytes", cap(m.line))
	}
	if _, err2 := m.Read(make([]byte, 10)); !errors.Is(err2, err) && err2.Error() != err.Error() {
		t.Errorf("a read after the failure: %v", err2)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	copy(p, bytes.Repeat([]byte("y"), len(p)))
	return len(p), nil
}
