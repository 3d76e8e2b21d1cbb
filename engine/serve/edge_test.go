package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// rawRequest sends one HTTP/1.1 request written by hand, so that the test
// controls every byte of the Host line and the header list, and returns the
// response.
func rawRequest(t *testing.T, addr, head, body string) (*http.Response, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := head + fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n\r\n", len(body)) + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp, string(raw)
}

const jsonHeaders = "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"

// The Host header is parsed strictly: a port that is not a number, userinfo,
// a path or an empty host is refused, so that no reading of the header other
// than mcpd's can see a different host.
func TestHostParsing(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	addr := strings.TrimPrefix(ts.URL, "http://")
	tests := []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:8080", "", 200},
		{"[::1]:80", "", 200},
		{"[0:0:0:0:0:0:0:1]", "", 200},
		{"localhost", "", 200},
		{"LOCALHOST:1", "", 200},
		{"mcp.example.com:443", "", 200},
		{"127.0.0.1:65535", "", 200},
		{"127.0.0.1:80.evil.example", "", 403},
		{"localhost:80.evil.example", "", 403},
		{"127.0.0.1:0", "", 403},
		{"127.0.0.1:65536", "", 403},
		{"127.0.0.1:", "", 403},
		{"127.0.0.1:+80", "", 403},
		{"127.0.0.1:080080", "", 403},
		{"[::1]80", "", 403},
		{"[::1", "", 403},
		{"[::1]:x", "", 403},
		{"[127.0.0.1]", "", 403},
		{"[fe80::1%25lo]", "", 403},
		{"::1", "", 403},
		{"evil@localhost", "", 400}, // net/http refuses it first
		{"localhost@evil.example", "", 400},
		{":8080", "", 403},
		{"localhost.evil.example", "", 403},
		{"127.0.0.1.nip.io", "", 403},
		// Origins go through the same parser.
		{"localhost", "http://localhost:3000", 200},
		{"localhost", "http://[::1]:3000", 200},
		{"localhost", "https://mcp.example.com", 200},
		{"localhost", "https://app.example.com", 200},
		{"localhost", "http://localhost:3000.evil.example", 403},
		{"localhost", "http://127.0.0.1:80.evil.example", 403},
		{"localhost", "http://evil@localhost", 403},
		{"localhost", "http://localhost@evil.example", 403},
		{"localhost", "http://localhost/path", 403},
		{"localhost", "http://", 403},
		{"localhost", "http://:80", 403},
	}
	for _, tc := range tests {
		t.Run(tc.host+" "+tc.origin, func(t *testing.T) {
			head := "POST /mcp HTTP/1.1\r\nHost: " + tc.host + "\r\n" + jsonHeaders
			if tc.origin != "" {
				head += "Origin: " + tc.origin + "\r\n"
			}
			resp, body := rawRequest(t, addr, head, initializeBody)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

// An MCP header given twice with different values is refused with 400 and a
// JSON-RPC error, in both eras; the same value twice is accepted.
func TestDuplicateMCPHeaders(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{JSONResponse: true})
	addr := strings.TrimPrefix(ts.URL, "http://")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"zeta_greet","arguments":{"name":"x"}}}`
	modernHead := jsonHeaders + "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
	tests := []struct {
		name, headers, body string
		want                int
	}{
		{"one Mcp-Name", modernHead + "Mcp-Name: zeta_greet\r\n", call, 200},
		{"same Mcp-Name twice", modernHead + "Mcp-Name: zeta_greet\r\nMcp-Name: zeta_greet\r\n", call, 200},
		{"two Mcp-Names", modernHead + "Mcp-Name: zeta_greet\r\nMcp-Name: slow\r\n", call, 400},
		{"two Mcp-Names, other case", modernHead + "Mcp-Name: zeta_greet\r\nmcp-name: mid_check\r\n", call, 400},
		{"two Mcp-Methods", jsonHeaders + "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Method: tools/list\r\nMcp-Name: zeta_greet\r\n", call, 400},
		{"two protocol versions", jsonHeaders + "MCP-Protocol-Version: 2026-07-28\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Method: tools/call\r\nMcp-Name: zeta_greet\r\n", call, 400},
		{"two session ids", jsonHeaders + "Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n", initializeBody, 400},
		{"two param headers", modernHead + "Mcp-Name: zeta_greet\r\nMcp-Param-Region: a\r\nMcp-Param-Region: b\r\n", call, 400},
		{"two origins", modernHead + "Mcp-Name: zeta_greet\r\nOrigin: http://localhost:3000\r\nOrigin: http://evil.example\r\n", call, 400},
		{"two other headers", modernHead + "Mcp-Name: zeta_greet\r\nX-Trace: a\r\nX-Trace: b\r\n", call, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawRequest(t, addr, "POST /mcp HTTP/1.1\r\nHost: localhost\r\n"+tc.headers, tc.body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want != 400 {
				return
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &msg); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("body is not a JSON-RPC error (%v, %s): %s", err, resp.Header.Get("Content-Type"), body)
			}
			if msg.JSONRPC != "2.0" || msg.Error.Code != mcp.CodeHeaderMismatch || !strings.Contains(msg.Error.Message, "more than once") {
				t.Errorf("error = %+v, want code %d about a repeated header", msg, mcp.CodeHeaderMismatch)
			}
		})
	}
}

// edgeConfig adds a tool with a large result to the test config.
const edgeConfig = testConfig + `
tool "big" {
  description = "Returns 8 MiB."
  fake {
    mode = "big"
  }
}
`

// serveLimited serves h on a real loopback listener through NewHTTPServer
// and LimitListener, as mcpd serve does.
func serveLimited(t testing.TB, h http.Handler, l serve.ConnLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := serve.NewHTTPServer(h, l)
	go hs.Serve(serve.LimitListener(ln, l))
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

const modernCallHead = "POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + jsonHeaders +
	"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"

func modernCall(tool string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"` + tool + `","arguments":{}}}`
}

// sendCall writes a keep-alive 2026 tools/call request on conn.
func sendCall(t *testing.T, conn net.Conn, tool string) {
	t.Helper()
	body := modernCall(tool)
	req := modernCallHead + "Mcp-Name: " + tool + "\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
}

// A body that trickles in after the headers is cut after ReadTimeout; a
// call slower than ReadTimeout and WriteTimeout, whose body arrived at once,
// is not.
func TestReadTimeout(t *testing.T) {
	e := newEnv(t)
	addr := serveLimited(t, e.srv.HTTPHandler(serve.HTTPOptions{ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond}), serve.ConnLimits{})

	conn := dial(t, addr)
	body := modernCall("fast")
	head := modernCallHead + "Mcp-Name: fast\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	start := time.Now()
	if _, err := io.WriteString(conn, head+body[:10]); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	took := time.Since(start)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("status %d for a body that never ended", resp.StatusCode)
		}
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server still waits for the body after %v", took)
	}
	if took > 5*time.Second {
		t.Errorf("the trickling body was cut after %v, want about 300ms", took)
	}

	// A call that outlasts both timeouts still gets its result.
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, modern, nil)
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "slow"})
		if err == nil && !strings.Contains(text(res), "released") {
			err = fmt.Errorf("result %q", text(res))
		}
		done <- err
	}()
	waitFor(t, e.fake.started, "slow call")
	time.Sleep(time.Second) // the call outlasting the timeouts is what is under test
	e.fake.releaseAll()
	if err := <-done; err != nil {
		t.Errorf("a call longer than the timeouts: %v", err)
	}
}

// An idle keep-alive connection is closed after IdleTimeout.
func TestIdleTimeout(t *testing.T) {
	e := newEnv(t)
	addr := serveLimited(t, e.srv.HTTPHandler(serve.HTTPOptions{JSONResponse: true}), serve.ConnLimits{IdleTimeout: 300 * time.Millisecond})
	conn := dial(t, addr)
	sendCall(t, conn, "fast")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("status %d, close %v: want a kept-alive 200", resp.StatusCode, resp.Close)
	}
	start := time.Now()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: read %v after %v, want EOF (closed by the server)", err, time.Since(start))
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("idle connection closed after %v, want about 300ms", took)
	}
}

// Past MaxConns, a new connection waits until one closes.
func TestConnectionCap(t *testing.T) {
	e := newEnv(t)
	addr := serveLimited(t, e.srv.HTTPHandler(serve.HTTPOptions{JSONResponse: true}), serve.ConnLimits{MaxConns: 2})
	roundTrip := func(conn net.Conn, wait time.Duration) error {
		sendCall(t, conn, "fast")
		conn.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	first, second := dial(t, addr), dial(t, addr)
	for _, c := range []net.Conn{first, second} {
		if err := roundTrip(c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	third := dial(t, addr) // accepted by the kernel, not by the server
	sendCall(t, third, "fast")
	third.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	br := bufio.NewReader(third)
	if _, err := br.Peek(1); err == nil {
		t.Fatal("a third connection was served while two were open")
	}
	first.Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the third connection was not served once the first closed: %v", err)
	}
	resp.Body.Close()
}

// Opening one session more than MaxSessions closes the one idle the
// longest; its next request gets 404 and the others go on.
func TestSessionCap(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{MaxSessions: 2})
	open := func() *mcp.ClientSession {
		return connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, legacy, nil)
	}
	c1 := open()
	c2 := open()
	if _, err := c1.ListTools(bounded(t), nil); err != nil { // c2 is now the oldest idle
		t.Fatal(err)
	}
	c3 := open()
	// The session is closed in the background, right after the initialize.
	wait.Until(t, "the oldest idle session gets 404", func() bool {
		resp, _ := rawRequest(t, strings.TrimPrefix(ts.URL, "http://"), "POST /mcp HTTP/1.1\r\nHost: localhost\r\n"+jsonHeaders+
			"MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: "+c2.ID()+"\r\n", `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		return resp.StatusCode == http.StatusNotFound
	})
	if _, err := c2.ListTools(bounded(t), nil); err == nil {
		t.Error("the closed session still answers its client")
	}
	for i, cs := range []*mcp.ClientSession{c1, c3} {
		if _, err := cs.ListTools(bounded(t), nil); err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
	n := 0
	for range e.srv.SDK().Sessions() {
		n++
	}
	if n != 2 {
		t.Errorf("%d sessions open, want 2", n)
	}
}

// Past MaxInflight, a request is refused with 503 and Retry-After, and a
// JSON-RPC error; a listen stream does not take a slot.
func TestInflightCap(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{MaxInflight: 1, JSONResponse: true})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, modern, nil)
	ctx, cancel := context.WithCancel(bounded(t))
	done := make(chan struct{})
	go func() {
		cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		close(done)
	}()
	waitFor(t, e.fake.started, "slow call")

	resp, body := rawRequest(t, strings.TrimPrefix(ts.URL, "http://"), modernCallHead+"Mcp-Name: fast\r\n", modernCall("fast"))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q, want 503 with Retry-After: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if !strings.Contains(body, `"code":-32000`) || !strings.Contains(body, "max-inflight") {
		t.Errorf("body %s, want a JSON-RPC error naming --max-inflight", body)
	}
	if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{}}); err == nil {
		t.Error("a second call while one is in flight succeeded")
	}

	cancel()
	<-done
	waitFor(t, e.fake.cancelled, "slow call cancelled")
	wait.Until(t, "a call succeeds once the slot is free", func() bool {
		_, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{}})
		return err == nil
	})
}

// A client that never reads a large result is cut once a write has been
// blocked for WriteTimeout: the handler returns and frees the result.
func TestWriteTimeout(t *testing.T) {
	e := newEnvConfig(t, edgeConfig)
	returned := make(chan struct{}, 1)
	h := e.srv.HTTPHandler(serve.HTTPOptions{WriteTimeout: 300 * time.Millisecond})
	addr := serveLimited(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		returned <- struct{}{}
	}), serve.ConnLimits{})
	before := runtime.NumGoroutine()
	conn := dial(t, addr)
	// More than the kernel's buffers hold: the server's send buffer grows to
	// 4 MiB at most by default, and this end's receive buffer stays small.
	conn.(*net.TCPConn).SetReadBuffer(4096)
	sendCall(t, conn, "big") // and never read
	select {
	case <-returned:
	case <-time.After(60 * time.Second): // the race detector makes 8 MiB slow
		t.Fatal("the handler still writes to a client that reads nothing")
	}
	// The request's goroutines (its connection, the SDK's session) end.
	wait.Until(t, "goroutines back to their number before the request", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// At info level, a 2026 request writes no log line (the SDK's per-session
// lines are debug; the stateless fast path, which makes no session, writes
// none at any level).
func TestRequestLogging(t *testing.T) {
	for _, tc := range []struct {
		level  slog.Level
		noFast bool
		some   bool
	}{{slog.LevelInfo, false, false}, {slog.LevelInfo, true, false}, {slog.LevelDebug, true, true}, {slog.LevelDebug, false, false}} {
		var buf syncBuffer
		e := newEnv(t)
		e.srv = serve.New(e.cur, serve.Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level}))})
		ts := e.httpServer(t, serve.HTTPOptions{JSONResponse: true, NoFastPath: tc.noFast})
		resp, body := rawRequest(t, strings.TrimPrefix(ts.URL, "http://"), modernCallHead+"Mcp-Name: fast\r\n", modernCall("fast"))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		if got := buf.String(); (got != "") != tc.some {
			t.Errorf("level %v, no fast path %v: log %q", tc.level, tc.noFast, got)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A 2025-11-25 call whose HTTP client has gone runs on (the SDK does not
// cancel it), so Options.MaxInflight counts running calls, not requests:
// while the orphaned call runs, another is refused with a JSON-RPC error.
func TestInflightCapCountsOrphanedCalls(t *testing.T) {
	e := newEnv(t)
	e.srv = serve.New(e.cur, serve.Options{Logger: quiet, MaxInflight: 1})
	ts := e.httpServer(t, serve.HTTPOptions{})
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, legacy, nil)

	conn := dial(t, strings.TrimPrefix(ts.URL, "http://"))
	body := `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
	req := "POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + jsonHeaders + "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " + cs.ID() + "\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	waitFor(t, e.fake.started, "slow call")
	conn.Close()

	_, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{"id": "x"}})
	if rpcCode(err) != -32000 || !strings.Contains(err.Error(), "max-inflight") {
		t.Errorf("a call while an orphaned one runs: err = %v, want -32000 naming --max-inflight", err)
	}
	e.fake.releaseAll()
	wait.Until(t, "a call succeeds once the orphaned one ends", func() bool {
		_, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "fast", Arguments: map[string]any{"id": "x"}})
		return err == nil
	})
}

// A session with a call in flight is not closed to make room: the cap is
// exceeded until it is idle.
func TestSessionCapSparesBusySessions(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{MaxSessions: 1})
	open := func() *mcp.ClientSession {
		return connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, legacy, nil)
	}
	busy := open()
	done := make(chan error, 1)
	go func() {
		res, err := busy.CallTool(bounded(t), &mcp.CallToolParams{Name: "slow"})
		if err == nil && !strings.Contains(text(res), "released") {
			err = fmt.Errorf("result %q", text(res))
		}
		done <- err
	}()
	waitFor(t, e.fake.started, "slow call")
	idle := open()
	e.fake.releaseAll()
	if err := <-done; err != nil {
		t.Errorf("the busy session's call: %v", err)
	}
	for i, cs := range []*mcp.ClientSession{busy, idle} {
		if _, err := cs.ListTools(bounded(t), nil); err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
}

// Past MaxInflightBytes of request bodies in flight, a request is refused
// with 503 and Retry-After; a smaller one that fits is served.
func TestInflightBytesCap(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{MaxInflightBytes: 2000, JSONResponse: true})
	addr := strings.TrimPrefix(ts.URL, "http://")
	padded := func(tool string, size int) string {
		body := modernCall(tool)
		pad := `"pad":"` + strings.Repeat("p", size-len(body)-9) + `",`
		return strings.Replace(body, `"_meta":{`, `"_meta":{`+pad, 1)
	}

	conn := dial(t, addr)
	slow := padded("slow", 1500)
	if len(slow) != 1500 {
		t.Fatalf("body of %d bytes", len(slow))
	}
	fmt.Fprintf(conn, "%sMcp-Name: slow\r\nContent-Length: %d\r\n\r\n%s", modernCallHead, len(slow), slow)
	waitFor(t, e.fake.started, "slow call")

	resp, body := rawRequest(t, addr, modernCallHead+"Mcp-Name: fast\r\n", padded("fast", 1000))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "max-inflight-bytes") {
		t.Errorf("1,000 bytes over 1,500 in flight: status %d, Retry-After %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp, body := rawRequest(t, addr, modernCallHead+"Mcp-Name: fast\r\n", padded("fast", 400)); resp.StatusCode != 200 {
		t.Errorf("400 bytes over 1,500 in flight: status %d: %s", resp.StatusCode, body)
	}
	conn.Close() // cancels the slow call
	waitFor(t, e.fake.cancelled, "slow call cancelled")
	wait.Until(t, "the budget is free again", func() bool {
		resp, _ := rawRequest(t, addr, modernCallHead+"Mcp-Name: fast\r\n", padded("fast", 1000))
		return resp.StatusCode == 200
	})
}
