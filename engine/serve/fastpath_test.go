package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The stateless fast path (fastpath.go) must answer exactly as the SDK
// does. Each request below goes to two handlers of one server, the fast
// path on and off, and the answers (status, headers, body) must be equal
// byte for byte, except the requestState of input_required results, which
// is sealed with a fresh nonce each time. The call events (audit log,
// console) must be equal too. The corpus: every tool of the conformance
// fixtures, of the examples that load without a database, and of the
// serve tests' config, with arguments made from each schema, and a set of
// malformed and hostile requests.

// diffPair is one server behind the two handlers.
type diffPair struct {
	fast, sdk http.Handler
	mu        sync.Mutex
	events    []string // the call events, one line each
	served    map[string]int
}

func newDiffPair(t testing.TB, cur *snapshot.Current, jsonResponse bool) *diffPair {
	p := &diffPair{served: map[string]int{}}
	srv := serve.New(cur, serve.Options{Logger: quiet, ListTTL: 5 * time.Second, OnCall: func(ev *event.Call) {
		d := ev.Detail
		line := fmt.Sprintf("%s %s %s %s ir=%v %+v", ev.Method, ev.Kind, ev.Name, ev.Outcome, ev.InputRequired, d)
		p.mu.Lock()
		p.events = append(p.events, line)
		p.mu.Unlock()
	}})
	opts := serve.HTTPOptions{JSONResponse: jsonResponse, MaxBody: 1 << 20}
	p.fast = srv.HTTPHandler(opts)
	serve.OnFastPath(p.fast, func(method string) {
		p.mu.Lock()
		p.served[method]++
		p.mu.Unlock()
	})
	opts.NoFastPath, opts.NoLegacyFastPath = true, true
	p.sdk = srv.HTTPHandler(opts)
	return p
}

// lastEvent takes the event the last request produced, if any.
func (p *diffPair) takeEvents() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := p.events
	p.events = nil
	return ev
}

// wireRequest is one HTTP request of the corpus.
type wireRequest struct {
	name   string
	header http.Header
	body   string
	length int64  // -1: unknown (chunked)
	path   string // "": /mcp
}

func (w wireRequest) build() *http.Request {
	path := w.path
	if path == "" {
		path = "/mcp"
	}
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(w.body))
	// A request neither path answers (a call that parks) ends here, for
	// both alike, rather than hanging the test.
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	_ = cancel // ends with the timeout
	r = r.WithContext(ctx)
	r.Host = "127.0.0.1:8080"
	r.Header = w.header.Clone()
	if w.length != 0 {
		r.ContentLength = w.length
	}
	return r
}

// answer is what a handler answered, for comparing.
type answer struct {
	status int
	header http.Header
	body   string
}

var requestState = regexp.MustCompile(`"requestState":"[^"]*"`)

func serveOnce(h http.Handler, w wireRequest) answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, w.build())
	body := requestState.ReplaceAllString(rec.Body.String(), `"requestState":"<sealed>"`)
	return answer{status: rec.Code, header: rec.Header(), body: body}
}

// compare sends w to both handlers and reports a difference.
func (p *diffPair) compare(t *testing.T, w wireRequest) {
	t.Helper()
	p.takeEvents()
	fast := serveOnce(p.fast, w)
	fastEvents := p.takeEvents()
	sdk := serveOnce(p.sdk, w)
	sdkEvents := p.takeEvents()
	if fast.status != sdk.status || fast.body != sdk.body || !sameHeader(fast.header, sdk.header) {
		t.Errorf("%s: the fast path answers\n  %d %v\n  %s\nthe SDK\n  %d %v\n  %s\nrequest %v\n  %s",
			w.name, fast.status, fast.header, fast.body, sdk.status, sdk.header, sdk.body, w.header, w.body)
	}
	if strings.Join(fastEvents, "\n") != strings.Join(sdkEvents, "\n") {
		t.Errorf("%s: call events differ:\nfast %q\nsdk  %q", w.name, fastEvents, sdkEvents)
	}
}

func sameHeader(a, b http.Header) bool {
	keys := func(h http.Header) string {
		var out []string
		for k, v := range h {
			out = append(out, k+"="+strings.Join(v, "|"))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	return keys(a) == keys(b)
}

// richCaps declares every capability a tool may ask through.
const richCaps = `"clientCapabilities":{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{"listChanged":true}}`

const meta26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func modernHeader(method, name string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return h
}

func callBody(id, name, args string) string {
	params := meta26 + `,"name":` + strconv.Quote(name)
	if args != "" {
		params += `,"arguments":` + args
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
}

func readRequest(name, id, uri string) wireRequest {
	return wireRequest{name: name, header: modernHeader("resources/read", uri),
		body: `{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{` + meta26 + `,"uri":` + strconv.Quote(uri) + `}}`}
}

func promptRequest(name, id, prompt, args string) wireRequest {
	params := meta26 + `,"name":` + strconv.Quote(prompt)
	if args != "" {
		params += `,"arguments":` + args
	}
	return wireRequest{name: name, header: modernHeader("prompts/get", prompt),
		body: `{"jsonrpc":"2.0","id":` + id + `,"method":"prompts/get","params":{` + params + `}}`}
}

// argsFor makes arguments for a tool from its schema: each property with a
// value of its type (an enum's first value), all of them, and none.
func argsFor(t *snapshot.Tool) []string {
	out := []string{"", "{}", `{"zz_unknown":1}`}
	schema, _ := json.Marshal(t.Def.InputSchema)
	var s struct {
		Properties map[string]struct {
			Type    any   `json:"type"`
			Enum    []any `json:"enum"`
			Default any   `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	all := map[string]any{}
	wrong := map[string]any{}
	for name, p := range s.Properties {
		var v any
		typ, _ := p.Type.(string)
		switch {
		case len(p.Enum) > 0:
			v = p.Enum[0]
		case p.Default != nil:
			v = p.Default
		case typ == "string":
			v = "a value with \"quotes\", <html> & ünïcode"
		case typ == "integer":
			v = 3
		case typ == "number":
			v = 2.5
		case typ == "boolean":
			v = true
		case typ == "array":
			v = []any{}
		case typ == "object":
			v = map[string]any{}
		default:
			v = "x"
		}
		all[name] = v
		if len(wrong) == 0 {
			// One wrong value: the validator reports the first it
			// meets, in an order of its own.
			wrong[name] = []any{1, "two", nil}
		}
	}
	if len(all) > 0 {
		b, _ := json.Marshal(all)
		out = append(out, string(b))
		b, _ = json.Marshal(wrong)
		out = append(out, string(b))
	}
	return out
}

func loadDirs(t testing.TB, reg *adapter.Registry, dirs ...string) *snapshot.Current {
	t.Helper()
	l := loader.Load(dirs, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("%v does not load: %v", dirs, l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	return cur
}

// hostile is the corpus of requests that are malformed, unusual or
// hostile, around a call of tool (hostile_test.go).
func hostile(tool string) []wireRequest {
	return hostileCorpus(tool, callEra{
		header: modernHeader,
		call:   callBody,
		meta:   func(sep string) string { return meta26 + sep },
	}, modernOwn)
}

// modernOwn are the hostile requests of the 2026-07-28 era only: its
// routing headers, its _meta, server/discover and a stateless ping.
func modernOwn(c *corpus) {
	tool, ok, h, with, add := c.tool, c.ok, c.h, c.with, c.add
	add("name mismatch", with("Mcp-Name", "other"), ok)
	add("name missing", with("Mcp-Name", ""), ok)
	add("method mismatch", with("Mcp-Method", "tools/list"), ok)
	add("method header missing", with("Mcp-Method", ""), ok)
	add("version header old", with("Mcp-Protocol-Version", "2025-11-25"), ok)
	add("version header unknown", with("Mcp-Protocol-Version", "2027-01-01"), ok)
	add("meta version old", h(), strings.Replace(ok, `"protocolVersion":"2026-07-28"`, `"protocolVersion":"2025-06-18"`, 1))
	add("meta version number", h(), strings.Replace(ok, `"protocolVersion":"2026-07-28"`, `"protocolVersion":20260728`, 1))
	add("no meta", h(), `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"`+tool+`"}}`)
	add("no caps", h(), strings.Replace(ok, `,"io.modelcontextprotocol/clientCapabilities":{}`, "", 1))
	add("null caps", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":null`, 1))
	add("bad caps", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{"elicitation":"yes"}`, 1))
	add("caps", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{}}`, 1))
	add("caps with number", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{"experimental":{"n":1}}`, 1))
	add("client info", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`, 1))
	add("bad client info", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":true}`, 1))
	// Again, and the same values written otherwise: what the fast path
	// read of them is kept by their bytes (fastmeta.go).
	add("bad caps again", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{"elicitation":"yes"}`, 1))
	add("bad caps spaced", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{ "elicitation" : "yes" }`, 1))
	add("caps again", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{}}`, 1))
	add("caps spaced", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities": { "sampling" : { } } `, 1))
	add("client info again", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`, 1))
	add("bad client info again", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":true}`, 1))
	add("client info with escapes", h(), strings.Replace(ok, `"clientCapabilities":{}`, `"clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c\u0041","version":"1"}`, 1))
	add("progress token", h(), strings.Replace(ok, `"_meta":{`, `"_meta":{"progressToken":"p1",`, 1))
	add("log level", h(), strings.Replace(ok, `"_meta":{`, `"_meta":{"io.modelcontextprotocol/logLevel":"debug",`, 1))
	add("client label", h(), strings.Replace(ok, `"_meta":{`, `"_meta":{"mcpd/client":"bench",`, 1))
	add("request state", h(), strings.Replace(ok, `"name":`, `"requestState":"junk","name":`, 1))
	add("input responses", h(), strings.Replace(ok, `"name":`, `"inputResponses":{"a":{"action":"accept"}},"name":`, 1))
	add("session id", with("Mcp-Session-Id", "abc"), ok)
	list := func(body string) { add("list "+body, modernHeader("tools/list", ""), body) }
	list(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `}}`)
	list(`{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{` + meta26 + `,"cursor":"MQ"}}`)
	list(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `,"cursor":"bad cursor"}}`)
	list(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `,"cursor":"OTk5OTk"}}`)
	list(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	list(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `,"name":"x"}}`)
	add("list named", modernHeader("tools/list", tool), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta26+`}}`)
	add("list as call", modernHeader("tools/list", ""), ok)
	disc := func(name, body string) { add("discover "+name, modernHeader("server/discover", ""), body) }
	disc("plain", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta26+`}}`)
	disc("no params", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`)
	disc("empty params", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`)
	disc("cursor", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta26+`,"cursor":"x"}}`)
	disc("client info", `{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{`+strings.Replace(meta26, `"clientCapabilities":{}`, `"clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`, 1)+`}}`)
	disc("old meta", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+strings.Replace(meta26, "2026-07-28", "2025-11-25", 1)+`}}`)
	add("ping", modernHeader("ping", ""), `{"jsonrpc":"2.0","id":1,"method":"ping","params":{`+meta26+`}}`)
	add("notification", modernHeader("notifications/initialized", ""), `{"jsonrpc":"2.0","method":"notifications/initialized","params":{`+meta26+`}}`)
}

// largeConfig has tools whose results have texts of spliceMin or more.
const largeConfig = `
tool "large_text" {
  fake {
    mode = "large"
  }
  icon {
    src   = "https://example.com/i.png?a=1&b=<2>"
    sizes = ["48x48", "any"]
    theme = "dark"
  }
}
tool "large_structured" {
  fake {
    mode = "large_structured"
  }
}
tool "large_and_small" {
  fake {
    mode = "large"
  }
  result {
    content "text" {
      text = "a second <&> block"
    }
    content "text" {
      text = "and a third"
    }
  }
}
tool "large_error" {
  fake {
    mode = "large"
  }
  result {
    error_when    = "true"
    error_message = "repeat('<&>\\n\u2028 ', 4000)"
  }
}
tool "large_expr_text" {
  fake {
    mode = "large_structured"
  }
  result {
    text = "repeat('<é>&\\n', 9000)"
  }
}
`

// skipTool: tools whose calls change the server (the list triggers) or
// depend on time or on what runs beside them.
func skipTool(name string) bool {
	return strings.Contains(name, "trigger") || strings.Contains(name, "progress") || strings.Contains(name, "streaming")
}

func TestFastPathDifferential(t *testing.T) {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	configs := []struct {
		name string
		cur  func(t *testing.T) *snapshot.Current
	}{
		{"conformance", func(t *testing.T) *snapshot.Current { return loadDirs(t, reg, "../../examples/conformance") }},
		{"git", func(t *testing.T) *snapshot.Current { return loadDirs(t, reg, "../../examples/git") }},
		{"serve tests", func(t *testing.T) *snapshot.Current {
			e := newEnv(t)
			e.fake.releaseAll() // its slow tool returns at once
			return e.cur
		}},
		// Results the fast path writes without encoding them whole
		// (fastwrite.go).
		{"large results", func(t *testing.T) *snapshot.Current { return newEnvConfig(t, largeConfig).cur }},
		{"relaying tools", func(t *testing.T) *snapshot.Current { return newEnvConfig(t, relayConfig).cur }}, // fastrelay_test.go
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			cur := cfg.cur(t)
			for _, jsonResponse := range []bool{false, true} {
				p := newDiffPair(t, cur, jsonResponse)
				tools := cur.Load().Tools
				for i, tool := range tools {
					name := tool.Def.Name
					if skipTool(name) {
						continue
					}
					for j, args := range argsFor(tool) {
						p.compare(t, wireRequest{name: fmt.Sprintf("%s json=%v args %s", name, jsonResponse, args),
							header: modernHeader("tools/call", name), body: callBody(strconv.Itoa(i*10+j), name, args)})
					}
					// Capabilities that tools which ask read (fastmeta.go), twice:
					// read by the SDK, then from the fast path's cache.
					for k := range 2 {
						body := strings.Replace(callBody(strconv.Itoa(i*10+k), name, argsFor(tool)[0]), `"clientCapabilities":{}`, richCaps, 1)
						p.compare(t, wireRequest{name: fmt.Sprintf("%s json=%v caps %d", name, jsonResponse, k), header: modernHeader("tools/call", name), body: body})
					}
				}
				snap := cur.Load()
				for i, r := range snap.Resources {
					p.compare(t, readRequest(fmt.Sprintf("read %s json=%v", r.Def.URI, jsonResponse), strconv.Itoa(i), r.Def.URI))
				}
				for i, tmpl := range snap.Templates {
					uri := regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(tmpl.Def.URITemplate, "42")
					p.compare(t, readRequest(fmt.Sprintf("read %s json=%v", uri, jsonResponse), strconv.Itoa(i), uri))
					bad := regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(tmpl.Def.URITemplate, "a%2Fb..")
					p.compare(t, readRequest(fmt.Sprintf("read %s json=%v", bad, jsonResponse), strconv.Itoa(i), bad))
				}
				p.compare(t, readRequest("read unknown", "7", "test://no/such/resource"))
				for i, pr := range snap.Prompts {
					name := pr.Def.Name
					if skipTool(name) {
						continue
					}
					all := map[string]string{}
					for _, a := range pr.Def.Arguments {
						all[a.Name] = "value <&> of " + a.Name
					}
					b, _ := json.Marshal(all)
					for j, args := range []string{"", "{}", string(b), `{"zz":"1"}`, `{"n":1}`} {
						p.compare(t, promptRequest(fmt.Sprintf("prompt %s json=%v args %s", name, jsonResponse, args), strconv.Itoa(i*10+j), name, args))
					}
				}
				p.compare(t, promptRequest("prompt unknown", "8", "no_such_prompt", ""))
				if len(tools) > 0 {
					for _, w := range hostile(tools[0].Def.Name) {
						w.name = fmt.Sprintf("%s json=%v", w.name, jsonResponse)
						p.compare(t, w)
					}
				}
				p.mu.Lock()
				if p.served["tools/call"] == 0 || p.served["tools/list"] == 0 || p.served["server/discover"] == 0 ||
					(len(snap.Resources) > 0 && p.served["resources/read"] == 0) || (len(snap.Prompts) > 0 && p.served["prompts/get"] == 0) ||
					(cfg.name == "large results" && p.served[serve.MethodLargeResult] < 5) {
					t.Errorf("the fast path served %v: the corpus does not reach it", p.served)
				}
				p.mu.Unlock()
			}
		})
	}
}

// TestFastPathDifferentialToolsets sends the same corpus to a toolset's
// path: what is in the toolset, what is outside it (answered as unknown),
// its list and its discover, each as the SDK endpoint of that toolset
// answers.
func TestFastPathDifferentialToolsets(t *testing.T) {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	cur := loadDirs(t, reg, "../../examples/toolsets")
	snap := cur.Load()
	for _, jsonResponse := range []bool{false, true} {
		p := newDiffPair(t, cur, jsonResponse)
		for _, path := range []string{"/mcp/support", "/mcp/triage", "/mcp"} {
			send := func(name string, w wireRequest) {
				w.name, w.path = fmt.Sprintf("%s %s json=%v", path, name, jsonResponse), path
				p.compare(t, w)
			}
			for i, tool := range snap.Tools {
				for j, args := range argsFor(tool) {
					send("call "+tool.Def.Name+" "+args, wireRequest{header: modernHeader("tools/call", tool.Def.Name), body: callBody(strconv.Itoa(i*10+j), tool.Def.Name, args)})
				}
			}
			for i, r := range snap.Resources {
				send("read "+r.Def.URI, readRequest("", strconv.Itoa(i), r.Def.URI))
			}
			for i, pr := range snap.Prompts {
				send("prompt "+pr.Def.Name, promptRequest("", strconv.Itoa(i), pr.Def.Name, "{}"))
			}
			send("list", wireRequest{header: modernHeader("tools/list", ""), body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `}}`})
			send("discover", wireRequest{header: modernHeader("server/discover", ""), body: `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + meta26 + `}}`})
		}
		p.mu.Lock()
		if p.served["tools/call"] == 0 || p.served["tools/list"] == 0 || p.served["server/discover"] == 0 {
			t.Errorf("the fast path served %v: the corpus does not reach it", p.served)
		}
		p.mu.Unlock()
	}
}

// TestFastPathTakes checks that the requests a 2026-07-28 client sends in
// the ordinary course are the ones the fast path serves, and that the rest
// reach the SDK.
func TestFastPathTakes(t *testing.T) {
	e := newEnv(t)
	e.fake.releaseAll()
	p := newDiffPair(t, e.cur, false)
	for _, tc := range []struct {
		w    wireRequest
		fast bool
	}{
		{wireRequest{header: modernHeader("tools/call", "zeta_greet"), body: callBody("1", "zeta_greet", `{"name":"x"}`)}, true},
		{wireRequest{header: modernHeader("tools/list", ""), body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `}}`}, true},
		{wireRequest{header: modernHeader("tools/call", "zeta_greet"), body: strings.Replace(callBody("1", "zeta_greet", `{}`), `"_meta":{`, `"_meta":{"progressToken":1,`, 1)}, false},
		{wireRequest{header: modernHeader("tools/call", "other"), body: callBody("1", "zeta_greet", `{}`)}, false},
	} {
		before := p.served["tools/call"] + p.served["tools/list"]
		rec := httptest.NewRecorder()
		p.fast.ServeHTTP(rec, tc.w.build())
		if got := p.served["tools/call"]+p.served["tools/list"] > before; got != tc.fast {
			t.Errorf("%s: served by the fast path: %v, want %v", tc.w.body, got, tc.fast)
		}
		if rec.Code == 0 || rec.Body.Len() == 0 {
			t.Errorf("%s: no answer", tc.w.body)
		}
	}
}

// FuzzFastPath sends a fuzzed body, Mcp-Name and Accept through both
// paths of one server and compares the answers, as
// TestFastPathDifferential does. The seeds are the differential corpus.
func FuzzFastPath(f *testing.F) {
	for _, w := range hostile("zeta_greet") {
		f.Add(w.body, w.header.Get("Mcp-Name"), w.header.Get("Accept"), w.header.Get("Mcp-Method"))
	}
	f.Add(callBody("1", "zeta_greet", `{"name":"fuzz"}`), "zeta_greet", "application/json, text/event-stream", "tools/call")
	f.Add(callBody("1", "mid_check", `{"n":-1}`), "mid_check", "application/json, text/event-stream", "tools/call")
	for _, w := range []wireRequest{promptRequest("", "1", "trip", `{"city":"Oslo"}`), readRequest("", "2", "docs://readme")} {
		f.Add(w.body, w.header.Get("Mcp-Name"), w.header.Get("Accept"), w.header.Get("Mcp-Method"))
	}
	e := newEnv(f)
	e.fake.releaseAll()
	pairs := []*diffPair{newDiffPair(f, e.cur, false), newDiffPair(f, e.cur, true)}
	f.Fuzz(func(t *testing.T, body, name, accept, method string) {
		// The methods the fast path serves: the others never reach it
		// (and a subscriptions/listen would park until its client left).
		switch method {
		case "tools/list", "server/discover", "prompts/get", "resources/read":
		default:
			method = "tools/call"
		}
		h := modernHeader(method, name)
		if accept != "" {
			h.Set("Accept", accept)
		}
		for _, p := range pairs {
			p.compare(t, wireRequest{name: "fuzz", header: h, body: body})
		}
	})
}

// TestFastPathDifferentialAuth is the differential test behind bearer
// authentication, as mcpd serve runs it: the principal of each token sees
// and calls what its scopes allow, its claims bind parameters, and the
// audit's principal is the same on both paths.
func TestFastPathDifferentialAuth(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(authzConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cur := loadDirs(t, authzRegistry(), dir)
	for _, jsonResponse := range []bool{false, true} {
		p := newDiffPair(t, cur, jsonResponse)
		p.fast = auth.RequireBearerToken(verifyToken, nil)(p.fast)
		p.sdk = auth.RequireBearerToken(verifyToken, nil)(p.sdk)
		for _, token := range []string{"tok-admin", "tok-acme", "tok-glob", "tok-none", "tok-bad", "tok-unknown", ""} {
			var reqs []wireRequest
			for i, tool := range cur.Load().Tools {
				if strings.HasPrefix(tool.Def.Name, "per_") || tool.Def.Name == "sleepy" {
					// Rate limits are state the first path's call
					// changes for the second; sleepy only sleeps.
					continue
				}
				for j, args := range argsFor(tool) {
					reqs = append(reqs, wireRequest{name: fmt.Sprintf("%s %s args %s", token, tool.Def.Name, args),
						header: modernHeader("tools/call", tool.Def.Name), body: callBody(strconv.Itoa(i*10+j), tool.Def.Name, args)})
				}
			}
			reqs = append(reqs, wireRequest{name: token + " list", header: modernHeader("tools/list", ""),
				body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `}}`})
			for _, w := range reqs {
				if token != "" {
					w.header.Set("Authorization", "Bearer "+token)
				}
				w.name = fmt.Sprintf("%s json=%v", w.name, jsonResponse)
				p.compare(t, w)
			}
		}
		if p.served["tools/call"] == 0 || p.served["tools/list"] == 0 {
			t.Errorf("the fast path served %v", p.served)
		}
	}
}
