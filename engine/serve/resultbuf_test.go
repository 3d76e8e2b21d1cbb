package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// TestLentBuffersNeverShared calls, many at once over the 2026-07-28 fast
// path and in 2025-11-25 sessions over theirs (fastlegacy.go), tools whose large results are built in buffers lent for the call
// and given back once the answer is written (engine/resultbuf), beside
// tools whose results must not be: a cached one (the cache keeps the
// result) and one whose result block keeps part of the body. Every call asks for a result of its own key, and every answer
// is compared in full with what that key must give: a buffer given back
// too early, or one the cache kept and a later call reused, shows as an
// answer holding another call's bytes. Run it with -race.
func TestLentBuffersNeverShared(t *testing.T) {
	const keys = 6
	// body is what the backend answers for key k: large enough to be lent,
	// of a length of its own, every byte telling k.
	body := func(k int) string {
		unit := fmt.Sprintf("<key %d>", k) // < and > are escaped in the answer
		return strings.Repeat(unit, (100<<10+k*7919)/len(unit))
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := strconv.Atoi(r.URL.Query().Get("k"))
		b := body(k)
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Query().Get("chunked") == "" {
			// A known length: read into a buffer of its size.
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
			io.WriteString(w, b)
			return
		}
		// An unknown length: read into a chunk, then a buffer of the limit.
		io.WriteString(w, b[:len(b)/2])
		w.(http.Flusher).Flush()
		io.WriteString(w, b[len(b)/2:])
	}))
	defer backend.Close()

	// rowsText is the SQL tool's text for key k: 120 rows of 990 bytes.
	var seed strings.Builder
	seed.WriteString("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES ")
	for i := 1; i <= 120; i++ {
		if i > 1 {
			seed.WriteByte(',')
		}
		fmt.Fprintf(&seed, "(%d, '%s')", i, strings.Repeat(string(rune('a'+i%26)), 990))
	}
	seed.WriteString(";")
	rowsText := func(k int) string {
		var b strings.Builder
		b.WriteByte('[')
		for i := 1; i <= 120; i++ {
			if i > 1 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d,"v":"%s%d"}`, i, strings.Repeat(string(rune('a'+i%26)), 990), k)
		}
		b.WriteByte(']')
		return b.String()
	}

	dir := t.TempDir()
	cfg := fmt.Sprintf(`
database "db" {
  driver = "sqlite"
  dsn    = "file:%[1]s/keys.db"
  seed   = %[3]q
}
http_backend "keys" {
  base_url = %[2]q
}
tool "plain" {
  param "k" { type = "string" }
  http {
    backend = "keys"
    path    = "/"
    query   = { k = args.k }
  }
}
tool "chunked" {
  param "k" { type = "string" }
  http {
    backend = "keys"
    path    = "/"
    query   = { k = args.k, chunked = "1" }
  }
}
tool "cached" {
  annotations { read_only = true }
  param "k" { type = "string" }
  cache { ttl = "10m" }
  http {
    backend = "keys"
    path    = "/"
    query   = { k = args.k, chunked = "1" }
  }
}
tool "shaped" {
  param "k" { type = "string" }
  http {
    backend = "keys"
    path    = "/"
    query   = { k = args.k }
  }
  result {
    text = "body[0:70000]"
  }
}
tool "rows" {
  param "k" { type = "string" }
  sql {
    database = "db"
    query    = "SELECT id, v || :k AS v FROM t ORDER BY id"
  }
}
`, dir, backend.URL, seed.String())
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("sql", sqladapter.New())
	reg.Register("http", httpadapter.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	defer cur.Load().Close()
	srv := serve.New(cur, serve.Options{Logger: quiet, MaxInflight: 64, OutputBudget: 256 << 20})
	h := srv.HTTPHandler(serve.HTTPOptions{MaxInflight: 64, MaxBody: 4 << 20})
	var mu sync.Mutex
	large := 0
	serve.OnFastPath(h, func(method string) {
		if method == serve.MethodLargeResult {
			mu.Lock()
			large++
			mu.Unlock()
		}
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	addr := ts.Listener.Addr().String()

	want := func(tool string, k int) string {
		switch tool {
		case "shaped":
			return body(k)[:70000]
		case "rows":
			return rowsText(k)
		}
		return body(k)
	}
	tools := []string{"plain", "chunked", "cached", "shaped", "rows"}
	const clients, calls = 12, 25
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			mu.Lock()
			large = 0
			mu.Unlock()
			returned := serve.ResultBuffersReturned(h)
			conns := make([]net.Conn, clients)
			sids := make([]string, clients)
			for c := range conns {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conns[c] = conn
				if era == legacy {
					sids[c] = openKeyedSession(t, conn, addr)
					wait.Until(t, "the session is ready for the fast path", func() bool { return serve.LegacyReady(h, sids[c]) })
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for c, conn := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					br := bufio.NewReader(conn)
					for i := range calls {
						tool, k := tools[(c+i)%len(tools)], (c*calls+i)%keys
						text, err := callKeyed(conn, br, addr, sids[c], tool, k)
						if err != nil {
							errs <- fmt.Errorf("%s(k=%d): %v", tool, k, err)
							return
						}
						if w := want(tool, k); text != w {
							errs <- fmt.Errorf("%s(k=%d): the answer is not the key's own: %d bytes, want %d; differs from byte %d", tool, k, len(text), len(w), firstDiff(text, w))
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			// The plain and rows tools' buffers are lent and given back.
			if n := serve.ResultBuffersReturned(h) - returned; n < int64(clients*calls/len(tools)) {
				t.Errorf("%d lent buffers given back for %d calls: the test does not test lending", n, clients*calls)
			}
			mu.Lock()
			defer mu.Unlock()
			if large < clients*calls/2 {
				t.Errorf("%d of %d answers were written as large results by the fast path; the test does not test it", large, clients*calls)
			}
		})
	}
}

// openKeyedSession opens a 2025-11-25 session on conn and returns its id.
func openKeyedSession(t *testing.T, conn net.Conn, addr string) string {
	t.Helper()
	br := bufio.NewReader(conn)
	post := func(sid, body string) *http.Response {
		req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
		if sid != "" {
			req += "Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: " + legacy + "\r\n"
		}
		req += "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		conn.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(conn, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacy+`","capabilities":{},"clientInfo":{"name":"keys","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, sid)
	}
	if resp := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	if br.Buffered() > 0 {
		t.Fatalf("%d bytes after the answers", br.Buffered())
	}
	return sid
}

// callKeyed calls tool with {"k": "<k>"} on conn as a 2026-07-28 client,
// or in the 2025-11-25 session sid when sid is set, and returns the text
// of the result's one content.
func callKeyed(conn net.Conn, br *bufio.Reader, addr, sid, tool string, k int) (string, error) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"k":"` + strconv.Itoa(k) + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	head := "Mcp-Protocol-Version: " + modern + "\r\nMcp-Method: tools/call\r\nMcp-Name: " + tool + "\r\n"
	if sid != "" {
		body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"k":"` + strconv.Itoa(k) + `"}}}`
		head = "Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: " + legacy + "\r\n"
	}
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n" +
		head + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := io.WriteString(conn, req); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	event, ok := strings.CutPrefix(string(data), "event: message\ndata: ")
	if !ok {
		return "", fmt.Errorf("HTTP %d: not an event: %.200s", resp.StatusCode, data)
	}
	var msg struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(event), &msg); err != nil {
		return "", err
	}
	if msg.Result.IsError || len(msg.Result.Content) != 1 {
		return "", fmt.Errorf("unexpected result: %.300s", event)
	}
	return msg.Result.Content[0].Text, nil
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
