package serve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// The fast path of 2025-11-25 sessions (fastlegacy.go) must answer exactly
// as the SDK does. Each request below goes to a session of each of two
// handlers of one server, the fast paths on and off, and the answers
// (status, headers, body) must be equal byte for byte, and the call events
// (audit log, console) too, with the sessions' ids, which differ, written
// <session>. What a tool received is in its answer: the corpus's "fast"
// tool echoes its arguments.

// legacyPair is a diffPair with a session open on each of its handlers.
type legacyPair struct {
	*diffPair
	fastSID, sdkSID string
	token           string // the bearer token the sessions were opened with
	// ready is serve.LegacyReady of the fast handler (before any wrapping)
	ready func(sid string) bool
}

const legacyVersion = "2025-11-25"

// newLegacyPair opens its sessions declaring no capabilities: none that a
// tool could ask through, so that a tool that asks fails at once on both
// paths rather than waiting for an answer.
func newLegacyPair(t testing.TB, cur *snapshot.Current, jsonResponse bool) *legacyPair {
	p := &legacyPair{diffPair: newDiffPair(t, cur, jsonResponse)}
	fast := p.fast
	p.ready = func(sid string) bool { return serve.LegacyReady(fast, sid) }
	p.open(t)
	return p
}

// open opens a session on each handler (initialize, then
// notifications/initialized) and waits until the fast handler's may be
// served on its fast path.
func (p *legacyPair) open(t testing.TB) {
	t.Helper()
	p.fastSID = openLegacy(t, p.fast, p.token)
	p.sdkSID = openLegacy(t, p.sdk, p.token)
	wait.Until(t, "the session is ready for the fast path", func() bool { return p.ready(p.fastSID) })
	p.takeEvents()
}

func legacyHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", legacyVersion)
	h.Set("Mcp-Session-Id", "$SID")
	return h
}

func openLegacy(t testing.TB, h http.Handler, token string) string {
	t.Helper()
	hdr := legacyHeader()
	hdr.Del("Mcp-Session-Id")
	hdr.Del("Mcp-Protocol-Version")
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	a := serveOnce(h, wireRequest{header: hdr, body: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"diff","version":"1"}}}`})
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %v %s", a.status, a.header, a.body)
	}
	hdr.Set("Mcp-Session-Id", sid)
	hdr.Set("Mcp-Protocol-Version", legacyVersion)
	if a := serveOnce(h, wireRequest{header: hdr, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", a.status, a.body)
	}
	return sid
}

// withSession returns w for the session sid: "$SID" in its headers replaced.
func withSession(w wireRequest, sid, token string) wireRequest {
	h := w.header.Clone()
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = strings.ReplaceAll(v, "$SID", sid)
		}
		h[k] = vs
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	w.header = h
	return w
}

// compare sends w to both sessions and reports a difference.
func (p *legacyPair) compare(t *testing.T, w wireRequest) {
	t.Helper()
	p.takeEvents()
	fast := serveOnce(p.fast, withSession(w, p.fastSID, p.token))
	fastEvents := strings.ReplaceAll(strings.Join(p.takeEvents(), "\n"), p.fastSID, "<session>")
	sdk := serveOnce(p.sdk, withSession(w, p.sdkSID, p.token))
	sdkEvents := strings.ReplaceAll(strings.Join(p.takeEvents(), "\n"), p.sdkSID, "<session>")
	if fast.status != sdk.status || fast.body != sdk.body || !sameHeader(fast.header, sdk.header) {
		t.Errorf("%s: the fast path answers\n  %d %v\n  %s\nthe SDK\n  %d %v\n  %s\nrequest %v\n  %s",
			w.name, fast.status, fast.header, fast.body, sdk.status, sdk.header, sdk.body, w.header, w.body)
	}
	if fastEvents != sdkEvents {
		t.Errorf("%s: call events differ:\nfast %q\nsdk  %q", w.name, fastEvents, sdkEvents)
	}
}

func legacyCall(id, name, args string) string {
	params := `"name":` + strconv.Quote(name)
	if args != "" {
		params += `,"arguments":` + args
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
}

// legacyHostile is the corpus of requests that are malformed, unusual or
// hostile, around a call of tool in a session (hostile_test.go).
func legacyHostile(tool string) []wireRequest {
	return hostileCorpus(tool, callEra{
		header: func(string, string) http.Header { return legacyHeader() },
		call:   legacyCall,
		meta:   func(string) string { return "" },
	}, legacyOwn)
}

// legacyOwn are the hostile requests of the 2025-11-25 era only: its
// sessions, its version headers and its _meta.
func legacyOwn(c *corpus) {
	tool, ok, h, with, add := c.tool, c.ok, c.h, c.with, c.add
	add("method first", h(), `{"method":"tools/call","params":{"name":"`+tool+`","arguments":{}},"id":3,"jsonrpc":"2.0"}`)
	add("marker name", h(), legacyCall("4", "mcpd.internal.list-changed", "{}"))
	add("empty meta", h(), strings.Replace(ok, `"name":`, `"_meta":{},"name":`, 1))
	add("null meta", h(), strings.Replace(ok, `"name":`, `"_meta":null,"name":`, 1))
	add("progress token", h(), strings.Replace(ok, `"name":`, `"_meta":{"progressToken":"p1"},"name":`, 1))
	add("client label", h(), strings.Replace(ok, `"name":`, `"_meta":{"mcpd/client":"diff"},"name":`, 1))
	add("modern meta", h(), strings.Replace(ok, `"name":`, meta26+`,"name":`, 1))
	add("modern meta version only", h(), strings.Replace(ok, `"name":`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":`, 1))
	add("log level meta", h(), strings.Replace(ok, `"name":`, `"_meta":{"io.modelcontextprotocol/logLevel":"debug"},"name":`, 1))
	add("version header 2025-06-18", with("Mcp-Protocol-Version", "2025-06-18"), ok)
	add("version header 2025-03-26", with("Mcp-Protocol-Version", "2025-03-26"), ok)
	add("version header 2024-11-05", with("Mcp-Protocol-Version", "2024-11-05"), ok)
	add("version header 2026", with("Mcp-Protocol-Version", "2026-07-28"), ok)
	add("version header unknown", with("Mcp-Protocol-Version", "2025-01-01"), ok)
	add("unknown session", with("Mcp-Session-Id", "no-such-session"), ok)
	two := h()
	two.Add("Mcp-Session-Id", "$SID")
	add("session id twice", two, ok)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":"l","method":"tools/list","params":{"cursor":"MQ"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"bad cursor"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"OTk5OTk"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta26 + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"cursor":"MQ"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"tools/call"}}`,
	} {
		add("other "+body, h(), body)
	}
}

// legacyCorpus is every tool of cur with arguments made from its schema.
func legacyCorpus(cur *snapshot.Current) []wireRequest {
	var out []wireRequest
	for i, tool := range cur.Load().Tools {
		name := tool.Def.Name
		if skipTool(name) || name == "slow" {
			continue
		}
		for j, args := range argsFor(tool) {
			out = append(out, wireRequest{name: fmt.Sprintf("%s args %s", name, args), header: legacyHeader(), body: legacyCall(strconv.Itoa(i*10+j), name, args)})
		}
	}
	return out
}

func TestLegacyFastPathDifferential(t *testing.T) {
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
			e.fake.releaseAll()
			return e.cur
		}},
		{"large results", func(t *testing.T) *snapshot.Current { return newEnvConfig(t, largeConfig).cur }},
		{"relaying tools", func(t *testing.T) *snapshot.Current { return newEnvConfig(t, relayConfig).cur }}, // fastrelay.go
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			cur := cfg.cur(t)
			for _, jsonResponse := range []bool{false, true} {
				p := newLegacyPair(t, cur, jsonResponse)
				reqs := legacyCorpus(cur)
				if tools := cur.Load().Tools; len(tools) > 0 {
					reqs = append(reqs, legacyHostile(tools[0].Def.Name)...)
				}
				for _, w := range reqs {
					w.name = fmt.Sprintf("%s json=%v", w.name, jsonResponse)
					p.compare(t, w)
				}
				p.mu.Lock()
				if p.served["legacy tools/call"] == 0 || p.served["legacy tools/list"] == 0 ||
					(cfg.name == "large results" && p.served[serve.MethodLargeResult] < 5) {
					t.Errorf("the fast path served %v: the corpus does not reach it", p.served)
				}
				p.mu.Unlock()
			}
		})
	}
}

// TestLegacyFastPathSessionState checks what depends on the session: a
// log level it set, a tool that asks, and its end (DELETE), each answered
// as the SDK answers.
func TestLegacyFastPathSessionState(t *testing.T) {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	cur := loadDirs(t, reg, "../../examples/conformance")
	p := newLegacyPair(t, cur, false)
	served := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.served["legacy tools/call"]
	}
	call := wireRequest{name: "call", header: legacyHeader(), body: legacyCall("5", "test_simple_text", "{}")}
	before := served()
	p.compare(t, call)
	if served() != before+1 {
		t.Fatalf("a plain call was not served on the fast path")
	}
	// A tool that asks its client: the SDK's, on both.
	before = served()
	p.compare(t, wireRequest{name: "asks", header: legacyHeader(), body: legacyCall("6", "test_elicitation", `{"message":"ok?"}`)})
	if served() != before {
		t.Errorf("a tool that asks was served on the fast path")
	}
	// Once the session set a log level, its calls are the SDK's: a
	// tool's records would travel on the POST's stream.
	p.compare(t, wireRequest{name: "set level", header: legacyHeader(), body: `{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"debug"}}`})
	before = served()
	p.compare(t, wireRequest{name: "call with a level", header: legacyHeader(), body: legacyCall("8", "test_tool_with_logging", "{}")})
	p.compare(t, call)
	if served() != before {
		t.Errorf("a call of a session with a log level was served on the fast path")
	}
	// The list is still served: it logs nothing.
	p.compare(t, wireRequest{name: "list", header: legacyHeader(), body: `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`})
	// A session ended by DELETE is unknown to both.
	del := legacyHeader()
	for _, h := range []struct {
		h   http.Handler
		sid string
	}{{p.fast, p.fastSID}, {p.sdk, p.sdkSID}} {
		r := withSession(wireRequest{header: del}, h.sid, "").build()
		r.Method = http.MethodDelete
		rec := httptest.NewRecorder()
		h.h.ServeHTTP(rec, r)
		if rec.Code != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", rec.Code, rec.Body)
		}
	}
	p.compare(t, call)
}

// TestLegacyFastPathTimeout checks the idle timeout the fast path keeps
// for the SDK: a session whose calls are all served on the fast path
// lives while a call runs, longer than the timeout, and ends once idle for
// the timeout.
func TestLegacyFastPathTimeout(t *testing.T) {
	e := newEnv(t)
	h := e.srv.HTTPHandler(serve.HTTPOptions{SessionTimeout: 200 * time.Millisecond})
	sid := openLegacy(t, h, "")
	wait.Until(t, "the session is ready for the fast path", func() bool { return serve.LegacyReady(h, sid) })
	hdr := withSession(wireRequest{header: legacyHeader()}, sid, "").header
	done := make(chan answer, 1)
	go func() { done <- serveOnce(h, wireRequest{header: hdr, body: legacyCall("1", "slow", "{}")}) }()
	<-e.fake.started
	// Held well past the timeout: the session must outlive it.
	deadline := time.Now().Add(600 * time.Millisecond)
	wait.Until(t, "three timeouts pass", func() bool { return time.Now().After(deadline) })
	if !serve.LegacyReady(h, sid) {
		t.Fatal("the session was closed while a call of it ran")
	}
	e.fake.releaseAll()
	if a := <-done; a.status != http.StatusOK || !strings.Contains(a.body, "released by the test") {
		t.Fatalf("the call: %d %s", a.status, a.body)
	}
	// Each request would keep it alive: what is watched is the session.
	wait.Until(t, "the idle session is closed", func() bool { return e.srv.SessionCount() == 0 })
	if a := serveOnce(h, wireRequest{header: hdr, body: legacyCall("2", "fast", "{}")}); a.status != http.StatusNotFound {
		t.Errorf("a call of the closed session: %d %s", a.status, a.body)
	}
}

// TestLegacyFastPathCancel checks notifications/cancelled, and an id used
// twice while in flight, on a call served on the fast path.
func TestLegacyFastPathCancel(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) { testLegacyCancel(t, jsonResponse) })
	}
}

func testLegacyCancel(t *testing.T, jsonResponse bool) {
	e := newEnv(t)
	defer e.fake.releaseAll()
	var got [2][2]answer // [fast path off, on][duplicate, cancelled call]
	for i, opts := range []serve.HTTPOptions{{NoLegacyFastPath: true, JSONResponse: jsonResponse}, {JSONResponse: jsonResponse}} {
		h := e.srv.HTTPHandler(opts)
		served := make(chan string, 8)
		serve.OnFastPath(h, func(m string) { served <- m })
		sid := openLegacy(t, h, "")
		if !opts.NoLegacyFastPath {
			wait.Until(t, "the session is ready for the fast path", func() bool { return serve.LegacyReady(h, sid) })
		}
		hdr := withSession(wireRequest{header: legacyHeader()}, sid, "").header
		done := make(chan answer, 1)
		go func() { done <- serveOnce(h, wireRequest{header: hdr, body: legacyCall("41", "slow", "{}")}) }()
		<-e.fake.started
		got[i][0] = serveOnce(h, wireRequest{header: hdr, body: legacyCall("41", "fast", "{}")})
		c := serveOnce(h, wireRequest{header: hdr, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41}}`})
		if c.status != http.StatusAccepted {
			t.Errorf("notifications/cancelled: %d %s", c.status, c.body)
		}
		if tool := <-e.fake.cancelled; tool != "slow" {
			t.Errorf("cancelled %q", tool)
		}
		got[i][1] = <-done
		if n := len(served); (n > 0) == opts.NoLegacyFastPath {
			t.Errorf("no legacy fast path=%v: %d requests served on the fast path", opts.NoLegacyFastPath, n)
		}
	}
	want := `{"jsonrpc":"2.0","id":41,"error":{"code":-32600,"message":"duplicate in-flight request ID 41"}}`
	if got[0][0].status != http.StatusBadRequest || got[0][0].body != want {
		t.Errorf("the SDK's answer to a duplicate id changed: %d %s", got[0][0].status, got[0][0].body)
	}
	for k, what := range []string{"a duplicate id", "the cancelled call"} {
		if a, b := got[1][k], got[0][k]; a.status != b.status || a.body != b.body || !sameHeader(a.header, b.header) {
			t.Errorf("%s: the fast path answers %d %v %s, the SDK %d %v %s", what, a.status, a.header, a.body, b.status, b.header, b.body)
		}
	}
}

// TestLegacyFastPathDifferentialAuth is the differential test behind
// bearer authentication: the sessions are the callers', and another
// caller's token on a session is refused as the SDK refuses it.
func TestLegacyFastPathDifferentialAuth(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(authzConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cur := loadDirs(t, authzRegistry(), dir)
	for _, jsonResponse := range []bool{false, true} {
		for _, token := range []string{"tok-admin", "tok-acme", "tok-glob", "tok-none"} {
			p := &legacyPair{diffPair: newDiffPair(t, cur, jsonResponse), token: token}
			fast := p.fast
			p.ready = func(sid string) bool { return serve.LegacyReady(fast, sid) }
			p.fast = auth.RequireBearerToken(verifyToken, nil)(p.fast)
			p.sdk = auth.RequireBearerToken(verifyToken, nil)(p.sdk)
			p.open(t)
			for i, tool := range cur.Load().Tools {
				if strings.HasPrefix(tool.Def.Name, "per_") || tool.Def.Name == "sleepy" {
					continue
				}
				for j, args := range argsFor(tool) {
					p.compare(t, wireRequest{name: fmt.Sprintf("%s %s args %s json=%v", token, tool.Def.Name, args, jsonResponse),
						header: legacyHeader(), body: legacyCall(strconv.Itoa(i*10+j), tool.Def.Name, args)})
				}
			}
			p.compare(t, wireRequest{name: token + " list", header: legacyHeader(), body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`})
			// Another caller on the session: the SDK's 403.
			other := legacyHeader()
			other.Set("Authorization", "Bearer tok-acme")
			if token == "tok-acme" {
				other.Set("Authorization", "Bearer tok-admin")
			}
			saved := p.token
			p.token = ""
			p.compare(t, wireRequest{name: token + " hijacked", header: other, body: legacyCall("3", cur.Load().Tools[0].Def.Name, "{}")})
			p.token = saved
			if p.served["legacy tools/call"] == 0 {
				t.Errorf("%s: the fast path served %v", token, p.served)
			}
		}
	}
}

// FuzzLegacyFastPath sends a fuzzed body, Accept and protocol version
// header through a session of each path and compares the answers, as
// TestLegacyFastPathDifferential does. The seeds are its corpus.
func FuzzLegacyFastPath(f *testing.F) {
	for _, w := range legacyHostile("zeta_greet") {
		f.Add(w.body, w.header.Get("Accept"), w.header.Get("Mcp-Protocol-Version"))
	}
	f.Add(legacyCall("1", "fast", `{"id":"fuzz"}`), "application/json, text/event-stream", legacyVersion)
	f.Add(legacyCall("1", "mid_check", `{"n":-1}`), "application/json, text/event-stream", legacyVersion)
	e := newEnv(f)
	e.fake.releaseAll()
	pairs := []*legacyPair{newLegacyPair(f, e.cur, false), newLegacyPair(f, e.cur, true)}
	f.Fuzz(func(t *testing.T, body, accept, version string) {
		h := legacyHeader()
		if accept != "" {
			h.Set("Accept", accept)
		}
		h.Set("Mcp-Protocol-Version", version)
		if strings.Contains(body, "slow") || strings.Contains(body, "progress") || strings.Contains(body, "logging") ||
			strings.Contains(body, "initialize") || strings.Contains(body, "subscribe") {
			// A call that blocks, a change of the session's state or a
			// second session: not what this compares.
			return
		}
		for _, p := range pairs {
			p.compare(t, wireRequest{name: "fuzz", header: h, body: body})
		}
	})
}
