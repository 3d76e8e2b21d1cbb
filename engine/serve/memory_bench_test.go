package serve_test

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// resultBytes is the size of the results BenchmarkResultMemory asks for:
// the adapters' default output cap (1 MiB), less a little room so that no
// adapter truncates.
const resultBytes = 1000000

// BenchmarkResultMemory runs rounds of 64 concurrent tools/call (the
// default --max-inflight) whose results are 1 MB each, over real HTTP
// connections through the handler stack `mcpd serve --http` builds with its
// defaults, and reports the memory they took: peak-RSS-MB is the process's
// peak resident set during the rounds less the resident set before them,
// peak-heap-MB the peak of the Go heap in use, live or garbage, and
// peak-live-MB the peak of the heap found live by a collection (both
// sampled every millisecond),
// and x-inflight the peak RSS over the result bytes in flight (64 MB);
// B/op is what a round of 64 calls allocates.
// One sub-benchmark per adapter path: shell (head -c), sql (SQLite, 1000
// rows of 990 bytes; sql-postgres and sql-mysql the same rows on
// PostgreSQL and MySQL/MariaDB when MCPD_TEST_POSTGRES_DSN and
// MCPD_TEST_MYSQL_DSN are set), http (a text body from an httptest
// server) and static (no adapter: the content is built at load); each
// twice, at
// GOGC=400 with the soft memory limit mcpd sets in the shipped Kubernetes
// manifest's 512 MiB container (384 MiB, see cmd/mcpd/gc.go): "pod", and
// with no memory limit: "nolimit". The clients discard what they read, so
// the memory is the server's. The requests take the 2026-07-28 fast path;
// the legacy-* runs (sql and http tools) make the same calls in 2025-11-25
// sessions, which take theirs (fastlegacy.go).
//
//	go test ./engine/serve -run '^$' -bench BenchmarkResultMemory -benchtime 5x
func BenchmarkResultMemory(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self")
	}
	dir := b.TempDir()
	big := strings.Repeat(strings.Repeat("0123456789abcdef", 6)+"\n", resultBytes/97+1)[:resultBytes]
	bigFile := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(bigFile, []byte(big), 0o644); err != nil {
		b.Fatal(err)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, big)
	}))
	defer backend.Close()
	cfg := fmt.Sprintf(`
database "db" {
  driver = "sqlite"
  dsn    = "file:%[1]s/big.db"
  seed   = "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < 1000) INSERT INTO t SELECT i, substr(hex(randomblob(500)), 1, 990) FROM c;"
}
http_backend "files" {
  base_url = %[2]q
}
tool "shell" {
  shell {
    command = ["head", "-c", "%[3]d", %[4]q]
  }
}
tool "sql" {
  sql {
    database = "db"
    query    = "SELECT id, v FROM t"
  }
}
tool "http" {
  http {
    backend = "files"
    path    = "/big.txt"
  }
}
tool "static" {
  result {
    content "text" {
      text = file(%[4]q)
    }
  }
}
`, dir, backend.URL, resultBytes, bigFile)
	tools := []string{"shell", "sql", "http", "static"}
	for _, db := range []struct{ tool, driver, env, seed string }{
		{"sql-postgres", "pgx", "MCPD_TEST_POSTGRES_DSN",
			"INSERT INTO mcpd_bench_memory SELECT i, left(repeat(md5(i::text), 31), 990) FROM generate_series(1, 1000) AS i"},
		{"sql-mysql", "mysql", "MCPD_TEST_MYSQL_DSN",
			"INSERT INTO mcpd_bench_memory WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < 1000) SELECT i, LEFT(REPEAT(MD5(i), 31), 990) FROM c"},
	} {
		dsn := os.Getenv(db.env)
		if dsn == "" {
			continue
		}
		seedBenchTable(b, db.driver, dsn, db.seed)
		cfg += fmt.Sprintf(`
database %[1]q {
  driver = %[2]q
  dsn    = %[3]q
}
tool %[1]q {
  sql {
    database = %[1]q
    query    = "SELECT id, v FROM mcpd_bench_memory"
  }
}
`, db.tool, map[string]string{"pgx": "postgres", "mysql": "mysql"}[db.driver], dsn)
		tools = append(tools, db.tool)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
	reg.Register("http", httpadapter.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		b.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	defer cur.Load().Close()

	// mcpd serve's defaults (cmd/mcpd/httpserver.go, serve.go).
	const clients = 64
	srv := serve.New(cur, serve.Options{Logger: quiet, MaxInflight: clients, OutputBudget: 256 << 20})
	h := srv.HTTPHandler(serve.HTTPOptions{
		SessionTimeout: 10 * time.Minute, MaxSessions: 1000, MaxInflight: clients, MaxBody: 4 << 20,
		MaxInflightBytes: 64 << 20, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
	})
	ts := httptest.NewServer(h)
	defer ts.Close()

	defer debug.SetGCPercent(debug.SetGCPercent(400))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	for _, tool := range tools {
		for _, limit := range []struct {
			name  string
			bytes int64
		}{{"pod", 384 << 20}, {"nolimit", math.MaxInt64}} {
			b.Run(tool+"/"+limit.name, func(b *testing.B) {
				debug.SetMemoryLimit(limit.bytes)
				benchResultMemory(b, ts.Listener.Addr().String(), tool, nil)
			})
			if strings.HasPrefix(tool, "sql") || tool == "http" {
				// The same calls in 2025-11-25 sessions (fastlegacy.go).
				b.Run(tool+"/legacy-"+limit.name, func(b *testing.B) {
					debug.SetMemoryLimit(limit.bytes)
					benchResultMemory(b, ts.Listener.Addr().String(), tool, h)
				})
			}
		}
	}
}

// seedBenchTable creates mcpd_bench_memory (id, v) on a database
// outside the server and fills it with seed; it is dropped when b ends.
func seedBenchTable(b *testing.B, driver, dsn, seed string) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		db.Exec("DROP TABLE IF EXISTS mcpd_bench_memory")
		db.Close()
	})
	for _, q := range []string{
		"DROP TABLE IF EXISTS mcpd_bench_memory",
		"CREATE TABLE mcpd_bench_memory (id INT PRIMARY KEY, v VARCHAR(1000))",
		seed,
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

// benchResultMemory is one sub-benchmark of BenchmarkResultMemory.
// With legacy, the handler serving addr, each connection calls in a
// 2025-11-25 session of its own.
func benchResultMemory(b *testing.B, addr, tool string, legacy http.Handler) {
	const clients = 64
	conns := make([]*memConn, clients)
	for i := range conns {
		conns[i] = dialMem(b, addr, tool)
		defer conns[i].nc.Close()
		if legacy != nil {
			conns[i].openLegacy(b, addr, tool, legacy)
		}
	}
	// One round first, so that pools and buffers exist before the
	// baseline is read.
	round(b, conns)
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	rss0 := readRSS(b, "VmRSS:")
	var peakHeap [2]atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go samplePeakHeap(&peakHeap, stop, sampled)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		round(b, conns)
	}
	b.StopTimer()
	close(stop)
	<-sampled
	hwm := readRSS(b, "VmHWM:")
	peak := hwm - rss0
	b.ReportMetric(float64(hwm)/1e6, "peak-RSS-total-MB")
	b.ReportMetric(float64(peak)/1e6, "peak-RSS-MB")
	b.ReportMetric(float64(peakHeap[0].Load())/1e6, "peak-heap-MB")
	b.ReportMetric(float64(peakHeap[1].Load())/1e6, "peak-live-MB")
	b.ReportMetric(float64(peak)/float64(clients*resultBytes), "x-inflight")
}

// round makes one call on each connection at once and checks that each
// got a result at least resultBytes long.
func round(b *testing.B, conns []*memConn) {
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.call(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// memConn is a client of the 2026-07-28 protocol on one keep-alive
// connection that reads its answers without keeping them.
type memConn struct {
	nc  net.Conn
	br  *bufio.Reader
	req []byte
}

func dialMem(b *testing.B, addr, tool string) *memConn {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	return &memConn{nc: nc, br: bufio.NewReaderSize(nc, 32<<10), req: dialMemRequest(addr, tool)}
}

// dialMemRequest is a 2026-07-28 tools/call of tool without arguments.
func dialMemRequest(addr, tool string) []byte {
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modern + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	h := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n" +
		"Mcp-Protocol-Version: " + modern + "\r\nMcp-Method: tools/call\r\nMcp-Name: " + tool + "\r\n"
	return []byte(h + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// openLegacy opens a 2025-11-25 session on c, and makes c's call one of
// the session's.
func (c *memConn) openLegacy(b *testing.B, addr, tool string, h http.Handler) {
	post := func(sid, body string) *http.Response {
		req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
		if sid != "" {
			req += "Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: " + legacy + "\r\n"
		}
		if _, err := io.WriteString(c.nc, req+"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+legacy+`","capabilities":{},"clientInfo":{"name":"mem","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		b.Fatalf("initialize: HTTP %d", resp.StatusCode)
	}
	if resp := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		b.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	wait.Until(b, "the session is ready for the fast path", func() bool { return serve.LegacyReady(h, sid) })
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	c.req = []byte("POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n" +
		"Mcp-Session-Id: " + sid + "\r\nMcp-Protocol-Version: " + legacy + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

func (c *memConn) call() error {
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var head headBuf
	n, err := io.Copy(&head, resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || n < resultBytes || bytes.Contains(head.b, []byte(`"isError":true`)) {
		return fmt.Errorf("HTTP %d, %d bytes (%v): %.300s", resp.StatusCode, n, err, head.b)
	}
	return nil
}

// headBuf keeps the first bytes written to it, for error messages.
type headBuf struct{ b []byte }

func (h *headBuf) Write(p []byte) (int, error) {
	if room := 512 - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func samplePeakHeap(peak *[2]atomic.Uint64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(s)
		for i, v := range s {
			if v := v.Value.Uint64(); v > peak[i].Load() {
				peak[i].Store(v)
			}
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// resetPeakRSS resets the process's VmHWM to its current resident set.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
}

func readRSS(b *testing.B, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
