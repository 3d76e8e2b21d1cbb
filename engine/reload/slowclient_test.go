package reload_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// slowConfig is a tool whose description and nres resources whose text change
// with i, so that every reload sends tools/list_changed to every client and
// resources/updated for every resource to every subscriber. The URIs are
// long so that a client that does not read fills its socket quickly.
func slowConfig(i, nres int) string {
	var b strings.Builder
	b.WriteString(tool("a", fmt.Sprintf("A%d", i)))
	for j := 0; j < nres; j++ {
		fmt.Fprintf(&b, "resource %q {\n  uri  = %q\n  text = %q\n}\n", fmt.Sprintf("r%d", j), slowURI(j), fmt.Sprintf("v%d", i))
	}
	return b.String()
}

func slowURI(j int) string { return fmt.Sprintf("docs://r%d/%s", j, strings.Repeat("x", 400)) }

// legacyNonReader is a 2025-11-25 client over raw HTTP: it initializes,
// opens its GET event stream with a tiny receive buffer, subscribes to every
// resource, and then never reads the stream.
type legacyNonReader struct {
	base      string
	sessionID string
	stream    net.Conn
}

func newLegacyNonReader(t *testing.T, base string, nres int) *legacyNonReader {
	t.Helper()
	c := &legacyNonReader{base: base}
	resp := c.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"non-reader","version":"1"}}}`)
	c.sessionID = resp.Header.Get("Mcp-Session-Id")
	if c.sessionID == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	c.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	c.stream = openUnread(t, base, fmt.Sprintf("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", c.sessionID))
	for j := 0; j < nres; j++ {
		c.post(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, j+2, slowURI(j)))
	}
	return c
}

// openUnread sends an HTTP request that opens an event stream, on a socket
// whose receive buffer is as small as the kernel allows, reads the status
// line, and never reads again.
func openUnread(t *testing.T, base, request string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the test server, which would otherwise wait for ever
	// for a handler blocked writing to it (with the old code).
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	status, err := bufio.NewReader(io.LimitReader(conn, 64)).ReadString('\n')
	if err != nil || !strings.Contains(status, "200") {
		t.Fatalf("opening the event stream: %q %v", status, err)
	}
	return conn
}

// modernNonReader opens a 2026-07-28 subscriptions/listen stream for tool
// list changes and every resource, and never reads it.
func modernNonReader(t *testing.T, base string, nres int) {
	t.Helper()
	var uris []string
	for j := 0; j < nres; j++ {
		uris = append(uris, slowURI(j))
	}
	list, _ := json.Marshal(uris)
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true,"resourceSubscriptions":` + string(list) + `}}}`
	openUnread(t, base, fmt.Sprintf("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
}

func (c *legacyNonReader) post(t *testing.T, body string) *http.Response {
	t.Helper()
	resp, err := c.try(body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", body, resp.Status)
	}
	return resp
}

func (c *legacyNonReader) try(body string) (*http.Response, error) {
	req, _ := http.NewRequest(http.MethodPost, c.base, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// A client that never reads its event stream must not stop hot reload: every
// reload finishes at once, every other client hears exactly one
// list_changed per reload, and the session that stopped reading is closed
// and counted once a write to it has blocked for SlowClientTimeout.
func TestClientThatNeverReadsDoesNotStopReload(t *testing.T) {
	const nres, reloads = 40, 200
	tests := []struct {
		name string
		open func(t *testing.T, base string) (gone func() bool)
	}{
		{"2025-11-25 GET stream", func(t *testing.T, base string) func() bool {
			c := newLegacyNonReader(t, base, nres)
			return func() bool {
				resp, err := c.try(`{"jsonrpc":"2.0","id":999,"method":"ping"}`)
				return err == nil && resp.StatusCode == http.StatusNotFound
			}
		}},
		{"2026-07-28 subscriptions/listen", func(t *testing.T, base string) func() bool {
			modernNonReader(t, base, nres)
			return func() bool { return true }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startWith(t, map[string]string{"tools.hcl": slowConfig(0, nres)},
				func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} },
				serve.Options{SlowClientTimeout: 300 * time.Millisecond}, nil, true)
			path := filepath.Join(e.dir, "tools.hcl")
			clients := e.clients()
			sessions := func() int {
				n := 0
				for range e.srv.SDK().Sessions() {
					n++
				}
				return n
			}
			healthy := sessions()
			gone := tt.open(t, e.http.URL)
			wait.Until(t, "sessions() == healthy+1", func() bool { return sessions() == healthy+1 })

			start := time.Now()
			closedAt := 0
			for i := 1; i <= reloads; i++ {
				if closedAt == 0 && e.srv.Stats().SlowClients > 0 {
					closedAt = i
				}
				write(t, path, slowConfig(i, nres))
				done := make(chan error, 1)
				go func() { done <- e.reloader.Reload(context.Background()) }()
				select {
				case err := <-done:
					must(t, err)
				case <-time.After(10 * time.Second):
					t.Fatalf("reload %d has not returned after 10s: a client that does not read blocks hot reload", i)
				}
				for _, c := range clients {
					select {
					case <-c.signal:
					case <-time.After(10 * time.Second):
						t.Fatalf("reload %d: %s heard no tools/list_changed within 10s", i, c.name)
					}
				}
			}
			took := time.Since(start)
			time.Sleep(300 * time.Millisecond) // a window in which no extra notification may arrive: nothing to wait for
			for _, c := range clients {
				if n := c.changes.Load(); n != reloads {
					t.Errorf("%s: %d tools/list_changed for %d reloads", c.name, n, reloads)
				}
			}
			if n := e.srv.Stats().SlowClients; n != 1 {
				t.Errorf("Stats().SlowClients = %d, want 1", n)
			}
			// The slow client's session is gone.
			wait.Until(t, "sessions() == healthy && gone()", func() bool { return sessions() == healthy && gone() })
			t.Logf("%d reloads with a client that never reads: %v (%v per reload); its session closed before reload %d; %+v",
				reloads, took, took/reloads, closedAt, e.srv.Stats())
			if st := e.reloader.Status(); st.Err != "" || st.Reloads < reloads {
				t.Errorf("status: %+v", st)
			}
		})
	}
}
