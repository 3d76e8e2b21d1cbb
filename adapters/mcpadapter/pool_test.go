package mcpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The pool of upstream sessions (pool.go), tested with real parts: go-sdk
// clients of both eras, an mcpd gateway, and mcpd as a 2025-11-25 HTTP
// upstream whose greet tool asks its client for a name mid-call (an ask
// block). Between the two, a proxy counts what the gateway sends.

// countingProxy forwards to an upstream it can be pointed elsewhere (a
// restarted upstream), counting the handshakes, DELETEs and 404s it saw.
type countingProxy struct {
	mu     sync.Mutex
	rp     *httputil.ReverseProxy
	counts map[string]int // "initialize", "DELETE", "404"
}

func newCountingProxy(t testing.TB, upstream string) (*countingProxy, string) {
	p := &countingProxy{counts: map[string]int{}}
	p.point(t, upstream)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		p.mu.Lock()
		if json.Unmarshal(body, &msg) == nil && msg.Method == "initialize" {
			p.counts["initialize"]++
		}
		if r.Method == http.MethodDelete {
			p.counts["DELETE"]++
		}
		rp := p.rp
		p.mu.Unlock()
		rp.ServeHTTP(&statusWriter{ResponseWriter: w, p: p}, r)
	}))
	t.Cleanup(ts.Close)
	return p, ts.URL
}

// point sends what comes next to upstream.
func (p *countingProxy) point(t testing.TB, upstream string) {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.rp = httputil.NewSingleHostReverseProxy(u)
	p.mu.Unlock()
}

func (p *countingProxy) count(what string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[what]
}

// statusWriter counts 404s; Unwrap keeps the SSE streams flushed.
type statusWriter struct {
	http.ResponseWriter
	p *countingProxy
}

func (w *statusWriter) WriteHeader(code int) {
	if code == http.StatusNotFound {
		w.p.mu.Lock()
		w.p.counts["404"]++
		w.p.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// poolGateway puts greet of the upstream at url behind mcpd, on the
// 2025-11-25 protocol; attrs go in its mcp_server block.
func poolGateway(url, attrs string) string {
	return fmt.Sprintf(`
server {
  request_state_key = "0123456789abcdef0123456789abcdef"
}

mcp_server "up" {
  url              = %q
  protocol_version = "2025-11-25"
  %s
}

tool "greet" {
  description = "Greets the user (the upstream asks for the name)."
  param "greeting" {
    type    = "string"
    default = "Hello"
  }
  mcp {
    server = "up"
  }
}
`, url, attrs)
}

// namer is a client's elicitation handler that answers name, after every
// client sharing its barrier has been asked (their calls are in flight
// together), or after a while.
type namer struct {
	name    string
	barrier *sync.WaitGroup
	mu      sync.Mutex
	asked   int
}

func (n *namer) elicit(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	n.mu.Lock()
	n.asked++
	n.mu.Unlock()
	if n.barrier != nil {
		n.barrier.Done()
		all := make(chan struct{})
		go func() { n.barrier.Wait(); close(all) }()
		select {
		case <-all:
		case <-time.After(5 * time.Second): // the test then sees what went wrong
		case <-ctx.Done():
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": n.name}}, nil
}

// upstreamStatus is the ServiceStatus of the served upstream name.
func upstreamStatus(t *testing.T, cur *snapshot.Current, name string) adapter.ServiceStatus {
	t.Helper()
	var st *adapter.ServiceStatus
	cur.Load().Backends(func(_, _ string, b adapter.Backend) {
		if r, ok := b.(adapter.ServiceReporter); ok && r.ServiceStatus().Name == name {
			s := r.ServiceStatus()
			st = &s
		}
	})
	if st == nil {
		t.Fatalf("no upstream %s is served", name)
	}
	return *st
}

func greet(t *testing.T, cs *mcp.ClientSession, greeting string) string {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"greeting": greeting}})
	if err != nil {
		return "error: " + err.Error()
	}
	return textOf(res)
}

// Calls in flight at once, from clients of either era, are each asked
// their own question (the upstream's request comes on the call's pooled
// session) and get their own answer's result.
func TestPoolCallsInFlight(t *testing.T) {
	type client struct {
		version, greeting, name string
	}
	for _, tc := range []struct {
		name    string
		clients []client
	}{
		{"two 2025-11-25 clients", []client{{legacy, "Hi", "Ada"}, {legacy, "Yo", "Bob"}}},
		{"two 2026-07-28 clients", []client{{modern, "Hi", "Ada"}, {modern, "Yo", "Bob"}}},
		{"one of each, and a third", []client{{legacy, "Hi", "Ada"}, {modern, "Yo", "Bob"}, {legacy, "Hey", "Cy"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prx, up := newCountingProxy(t, serveConfig(t, upstreamMCPD))
			gw, cur := serveSnapshot(t, poolGateway(up, ""))
			for round := 0; round < 2; round++ {
				var barrier sync.WaitGroup
				barrier.Add(len(tc.clients))
				namers := make([]*namer, len(tc.clients))
				sessions := make([]*mcp.ClientSession, len(tc.clients))
				for i, c := range tc.clients {
					namers[i] = &namer{name: c.name, barrier: &barrier}
					sessions[i] = connect(t, gw, c.version, &mcp.ClientOptions{ElicitationHandler: namers[i].elicit}, false)
				}
				got := make([]string, len(tc.clients))
				var wg sync.WaitGroup
				for i, c := range tc.clients {
					wg.Go(func() { got[i] = greet(t, sessions[i], c.greeting) })
				}
				wg.Wait()
				for i, c := range tc.clients {
					if want := c.greeting + ", " + c.name + "!"; got[i] != want {
						t.Errorf("round %d, client %d (%s): %q, want %q", round, i, c.version, got[i], want)
					}
					if namers[i].asked != 1 {
						t.Errorf("round %d, client %d was asked %d times", round, i, namers[i].asked)
					}
				}
			}
			// The shared session, and one pooled session per call in
			// flight, made in the first round and reused in the second.
			if n := prx.count("initialize"); n != 1+len(tc.clients) {
				t.Errorf("the upstream saw %d handshakes, want %d", n, 1+len(tc.clients))
			}
			// What the metrics export.
			st := upstreamStatus(t, cur, "up")
			if st.IdleSessions != len(tc.clients) || st.BusySessions != 0 || st.SessionConnects != int64(len(tc.clients)) {
				t.Errorf("pool state: %d idle, %d busy, %d connects; want %d, 0, %d", st.IdleSessions, st.BusySessions, st.SessionConnects, len(tc.clients), len(tc.clients))
			}
		})
	}
}

// What becomes of pooled sessions between calls.
func TestPoolSessions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		attrs   string
		version string
		// run gets the proxy in front of the upstream and returns the
		// handshakes (pooled) it expects of its calls.
		run func(t *testing.T, e *poolEnv) int
	}{
		{name: "sequential calls of a 2026-07-28 client share one handshake", version: modern, run: func(t *testing.T, e *poolEnv) int {
			for i := range 5 {
				e.greetOK(t, fmt.Sprint("Hi", i))
			}
			return 1
		}},
		{name: "sequential calls of a 2025-11-25 client share one handshake", version: legacy, run: func(t *testing.T, e *poolEnv) int {
			for i := range 5 {
				e.greetOK(t, fmt.Sprint("Hi", i))
			}
			return 1
		}},
		{name: "an idle session expires", version: modern, attrs: `idle_session_timeout = "200ms"`, run: func(t *testing.T, e *poolEnv) int {
			e.greetOK(t, "Hi")
			e.waitFor(t, "DELETE", 1)
			e.greetOK(t, "Hi again")
			return 2
		}},
		{name: "no idle sessions: one per call", version: modern, attrs: `max_idle_sessions = 0`, run: func(t *testing.T, e *poolEnv) int {
			for i := range 3 {
				e.greetOK(t, fmt.Sprint("Hi", i))
			}
			e.waitFor(t, "DELETE", 3)
			return 3
		}},
		{name: "a session the upstream forgot is replaced", version: legacy, run: func(t *testing.T, e *poolEnv) int {
			e.greetOK(t, "Hi")
			// The upstream restarts: a new mcpd, which knows none of the
			// gateway's sessions.
			e.proxy.point(t, serveConfig(t, upstreamMCPD))
			e.greetOK(t, "Hi again")
			if e.proxy.count("404") == 0 {
				t.Error("the restarted upstream answered no 404: the forgotten session was not used")
			}
			return 2
		}},
		{name: "Close closes pooled sessions", version: modern, run: func(t *testing.T, e *poolEnv) int {
			e.greetOK(t, "Hi")
			before := e.proxy.count("DELETE")
			e.gateway.Load().Close()
			// The shared session and the pooled one.
			if n := e.proxy.count("DELETE") - before; n != 2 {
				t.Errorf("Close sent %d DELETEs, want 2", n)
			}
			return 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prx, up := newCountingProxy(t, serveConfig(t, upstreamMCPD))
			gw, cur := serveSnapshot(t, poolGateway(up, tc.attrs))
			n := &namer{name: "Ada"}
			e := &poolEnv{proxy: prx, gateway: cur, cs: connect(t, gw, tc.version, &mcp.ClientOptions{ElicitationHandler: n.elicit}, false)}
			want := tc.run(t, e)
			if got := prx.count("initialize") - 1; got != want { // less the shared session's
				t.Errorf("pooled handshakes: %d, want %d", got, want)
			}
			// Before the upstreams a case made stop: they wait for the
			// gateway's sessions to end.
			cur.Load().Close()
		})
	}
}

type poolEnv struct {
	proxy   *countingProxy
	gateway *snapshot.Current
	cs      *mcp.ClientSession
}

func (e *poolEnv) greetOK(t *testing.T, greeting string) {
	t.Helper()
	if got, want := greet(t, e.cs, greeting), greeting+", Ada!"; got != want {
		t.Fatalf("greet: %q, want %q", got, want)
	}
}

// waitFor waits until the proxy counted n of what.
func (e *poolEnv) waitFor(t *testing.T, what string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); e.proxy.count(what) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream saw %d %s, want %d", e.proxy.count(what), what, n)
		}
	}
}

// A pooled session serves the calls of the caller it was made for only:
// what an upstream keeps per session (or a question it sends after its
// call ended) never reaches another caller. Callers take turns; each
// reuses its own session.
func TestPoolPerCaller(t *testing.T) {
	prx, up := newCountingProxy(t, serveConfig(t, upstreamMCPD))
	gw := serveWatchedAuth(t, poolGateway(up, ""), verifyCaller)
	for _, caller := range []string{"reader", "outsider", "reader", "outsider", "reader"} {
		n := &namer{name: caller}
		cs := connectAs(t, gw.url, modern, caller, &mcp.ClientOptions{ElicitationHandler: n.elicit})
		if got, want := greet(t, cs, "Hi"), "Hi, "+caller+"!"; got != want {
			t.Errorf("%s: %q, want %q", caller, got, want)
		}
	}
	if got := prx.count("initialize") - 1; got != 2 { // less the shared session's
		t.Errorf("pooled handshakes: %d, want 2 (one per caller)", got)
	}
}

// The log records of calls in flight together on an HTTP upstream of
// either era reach each its own client, even clients that can be asked
// nothing: a call whose client wants records takes a session of its own.
// The upstream is a go-sdk server whose tool logs before and after all
// the calls have arrived.
func TestPoolLogRecordsOfConcurrentCalls(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) { testLogRecordsOfConcurrentCalls(t, version) })
	}
}

func testLogRecordsOfConcurrentCalls(t *testing.T, version string) {
	const calls = 3
	var arrived sync.WaitGroup
	arrived.Add(calls)
	srv := mcp.NewServer(&mcp.Implementation{Name: "logger", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	type args struct {
		Who string `json:"who"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
		logf := func(step string) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: step + " " + in.Who})
		}
		logf("started")
		arrived.Done()
		arrived.Wait() // every call is in flight
		logf("finished")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Who}}}, nil, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: version == modern}))
	t.Cleanup(up.Close)
	gw := serveConfig(t, fmt.Sprintf(`
mcp_server "up" {
  url              = %q
  protocol_version = %q
}

tool "work" {
  description = "Works, and logs."
  param "who" { type = "string" }
  mcp {
    server = "up"
  }
}
`, up.URL, version))

	type client struct {
		cs   *mcp.ClientSession
		mu   sync.Mutex
		logs []string
	}
	clients := make([]*client, calls)
	for i := range clients {
		c := &client{}
		// No capabilities: the upstream can ask this client nothing.
		c.cs = connect(t, gw, legacy, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.logs = append(c.logs, fmt.Sprint(r.Params.Data))
		}}, false)
		if err := c.cs.SetLoggingLevel(bounded(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			who := fmt.Sprintf("client-%d", i)
			res, err := c.cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "work", Arguments: map[string]any{"who": who}})
			if err != nil || res.IsError || textOf(res) != who {
				t.Errorf("%s: %v %q", who, err, textOf(res))
			}
		})
	}
	wg.Wait()
	for i, c := range clients {
		who := fmt.Sprintf("client-%d", i)
		want := []string{"started " + who, "finished " + who}
		waitFor(t, who+"'s log records", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.logs) >= len(want)
		})
		// A window for a record of another call to arrive: what is
		// proved is that none does.
		time.Sleep(100 * time.Millisecond)
		c.mu.Lock()
		if fmt.Sprint(c.logs) != fmt.Sprint(want) {
			t.Errorf("%s got the records %q, want %q", who, c.logs, want)
		}
		c.mu.Unlock()
	}
}
