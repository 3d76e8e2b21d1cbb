package mcpadapter

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// nested is a JSON value n levels deep.
func nested(n int) string {
	return strings.Repeat(`{"x":`, n) + `1` + strings.Repeat(`}`, n)
}

// A message too deep for the SDK costs only what is too deep: a listing
// loses the entries, another answer becomes an error to its request, a
// notification or request is left out; anything else passes as it is.
func TestMendDeep(t *testing.T) {
	deepTool := `{"name":"deep","inputSchema":` + nested(sdkMaxDepth) + `}`
	for _, tc := range []struct {
		name, in string
		want     string // "": left out; "=": unchanged
		reported []string
	}{
		{"shallow", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`, "=", nil},
		{"at the limit", `{"jsonrpc":"2.0","id":1,"result":` + nested(sdkMaxDepth-1) + `}`, "=", nil},
		{"a tool too deep", `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},` + deepTool + `,{"name":"b"}],"nextCursor":"c"}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b"}],"nextCursor":"c"}}`, []string{"tool deep"}},
		{"every tool too deep", `{"jsonrpc":"2.0","id":"s","result":{"tools":[` + deepTool + `]}}`,
			`{"jsonrpc":"2.0","id":"s","result":{"tools":[]}}`, []string{"tool deep"}},
		{"a prompt too deep", `{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"p","_meta":` + nested(sdkMaxDepth) + `},{"name":"q"}]}}`,
			`{"jsonrpc":"2.0","id":2,"result":{"prompts":[{"name":"q"}]}}`, []string{"prompt p"}},
		{"a resource too deep", `{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"a://b","_meta":` + nested(sdkMaxDepth) + `}]}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"resources":[]}}`, []string{"resource a://b"}},
		{"a call's result", `{"jsonrpc":"2.0","id":4,"result":{"structuredContent":` + nested(sdkMaxDepth) + `}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"mcpd: the upstream's answer is nested more than 1000 levels deep"}}`, []string{"response "}},
		{"a listing deep elsewhere", `{"jsonrpc":"2.0","id":5,"result":{"tools":[],"_meta":` + nested(sdkMaxDepth) + `}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"mcpd: the upstream's answer is nested more than 1000 levels deep"}}`, []string{"response "}},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/message","params":` + nested(sdkMaxDepth) + `}`, "", []string{"message notifications/message"}},
		{"a request", `{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":` + nested(sdkMaxDepth) + `}`, "", []string{"message elicitation/create"}},
		{"brackets in strings", `{"jsonrpc":"2.0","id":1,"result":{"s":"` + strings.Repeat("[{", 2000) + `"}}`, "=", nil},
		{"not JSON-RPC", strings.Repeat("[", 1200), "", []string{"message "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reported []string
			got := mendDeep([]byte(tc.in), func(kind, name string) { reported = append(reported, kind+" "+name) })
			switch tc.want {
			case "=":
				if string(got) != tc.in {
					t.Errorf("changed: %.200s", got)
				}
			case "":
				if got != nil {
					t.Errorf("kept: %.200s", got)
				}
			default:
				if strings.TrimSpace(string(got)) != tc.want {
					t.Errorf("got  %.300s\nwant %s", got, tc.want)
				}
				// What the SDK reads of it.
				if _, err := jsonrpc.DecodeMessage(got); err != nil {
					t.Errorf("the SDK cannot decode it: %v", err)
				}
			}
			if strings.Join(reported, ",") != strings.Join(tc.reported, ",") {
				t.Errorf("reported %q, want %q", reported, tc.reported)
			}
		})
	}
}

// The readers mend each line (stdio), each event's data line (SSE) and a
// JSON body, read in any chunks; other lines pass as they are.
func TestDeepReaders(t *testing.T) {
	deepTool := `{"name":"deep","inputSchema":` + nested(sdkMaxDepth) + `}`
	listing := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},` + deepTool + `]}}`
	mended := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
	deepNote := `{"jsonrpc":"2.0","method":"notifications/message","params":` + nested(sdkMaxDepth) + `}`
	read := func(r io.Reader) string {
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	nop := func(string, string) {}

	in := note + "\n" + listing + "\n" + deepNote + "\n" + note
	want := note + "\n" + mended + "\n" + note
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(in)
		if chunked {
			r = iotest.OneByteReader(r)
		}
		if got := read(&deepLines{r: io.NopCloser(r), report: nop, max: 1 << 20}); got != want {
			t.Errorf("stdio (one byte at a time: %v):\ngot  %.300s\nwant %.300s", chunked, got, want)
		}
	}

	sse := "event: message\ndata: " + listing + "\n\nevent: message\ndata: " + deepNote + "\n\n"
	wantSSE := "event: message\ndata: " + mended + "\n\nevent: message\n\n"
	if got := read(&deepLines{r: io.NopCloser(iotest.HalfReader(strings.NewReader(sse))), report: nop, sse: true, max: 1 << 20}); got != wantSSE {
		t.Errorf("SSE:\ngot  %.300s\nwant %.300s", got, wantSSE)
	}

	// A line longer than max is passed on as it is (the SDK's own line
	// limit refuses it).
	long := `{"jsonrpc":"2.0","id":1,"result":{"s":"` + strings.Repeat("a", 5000) + `"}}` + "\n"
	if got := read(&deepLines{r: io.NopCloser(iotest.OneByteReader(strings.NewReader(long + note + "\n"))), report: nop, max: 100}); got != long+note+"\n" {
		t.Errorf("a long line: got %.200s", got)
	}

	got := read(&deepBody{r: io.NopCloser(iotest.OneByteReader(strings.NewReader(listing))), report: nop})
	var msg map[string]any
	if err := json.Unmarshal([]byte(got), &msg); err != nil || strings.TrimSpace(got) != mended {
		t.Errorf("JSON body: %.300s (%v)", got, err)
	}
}
