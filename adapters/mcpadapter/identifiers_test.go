package mcpadapter_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream lists reaches the gateway's clients' screens: a
// resource URI or name, a template, a prompt or its argument, a title.
// One with control characters or terminal escapes (or invisible and bidi
// characters) in any identifier is dropped, with a logged, counted reason;
// the upstream's good entries keep serving, and descriptions are served
// with such characters removed. Real parts: a misbehaving upstream of the
// test's own (this test binary, over stdio; an httptest server), both
// protocol eras, mcpd serving the gateway, and a go-sdk client.

// hostileEnv makes this test binary the hostile upstream over stdio.
const hostileEnv = "MCPD_TEST_HOSTILE_UPSTREAM"

// hostileListings are the upstream's listings, by method. Each bad entry
// is bad in one identifier only.
var hostileListings = map[string]any{
	"tools/list": map[string]any{"tools": []any{
		map[string]any{"name": "echo", "description": "Echoes.\x1b[2J Really\u202e.", "inputSchema": map[string]any{"type": "object"}},
		map[string]any{"name": "ech\x1bo", "inputSchema": map[string]any{"type": "object"}},
		map[string]any{"name": "titled", "title": "Echo\x1b]0;owned\x07", "inputSchema": map[string]any{"type": "object"}},
	}},
	"resources/list": map[string]any{"resources": []any{
		map[string]any{"uri": "files://good", "name": "good", "title": "Good one", "description": "A good\tresource,\nwith \x1b[31mcolour\x1b[0m."},
		map[string]any{"uri": "files://\x1b[31mred", "name": "red"},
		map[string]any{"uri": "files://new\nline", "name": "newline"},
		map[string]any{"uri": "files://named", "name": "evil\x1b]0;title\x07"},
		map[string]any{"uri": "files://c1", "name": "c1", "title": "x\u009b2J"},
		map[string]any{"uri": "files://bidi", "name": "abc\u202edcb"},
		map[string]any{"uri": "files://zw", "name": "zero\u200bwidth"},
		map[string]any{"uri": "files://mime", "name": "mime", "mimeType": "text/plain\r\nX-Evil: 1"},
		map[string]any{"uri": "files://icon", "name": "icon", "icons": []any{map[string]any{"src": "https://x/\x1b.png"}}},
		map[string]any{"uri": "", "name": "empty"},
	}},
	"resources/templates/list": map[string]any{"resourceTemplates": []any{
		map[string]any{"uriTemplate": "files://{name}", "name": "files"},
		map[string]any{"uriTemplate": "evil://{x}\x1b[2J", "name": "t2"},
		map[string]any{"uriTemplate": "t3://{x}", "name": "t\x073"},
	}},
	"prompts/list": map[string]any{"prompts": []any{
		map[string]any{"name": "greet", "description": "Greets\x1b[5m.", "arguments": []any{map[string]any{"name": "who", "description": "Who\x00."}}},
		map[string]any{"name": "bad\x1bprompt"},
		map[string]any{"name": "argy", "arguments": []any{map[string]any{"name": "w\x1b[0mho"}}},
		map[string]any{"name": "argtitle", "arguments": []any{map[string]any{"name": "who", "title": "W\u0085ho"}}},
	}},
	// Answers whose links, contents and values are checked the same way.
	"tools/call": map[string]any{"content": []any{
		map[string]any{"type": "text", "text": "echoed"},
		map[string]any{"type": "resource_link", "uri": "files://good", "name": "good", "description": "Linked\x1b[0m."},
		map[string]any{"type": "resource_link", "uri": "files://\x1b[2J", "name": "cleared"},
		map[string]any{"type": "resource_link", "uri": "files://named", "name": "x\x1b]8;;https://evil.example\x07click"},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "files://em\rbedded", "text": "e"}},
		map[string]any{"type": "image", "data": "AAAA", "mimeType": "image/png\x1b"},
	}},
	"prompts/get": map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Greet someone."}},
		map[string]any{"role": "user", "content": map[string]any{"type": "resource_link", "uri": "files://\u202egood", "name": "spoof"}},
	}},
	"resources/read": map[string]any{"contents": []any{
		map[string]any{"uri": "files://good", "text": "good text"},
		map[string]any{"uri": "files://\x1b]8;;https://evil.example\x07", "text": "linked"},
	}},
	"completion/complete": map[string]any{"completion": map[string]any{"values": []any{"alice", "bob\x1b[2J", "carol", "dave\u200b"}}},
}

// hostileAnswer is the upstream's answer to one JSON-RPC message (nil for
// a notification).
func hostileAnswer(msg []byte) []byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &req) != nil || len(req.ID) == 0 {
		return nil
	}
	caps := map[string]any{"tools": map[string]any{}, "resources": map[string]any{}, "prompts": map[string]any{}, "completions": map[string]any{}}
	var result any
	switch req.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": caps, "serverInfo": map[string]any{"name": "hostile", "version": "1"}}
	case "server/discover":
		result = map[string]any{"supportedVersions": []string{modern, legacy}, "capabilities": caps, "serverInfo": map[string]any{"name": "hostile", "version": "1"}, "resultType": "complete"}
	case "ping":
		result = map[string]any{}
	default:
		l, ok := hostileListings[req.Method]
		if !ok {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no such method"}})
			return b
		}
		m := map[string]any{"resultType": "complete"}
		for k, v := range l.(map[string]any) {
			m[k] = v
		}
		result = m
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	return b
}

// TestHostileUpstreamProcess is the hostile upstream over stdio when this
// test binary is started with hostileEnv set; otherwise it does nothing.
func TestHostileUpstreamProcess(t *testing.T) {
	if os.Getenv(hostileEnv) == "" {
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		if b := hostileAnswer(in.Bytes()); b != nil {
			os.Stdout.Write(append(b, '\n'))
		}
	}
}

// hostileHTTP is the hostile upstream over Streamable HTTP: one JSON
// answer per POST.
func hostileHTTP(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		msg, _ := io.ReadAll(r.Body)
		b := hostileAnswer(msg)
		if b == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// screenUnsafe reports whether s holds a character that no identifier
// may hold and no description keeps: a control character other than tab
// and newline (which a description may hold, and the listing checks rule
// out of identifiers), or a bidi override.
func screenUnsafe(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r < 0xa0 || r == '\u202e'
	})
}

func TestHostileIdentifiersDropped(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stdio := func(t *testing.T) string {
		return fmt.Sprintf("command = [%q, \"-test.run=^TestHostileUpstreamProcess$\", \"-test.count=1\"]\n  env = { %s = \"1\" }", exe, hostileEnv)
	}
	for _, tc := range []struct {
		name    string
		version string
		where   func(t *testing.T) string // the mcp_server block's transport attributes
	}{
		{"stdio 2025-11-25", legacy, stdio},
		{"stdio 2026-07-28", modern, stdio},
		{"http 2025-11-25", legacy, func(t *testing.T) string { return fmt.Sprintf("url = %q", hostileHTTP(t)) }},
		{"http 2026-07-28", modern, func(t *testing.T) string { return fmt.Sprintf("url = %q", hostileHTTP(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, cur := serveSnapshot(t, fmt.Sprintf(`
mcp_server "up" {
  %s
  protocol_version = %q
  expose {
    prefix    = "up_"
    resources = true
    prompts   = true
  }
}
`, tc.where(t), tc.version))
			listed(t, gw, "up_greet")
			cs := connect(t, gw, tc.version, nil, false)
			ctx := bounded(t)
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			resources, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			templates, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			prompts, err := cs.ListPrompts(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}

			var got []string
			check := func(kind string, v any, ids ...string) {
				b, _ := json.Marshal(v)
				var back any
				json.Unmarshal(b, &back)
				walkStrings(back, func(s string) {
					if screenUnsafe(s) {
						t.Errorf("%s %s reached the client with %q", kind, ids[0], s)
					}
				})
				got = append(got, kind+" "+strings.Join(ids, " "))
			}
			for _, x := range tools.Tools {
				check("tool", x, x.Name)
			}
			for _, x := range resources.Resources {
				check("resource", x, x.URI)
			}
			for _, x := range templates.ResourceTemplates {
				check("template", x, x.URITemplate)
			}
			for _, x := range prompts.Prompts {
				check("prompt", x, x.Name)
			}
			want := []string{"tool up_echo", "resource files://good", "template files://{name}", "prompt up_greet"}
			if !slices.Equal(got, want) {
				t.Errorf("the client got\n  %q\nwant\n  %q", got, want)
			}
			descs := map[string]string{}
			for _, x := range tools.Tools {
				descs[x.Name] = x.Description
			}
			for _, x := range resources.Resources {
				descs[x.URI] = x.Description
			}
			for _, x := range prompts.Prompts {
				descs[x.Name] = x.Description
				for _, a := range x.Arguments {
					descs[x.Name+"."+a.Name] = a.Description
				}
			}
			for k, want := range map[string]string{
				"up_echo":      "Echoes.[2J Really.",
				"files://good": "A good\tresource,\nwith [31mcolour[0m.",
				"up_greet":     "Greets[5m.",
				"up_greet.who": "Who.",
			} {
				if descs[k] != want {
					t.Errorf("description of %s = %q, want %q", k, descs[k], want)
				}
			}

			// What the answers carry.
			var answers []string
			answer := func(what string, v any) {
				b, _ := json.Marshal(v)
				var back any
				json.Unmarshal(b, &back)
				walkStrings(back, func(s string) {
					if screenUnsafe(s) || strings.Contains(s, "\u200b") {
						t.Errorf("%s reached the client with %q", what, s)
					}
				})
				answers = append(answers, string(b))
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up_echo"})
			if err != nil {
				t.Fatal(err)
			}
			answer("the tool's result", res.Content)
			pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "up_greet", Arguments: map[string]string{"who": "x"}})
			if err != nil {
				t.Fatal(err)
			}
			answer("the prompt's messages", pr.Messages)
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "files://good"})
			if err != nil {
				t.Fatal(err)
			}
			answer("the read's contents", rr.Contents)
			cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "up_greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: ""}})
			if err != nil {
				t.Fatal(err)
			}
			answer("the completion", cr.Completion.Values)
			for i, want := range []string{
				`[{"type":"text","text":"echoed"},{"type":"resource_link","uri":"files://good","name":"good","description":"Linked[0m."}]`,
				`[{"content":{"type":"text","text":"Greet someone."},"role":"user"}]`,
				`[{"uri":"files://good","text":"good text"}]`,
				`["alice","carol"]`,
			} {
				if answers[i] != want {
					t.Errorf("the client got\n  %s\nwant\n  %s", answers[i], want)
				}
			}
			if n := upstreamStatus(t, cur, "up").Dropped["identifier"]; n < 16+4+1+1+2 {
				t.Errorf("Dropped[identifier] = %d, want at least the 24 bad entries", n)
			}
		})
	}
}

// walkStrings calls f with every string in a decoded JSON value, keys
// included.
func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for k, e := range x {
			f(k)
			walkStrings(e, f)
		}
	}
}
