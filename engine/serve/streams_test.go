package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// streamEnv is a server with stream limits and the test's bearer tokens
// (alice: tok-admin, bob: tok-acme, carol: tok-glob), on a real listener
// capped at maxConns connections as mcpd serve runs it.
type streamEnv struct {
	*env
	url string // http://127.0.0.1:PORT/mcp
}

func newStreamEnv(t testing.TB, lim serve.StreamLimits, maxConns int) *streamEnv {
	t.Helper()
	e := newEnv(t)
	e.srv = serve.New(e.cur, serve.Options{Logger: quiet, Streams: lim})
	h := http.NewServeMux()
	h.Handle("/mcp", auth.RequireBearerToken(verifyToken, nil)(e.srv.HTTPHandler(serve.HTTPOptions{})))
	addr := serveLimited(t, h, serve.ConnLimits{MaxConns: maxConns})
	return &streamEnv{env: e, url: "http://" + addr + "/mcp"}
}

// streamKinds open a long-lived stream of each kind /mcp serves, with
// their own connection, and return the response once its headers arrived.
var streamKinds = []struct {
	name string
	open func(t *testing.T, e *streamEnv, token string) *http.Response
}{
	{"legacy GET", openGet},
	{"subscriptions/listen", openListen},
}

// fresh is a client with its own connection pool, as another program's.
func fresh() *http.Client { return &http.Client{Transport: &http.Transport{}} }

func streamRequest(t *testing.T, method, url, token, body string, hdr map[string]string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(bounded(t), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

func do(t *testing.T, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// openGet opens a 2025-11-25 session and its GET stream.
func openGet(t *testing.T, e *streamEnv, token string) *http.Response {
	t.Helper()
	c := fresh()
	init := do(t, c, streamRequest(t, "POST", e.url, token, initializeBody, nil))
	io.Copy(io.Discard, init.Body)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", init.StatusCode, sid)
	}
	hdr := map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": legacy}
	ack := do(t, c, streamRequest(t, "POST", e.url, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr))
	io.Copy(io.Discard, ack.Body)
	req := streamRequest(t, "GET", e.url, token, "", hdr)
	req.Header.Set("Accept", "text/event-stream")
	return do(t, c, req)
}

const listenBody = `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`

// openListen opens a 2026-07-28 subscriptions/listen stream.
func openListen(t *testing.T, e *streamEnv, token string) *http.Response {
	t.Helper()
	return do(t, fresh(), streamRequest(t, "POST", e.url, token, listenBody,
		map[string]string{"MCP-Protocol-Version": modern, "Mcp-Method": "subscriptions/listen"}))
}

// isOpenStream reports whether resp is an event stream that the server
// keeps open.
func isOpenStream(resp *http.Response) bool {
	return resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
}

// refusal checks resp is a stream refused with status, a JSON-RPC error
// naming flag, Retry-After and Connection: close.
func refusal(t *testing.T, resp *http.Response, status int, flag string) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	var msg struct {
		Error struct {
			Code    int64
			Message string
		}
	}
	if err := json.Unmarshal(body, &msg); err != nil || resp.StatusCode != status {
		t.Fatalf("refusal: %d %q, want %d with a JSON-RPC error", resp.StatusCode, body, status)
	}
	if msg.Error.Code != -32001 || !strings.Contains(msg.Error.Message, flag) || !strings.Contains(msg.Error.Message, "too many streams") {
		t.Errorf("refusal error %+v, want code -32001 naming %s", msg.Error, flag)
	}
	if resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Errorf("refusal headers %v (close %v), want Retry-After and Connection: close", resp.Header, resp.Close)
	}
}

// waitStreams waits until the server counts n streams open.
func waitStreams(t *testing.T, srv *serve.Server, n int) {
	t.Helper()
	wait.Until(t, strconv.Itoa(n)+" streams open", func() bool { return srv.StreamCount() == n })
}

// bobCalls makes a tools/call as bob over a new connection.
func bobCalls(t *testing.T, e *streamEnv) {
	t.Helper()
	cs := connect(t, &mcp.StreamableClientTransport{
		Endpoint: e.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: authtest.Bearer("tok-acme", &http.Transport{})},
	}, modern, nil)
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "bob"}})
	if err != nil || res.IsError || text(res) != "Hello, bob x1" {
		t.Fatalf("bob's call: %v %v", res, err)
	}
}

// One caller's streams are capped, whatever their kind: past the cap a
// stream is refused with 429 and a JSON-RPC error that names the limit,
// while another caller opens streams and calls as before; a stream that
// closes gives its place back.
func TestStreamsPerCaller(t *testing.T) {
	for _, kind := range streamKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newStreamEnv(t, serve.StreamLimits{PerCaller: 3}, 0)
			var held []*http.Response
			for i := range 3 {
				resp := kind.open(t, e, "tok-admin")
				if !isOpenStream(resp) {
					t.Fatalf("alice's stream %d: %d %s", i+1, resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				held = append(held, resp)
			}
			waitStreams(t, e.srv, 3)
			refusal(t, kind.open(t, e, "tok-admin"), http.StatusTooManyRequests, "--max-streams-per-caller")

			// Bob has his own share, and his calls go on.
			if resp := kind.open(t, e, "tok-acme"); !isOpenStream(resp) {
				t.Fatalf("bob's stream: %d", resp.StatusCode)
			}
			bobCalls(t, e)

			held[0].Body.Close()
			waitStreams(t, e.srv, 3)
			if resp := kind.open(t, e, "tok-admin"); !isOpenStream(resp) {
				t.Fatalf("alice's stream after closing one: %d", resp.StatusCode)
			}
		})
	}
}

// Streams as a whole hold at most Max connections of MaxConns: past it a
// stream is refused with 503, and closes its connection, so that however
// many streams are asked for, calls keep connections.
func TestStreamsShareOfConnections(t *testing.T) {
	const maxConns, maxStreams = 6, 3
	e := newStreamEnv(t, serve.StreamLimits{Max: maxStreams}, maxConns)
	tokens := []string{"tok-admin", "tok-glob", "tok-none"}
	for i := range maxStreams {
		kind := streamKinds[i%len(streamKinds)]
		if resp := kind.open(t, e, tokens[i]); !isOpenStream(resp) {
			t.Fatalf("stream %d: %d", i+1, resp.StatusCode)
		}
	}
	waitStreams(t, e.srv, maxStreams)
	// More refused streams than there are connections left, each from a
	// client that would keep its connection alive: had they kept them,
	// the call below would wait for a connection for ever.
	for i := range maxConns {
		kind := streamKinds[i%len(streamKinds)]
		refusal(t, kind.open(t, e, "tok-admin"), http.StatusServiceUnavailable, "--max-streams")
	}
	bobCalls(t, e)
}

// The console's event stream (or any handler behind LimitStreams) counts
// with the others.
func TestLimitStreams(t *testing.T) {
	e := newStreamEnv(t, serve.StreamLimits{PerCaller: 1}, 0)
	events := make(chan struct{})
	h := auth.RequireBearerToken(verifyToken, nil)(e.srv.LimitStreams(serve.StreamConsole, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-events:
		}
	})))
	addr := serveLimited(t, h, serve.ConnLimits{})
	url := "http://" + addr + "/ui/events"
	first := do(t, fresh(), streamRequest(t, "GET", url, "tok-admin", "", nil))
	if !isOpenStream(first) {
		t.Fatalf("first console stream: %d", first.StatusCode)
	}
	// The console's stream and a listen of the same caller share a cap.
	refusal(t, openListen(t, e, "tok-admin"), http.StatusTooManyRequests, "--max-streams-per-caller")
	refusal(t, do(t, fresh(), streamRequest(t, "GET", url, "tok-admin", "", nil)), http.StatusTooManyRequests, "--max-streams-per-caller")
	close(events)
	waitStreams(t, e.srv, 0)
}

// BenchmarkCallUnderStreamFlood measures how long another tenant's call
// takes while one principal floods the server with listen streams, on a
// listener capped at 64 connections: "unlimited" is the old behaviour
// (streams take every connection; the call waits until its 2s bound, so
// timeouts/op is 1), "limited" the default limits (32 per caller, half the
// connections for streams).
func BenchmarkCallUnderStreamFlood(b *testing.B) {
	const maxConns, flood = 64, 200
	for _, bc := range []struct {
		name string
		lim  serve.StreamLimits
	}{
		{"unlimited", serve.StreamLimits{}},
		{"limited", serve.StreamLimits{PerCaller: 32, Max: maxConns / 2}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := newStreamEnv(b, bc.lim, maxConns)
			var open []*http.Response
			for range flood {
				req, _ := http.NewRequest("POST", e.url, strings.NewReader(listenBody))
				req.Header.Set("Authorization", "Bearer tok-admin")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("MCP-Protocol-Version", modern)
				req.Header.Set("Mcp-Method", "subscriptions/listen")
				// Given up on if no answer comes in 300ms (the listener is
				// full); kept open once it has come.
				ctx, cancel := context.WithCancel(context.Background())
				giveUp := time.AfterFunc(300*time.Millisecond, cancel)
				resp, err := fresh().Do(req.WithContext(ctx))
				if err != nil || !giveUp.Stop() {
					cancel()
					continue
				}
				defer cancel()
				if resp.StatusCode != 200 {
					resp.Body.Close()
					continue
				}
				open = append(open, resp)
			}
			body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"zeta_greet","arguments":{"name":"bob"}}}`
			client := fresh()
			timeouts := 0
			b.ResetTimer()
			for range b.N {
				req, _ := http.NewRequest("POST", e.url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer tok-acme")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("MCP-Protocol-Version", modern)
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "zeta_greet")
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				resp, err := client.Do(req.WithContext(ctx))
				if err != nil {
					timeouts++
				} else {
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() && !strings.Contains(sc.Text(), "Hello, bob") {
					}
					resp.Body.Close()
				}
				cancel()
			}
			b.StopTimer()
			b.ReportMetric(float64(timeouts)/float64(b.N), "timeouts/op")
			b.ReportMetric(float64(len(open)), "streams-held")
			for _, r := range open {
				r.Body.Close()
			}
		})
	}
}

// What the SDK's clients make of a refused stream: a session whose GET
// stream (2025-11-25) or subscriptions/listen (2026-07-28) is refused goes
// on without notifications, and its calls work.
func TestStreamRefusedSDKClients(t *testing.T) {
	e := newStreamEnv(t, serve.StreamLimits{PerCaller: 1}, 0)
	if resp := openListen(t, e, "tok-admin"); !isOpenStream(resp) {
		t.Fatalf("listen: %d", resp.StatusCode)
	}
	waitStreams(t, e.srv, 1)
	listens := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
	for _, version := range []string{legacy, modern} {
		cs := connect(t, &mcp.StreamableClientTransport{Endpoint: e.url, MaxRetries: -1,
			HTTPClient: &http.Client{Transport: authtest.Bearer("tok-admin", &http.Transport{})}}, version, listens)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "alice"}})
		if err != nil || text(res) != "Hello, alice x1" {
			t.Errorf("%s call without its stream: %v %v", version, res, err)
		}
	}
	if n := e.srv.StreamCount(); n != 1 {
		t.Errorf("%d streams open, want the first alone", n)
	}
}

// A POST is a subscriptions/listen stream only when the SDK holds its body
// to its headers (a 2026-07-28 MCP-Protocol-Version): a tools/call that
// only says "Mcp-Method: subscriptions/listen" is a call, which needs no
// stream place (and counts against the in-flight limits as calls do).
func TestListenHeaderIsNoExemption(t *testing.T) {
	e := newStreamEnv(t, serve.StreamLimits{PerCaller: 1}, 0)
	// Alice's one stream place is taken by a real stream.
	if resp := openListen(t, e, "tok-admin"); !isOpenStream(resp) {
		t.Fatalf("alice's stream: %d", resp.StatusCode)
	}
	waitStreams(t, e.srv, 1)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"zeta_greet","arguments":{"name":"eve"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	resp := do(t, fresh(), streamRequest(t, "POST", e.url, "tok-admin", call, map[string]string{"Mcp-Method": "subscriptions/listen"}))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusTooManyRequests || strings.Contains(string(body), "--max-streams") {
		t.Fatalf("a call was taken for a stream: %d %s", resp.StatusCode, body)
	}
	waitStreams(t, e.srv, 1)
}
