package console

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/reload"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// frame is one server-sent event as a page reads it.
type frame struct{ name, data string }

// reader reads events from a stream in the background.
func reader(t *testing.T, body io.Reader) <-chan frame {
	t.Helper()
	out := make(chan frame, 100)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(body)
		var f frame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				f.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.data = strings.TrimPrefix(line, "data: ")
			case line == "" && f.name != "":
				out <- f
				f = frame{}
			}
		}
	}()
	return out
}

func next(t *testing.T, frames <-chan frame) frame {
	t.Helper()
	select {
	case f, ok := <-frames:
		if !ok {
			t.Fatal("the stream ended")
		}
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no event in 5s")
	}
	return frame{}
}

func openStream(t *testing.T, url string) (*http.Response, <-chan frame) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp, reader(t, resp.Body)
}

func call(name, client string) *event.Call {
	return &event.Call{Time: time.Now(), Kind: "tool", Name: name, Duration: 1500 * time.Microsecond, Outcome: "ok",
		Detail: event.Detail{Target: name, Principal: "local", Client: client, Transport: "http"}}
}

// A page that opens the stream gets a hello, the current status and the
// recent calls oldest first, then every new status and call as it comes.
func TestEventStream(t *testing.T) {
	c := New(Options{Logger: quiet, RecentCalls: 2})
	c.SetStatus(StatusOf(reload.Status{Files: []string{"tools.hcl"}}))
	for _, n := range []string{"a", "b", "c"} { // a falls out of the ring
		c.Record(call(n, ""))
	}
	ts := httptest.NewServer(c.Handler("/ui/"))
	defer ts.Close()
	defer c.Close() // ends the stream, which ts.Close waits for
	_, frames := openStream(t, ts.URL+"/ui/events")

	if f := next(t, frames); f.name != "hello" {
		t.Fatalf("first event %v", f)
	}
	if f := next(t, frames); f.name != "status" || !strings.Contains(f.data, `"files":["tools.hcl"]`) || !strings.Contains(f.data, `"generation":1`) {
		t.Fatalf("status event %v", f)
	}
	for _, want := range []string{"b", "c"} {
		f := next(t, frames)
		var got Call
		if f.name != "call" || json.Unmarshal([]byte(f.data), &got) != nil || got.Name != want {
			t.Fatalf("recent call: %v, want %s", f, want)
		}
		if got.DurationMS != 1.5 {
			t.Errorf("duration_ms %v", got.DurationMS)
		}
	}

	c.Record(call("d", "console"))
	if f := next(t, frames); f.name != "call" || !strings.Contains(f.data, `"name":"d"`) || !strings.Contains(f.data, `"client":"console"`) {
		t.Fatalf("live call %v", f)
	}
	c.SetStatus(StatusOf(reload.Status{Reloads: 1, Err: "x", LastFailure: time.Now(),
		Diagnostics: []config.JSONDiagnostic{{Severity: "error", Summary: "Unsupported argument", File: "tools.hcl", Line: 3, Column: 3, Source: "  descripton = 1"}}}))
	f := next(t, frames)
	var st Status
	if f.name != "status" || json.Unmarshal([]byte(f.data), &st) != nil {
		t.Fatalf("live status %v", f)
	}
	if st.Generation != 2 || st.LastReload.Result != "failure" || len(st.LastReload.Diagnostics) != 1 || st.LastReload.Diagnostics[0].Source != "  descripton = 1" {
		t.Errorf("status %+v", st)
	}
}

// Recording never waits for a page: a subscriber that does not take its
// events is dropped once its queue is full, and the others keep theirs.
func TestSlowSubscriberDropped(t *testing.T) {
	c := New(Options{Logger: quiet, QueueSize: 4})
	slow, _, ok := c.subscribe()
	if !ok {
		t.Fatal("subscribe refused")
	}
	fast, _, _ := c.subscribe()
	taken := 0
	for i := range 10 {
		c.Record(call("t", ""))
		for len(fast.queue) > 0 {
			<-fast.queue
			taken++
		}
		if i < 4 {
			select {
			case <-slow.dropped:
				t.Fatalf("dropped after %d events with room for 4", i+1)
			default:
			}
		}
	}
	select {
	case <-slow.dropped:
	default:
		t.Fatal("a subscriber with a full queue was not dropped")
	}
	select {
	case <-fast.dropped:
		t.Fatal("a subscriber that keeps up was dropped")
	default:
	}
	if taken != 10 {
		t.Errorf("the fast subscriber got %d events, want 10", taken)
	}
	c.mu.Lock()
	n := len(c.subs)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d subscribers left, want 1", n)
	}
}

// Past MaxSubscribers a stream is refused with 503; Close ends the open
// ones (a shutdown does not wait for them) and refuses new ones.
func TestSubscriberLimitAndClose(t *testing.T) {
	c := New(Options{Logger: quiet, MaxSubscribers: 1})
	ts := httptest.NewServer(c.Handler("/ui/"))
	defer ts.Close()
	_, frames := openStream(t, ts.URL+"/ui/events")
	next(t, frames) // hello: subscribed

	resp, err := http.Get(ts.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second stream: %d, want 503", resp.StatusCode)
	}

	c.Close()
	select {
	case _, ok := <-frames:
		if ok {
			t.Error("an event after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the stream")
	}
	resp, err = http.Get(ts.URL + "/ui/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream after Close: %d, want 503", resp.StatusCode)
	}
}

// The page and its assets are embedded and served with a strict content
// security policy: no inline script, nothing from another origin.
func TestAssets(t *testing.T) {
	ts := httptest.NewServer(New(Options{Logger: quiet}).Handler("/ui/"))
	defer ts.Close()
	for _, tc := range []struct {
		path, typ, contains string
		status              int
	}{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="console.js">`, 200},
		{"/ui/console.js", "text/javascript; charset=utf-8", `"mcpd/client": "console"`, 200},
		{"/ui/console.css", "text/css; charset=utf-8", ":root", 200},
		{"/ui/nope.js", "", "", 404},
	} {
		resp, err := http.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d", tc.path, resp.StatusCode, tc.status)
			continue
		}
		if tc.status != 200 {
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != tc.typ {
			t.Errorf("%s: Content-Type %q, want %q", tc.path, got, tc.typ)
		}
		if !strings.Contains(string(body), tc.contains) {
			t.Errorf("%s lacks %q", tc.path, tc.contains)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
	}
}

// No asset reaches outside the binary: the console works offline.
func TestAssetsSelfContained(t *testing.T) {
	for _, name := range []string{"assets/index.html", "assets/console.js", "assets/console.css"} {
		b, err := assets.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "outerHTML", "insertAdjacentHTML", "eval("} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

func TestStatusOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	diag := []config.JSONDiagnostic{{Severity: "error", Summary: "x", File: "a.hcl", Line: 2, Column: 1}}
	for _, tc := range []struct {
		name   string
		in     reload.Status
		gen    int
		result string
		diags  int
	}{
		{"first load", reload.Status{LastOK: at}, 1, "none", 0},
		{"reloaded", reload.Status{Reloads: 2, LastOK: at}, 3, "success", 0},
		{"failed", reload.Status{Reloads: 2, LastOK: at, Err: "x", LastFailure: at.Add(time.Minute), Diagnostics: diag}, 3, "failure", 1},
		// A later success clears Err: stale diagnostics are not shown.
		{"fixed", reload.Status{Reloads: 3, LastOK: at.Add(2 * time.Minute), Diagnostics: diag}, 4, "success", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := StatusOf(tc.in)
			if s.Generation != tc.gen || s.LastReload.Result != tc.result || len(s.LastReload.Diagnostics) != tc.diags {
				t.Errorf("%+v", s)
			}
			if (s.LastReload.Time == nil) != (tc.result == "none") {
				t.Errorf("last reload time %v for %s", s.LastReload.Time, tc.result)
			}
			b, _ := json.Marshal(s)
			if !strings.Contains(string(b), `"diagnostics":[`) || !strings.Contains(string(b), `"files":[`) {
				t.Errorf("lists must encode as arrays, not null: %s", b)
			}
		})
	}
}

func TestRing(t *testing.T) {
	for _, tc := range []struct {
		size, adds int
		want       []string
	}{
		{3, 0, nil},
		{3, 2, []string{"0", "1"}},
		{3, 3, []string{"0", "1", "2"}},
		{3, 5, []string{"2", "3", "4"}},
		{1, 4, []string{"3"}},
	} {
		r := newRing[[]byte](tc.size)
		for i := range tc.adds {
			r.add([]byte{byte('0' + i)})
		}
		var got []string
		r.each(func(b []byte) { got = append(got, string(b)) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("size %d, %d adds: %v, want %v", tc.size, tc.adds, got, tc.want)
		}
	}
}

// BenchmarkRecord is the console's share of one call with --ui on: encode
// the record, keep it, queue it for one open page.
func BenchmarkRecord(b *testing.B) {
	c := New(Options{Logger: quiet, QueueSize: 1 << 20})
	s, _, _ := c.subscribe()
	go func() {
		for range s.queue {
		}
	}()
	rec := call("list_books", "")
	b.ReportAllocs()
	for b.Loop() {
		c.Record(rec)
	}
}

// logLines collects log output.
type logLines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// A page that stops reading its stream is closed by the write deadline,
// before its queue fills: a blocked write does not hold its stream open.
func TestStuckReaderClosedByWriteDeadline(t *testing.T) {
	logs := &logLines{}
	c := New(Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		QueueSize: 1 << 20, WriteTimeout: 50 * time.Millisecond})
	ts := httptest.NewServer(c.Handler("/ui/"))
	defer ts.Close()
	defer c.Close()

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /ui/events HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	subscribers := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.subs)
	}
	deadline := time.Now().Add(5 * time.Second)
	for subscribers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream never subscribed")
		}
		time.Sleep(time.Millisecond)
	}
	// Calls with long error texts, paced so that the queue never fills:
	// only a write that blocks can end the stream.
	rec := call("big", "")
	rec.Error = strings.Repeat("x", 4096)
	for sent := 0; subscribers() > 0; sent++ {
		if time.Now().After(deadline) {
			t.Fatalf("a client that reads nothing is still subscribed after %d events", sent)
		}
		c.Record(rec)
		if sent%100 == 99 {
			time.Sleep(time.Millisecond)
		}
	}
	if strings.Contains(logs.String(), "does not keep up") {
		t.Errorf("dropped for a full queue, not by the write deadline:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "closing an event stream") {
		t.Errorf("no log of the closed stream:\n%s", logs.String())
	}
}

// What a page is sent of one call, by who made it and who watches: its
// own calls in full; another's, without who made it nor its error, and
// only when the page's principal may see what was called. The local
// user's page (no auth) is no exception for an authenticated caller's
// call (an auth block added by a reload while it was open).
func TestRecordData(t *testing.T) {
	alice := &principal.Principal{Name: "alice", Method: "api_key", Scopes: []string{"read"}}
	aliceOAuth := &principal.Principal{Name: "alice", Method: "oauth", Scopes: []string{"read"}}
	bob := &principal.Principal{Name: "bob", Method: "api_key", Scopes: []string{"read", "admin"}}
	open := [][]string{nil}
	admin := [][]string{{"admin"}}
	for _, tc := range []struct {
		name   string
		caller *principal.Principal
		sets   [][]string
		page   *principal.Principal
		want   string // "full", "anon" or ""
	}{
		{"local, local page", nil, open, nil, "full"},
		{"local unknown name, local page", nil, nil, nil, "full"},
		{"own call", alice, open, alice, "full"},
		{"own call to a name not declared", alice, nil, alice, "full"},
		{"another's call", bob, open, alice, "anon"},
		{"same name, other method", aliceOAuth, open, alice, "anon"},
		{"another's call, out of scope", bob, admin, alice, ""},
		{"another's call, in scope", alice, admin, bob, "anon"},
		{"another's call to a name not declared", bob, nil, alice, ""},
		{"a principal's call, local page", bob, admin, nil, "anon"},
		{"a resource two templates answer", bob, [][]string{{"admin"}, {"read"}}, alice, "anon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &record{call: Call{Name: "x", Principal: "p", Client: "c", Error: "e"}, full: []byte("full"), caller: tc.caller, sets: tc.sets}
			got := r.data(tc.page)
			switch tc.want {
			case "full":
				if string(got) != "full" {
					t.Errorf("got %s, want the full call", got)
				}
			case "anon":
				var c Call
				if json.Unmarshal(got, &c) != nil || !c.Other || c.Principal != "" || c.Client != "" || c.Error != "" || c.Name != "x" {
					t.Errorf("got %s, want the call without who made it", got)
				}
			default:
				if got != nil {
					t.Errorf("got %s, want nothing", got)
				}
			}
		})
	}
}

// A round answered with input_required is sent as such, not as "ok": the
// call is not over (issue #25). A complete result stays "ok".
func TestRecordInputRequired(t *testing.T) {
	asked := call("restock", "console")
	asked.InputRequired = true // serve's observe says so (TestObserveInputRequired)
	prompt := call("p", "console")
	prompt.InputRequired = true
	done := call("restock", "console")
	done.Result = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}
	for _, tc := range []struct {
		ev   *event.Call
		want string
	}{{asked, OutcomeInputRequired}, {prompt, OutcomeInputRequired}, {done, "ok"}, {call("n", ""), "ok"}} {
		c := New(Options{Logger: quiet})
		c.Record(tc.ev)
		var got Call
		var full []byte
		c.calls.each(func(r *record) { full = r.full })
		if err := json.Unmarshal(full, &got); err != nil || got.Outcome != tc.want {
			t.Errorf("%s: outcome %q (%v), want %q", tc.ev.Name, got.Outcome, err, tc.want)
		}
	}
}
