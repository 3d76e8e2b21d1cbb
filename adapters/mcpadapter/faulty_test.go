package mcpadapter_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Faulty upstreams that desktop hosts put up with work behind mcpd too. The
// upstream is this test binary run again as a stdio MCP server (a go-sdk
// server) that misbehaves as MCPD_FAULTY says:
//
//	banner      lines that are not messages before its first (text, JSON
//	            that is not JSON-RPC, a Python dict, an array, a 1 MiB
//	            line, a cut message), and a debug line before each message
//	stderr=N    N lines of about 100 bytes on stderr as it starts, and a
//	            1 MiB line
//	mute        reads stdin and never answers
//	plain       none of the above
//
// Its tools: echo (the text back) and burst (sends n list_changed
// notifications, then answers). It writes the count of tools/list requests
// it answered to the file MCPD_FAULTY_COUNT.

const faultyEnv = "MCPD_FAULTY"

// TestFaultyUpstreamProcess is the faulty upstream, when run as one.
func TestFaultyUpstreamProcess(t *testing.T) {
	spec := os.Getenv(faultyEnv)
	if spec == "" {
		t.Skip("the faulty upstream of the tests below, run by them as a program")
	}
	runFaulty(spec, os.Getenv("MCPD_FAULTY_COUNT"))
	os.Exit(0)
}

// faultyOut is the faulty upstream's stdout: whole messages, each after a
// debug line when noisy, and raw lines.
type faultyOut struct {
	mu    sync.Mutex
	noisy bool
	n     int
}

func (o *faultyOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.noisy {
		o.n++
		fmt.Fprintf(os.Stdout, "debug: sending message %d\n", o.n)
	}
	return os.Stdout.Write(p)
}

func (o *faultyOut) Close() error { return nil }

func (o *faultyOut) raw(lines ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range lines {
		_, _ = os.Stdout.WriteString(l + "\n")
	}
}

func runFaulty(spec, countFile string) {
	modes := map[string]string{}
	for _, m := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(m, "=")
		modes[k] = v
	}
	if _, ok := modes["mute"]; ok {
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	out := &faultyOut{}
	if _, ok := modes["banner"]; ok {
		out.raw("faulty-server 1.0 starting on stdio...",
			`{"level":"info","msg":"listening","jsonrpc":"1.0"}`,
			`{'jsonrpc': '2.0', 'method': 'notifications/progress'}`,
			`[1, 2, 3]`,
			strings.Repeat("x", 1<<20),
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1"`,
			"", "\r", "   ")
		out.noisy = true
	}
	if n, ok := modes["stderr"]; ok {
		n, _ := strconv.Atoi(n)
		go func() {
			_, _ = os.Stderr.WriteString(strings.Repeat("e", 1<<20) + "\n")
			pad := strings.Repeat(".", 80)
			for i := range n {
				fmt.Fprintf(os.Stderr, "stderr line %d %s\n", i, pad)
			}
		}()
	}
	var lists sync.Mutex
	listed := 0
	srv := mcp.NewServer(&mcp.Implementation{Name: "faulty", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && countFile != "" {
				lists.Lock()
				listed++
				tmp := countFile + ".tmp"
				_ = os.WriteFile(tmp, []byte(strconv.Itoa(listed)), 0o644)
				_ = os.Rename(tmp, countFile)
				lists.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	type textArgs struct {
		Text string `json:"text"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	type burstArgs struct {
		N int `json:"n"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "burst"}, func(_ context.Context, _ *mcp.CallToolRequest, a burstArgs) (*mcp.CallToolResult, any, error) {
		for range a.N {
			out.raw(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil, nil
	})
	_ = srv.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: out})
}

// faultyGateway is a gateway config exposing the faulty upstream's tools
// as f_echo and f_burst.
func faultyGateway(t *testing.T, spec, version, countFile, attrs string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
mcp_server "faulty" {
  command          = [%q, "-test.run=^TestFaultyUpstreamProcess$"]
  env              = { %s = %q, MCPD_FAULTY_COUNT = %q }
  protocol_version = %q
  %s
  expose {
    prefix = "f_"
  }
}
`, exe, faultyEnv, spec, countFile, version, attrs)
}

// logCounter is a slog handler that counts the records of one upstream, by
// message, and their bytes.
type logCounter struct {
	upstream string
	attrs    []slog.Attr
	c        *logCounts
}

type logCounts struct {
	mu    sync.Mutex
	n     map[string]int
	bytes int
	last  map[string]slog.Record
}

func (h *logCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCounter{upstream: h.upstream, attrs: append(append([]slog.Attr{}, h.attrs...), as...), c: h.c}
}

func (h *logCounter) WithGroup(string) slog.Handler { return h }

func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	mine := false
	for _, a := range h.attrs {
		mine = mine || a.Key == "upstream" && a.Value.String() == h.upstream
	}
	if !mine {
		return nil
	}
	size := len(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		size += len(a.Key) + len(a.Value.String())
		return true
	})
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.n[r.Message]++
	h.c.bytes += size
	h.c.last[r.Message] = r.Clone()
	return nil
}

func (c *logCounts) count(msg string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[msg]
}

// countLogs has the default logger count the records of upstream name
// until the test ends.
func countLogs(t *testing.T, name string) *logCounts {
	c := &logCounts{n: map[string]int{}, last: map[string]slog.Record{}}
	prev := slog.Default()
	slog.SetDefault(slog.New(&logCounter{upstream: name, c: c}))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return c
}

// waitTool waits until the gateway serves the tool name.
func waitTool(t *testing.T, cs *mcp.ClientSession, name string) {
	t.Helper()
	waitFor(t, "the gateway serves "+name, func() bool {
		res, err := cs.ListTools(bounded(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == name {
				return true
			}
		}
		return false
	})
}

func readCount(t *testing.T, file string) int {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(string(b))
	return n
}

// A stdio upstream that prints a banner, JSON that is not JSON-RPC, a
// 1 MiB line and a debug line before each message connects, and its calls
// succeed, in both eras; the lines are counted, and logged at a bounded
// rate.
func TestStrayStdoutLines(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			logs := countLogs(t, "faulty")
			count := filepath.Join(t.TempDir(), "lists")
			began := time.Now()
			w := serveWatched(t, faultyGateway(t, "banner", version, count, ""))
			cs := connect(t, w.url, version, nil, false)
			waitTool(t, cs, "f_echo")
			for i := range 20 {
				want := fmt.Sprintf("hello %d", i)
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "f_echo", Arguments: map[string]any{"text": want}})
				if err != nil || res.IsError || textOf(res) != want {
					t.Fatalf("call %d: %v %q", i, err, textOf(res))
				}
			}
			st := upstreamStatus(t, w.cur, "faulty")
			if st.Restarts != 0 || st.State != "up" {
				t.Errorf("the upstream was restarted %d times (state %s)", st.Restarts, st.State)
			}
			// The banner's 6 lines, and a debug line per message.
			if st.StrayLines < 6+20 {
				t.Errorf("%d stray lines counted, want at least 26", st.StrayLines)
			}
			const msg = "upstream wrote a line that is not a JSON-RPC message to stdout; skipped"
			if n, max := logs.count(msg), 20+int(2*time.Since(began).Seconds())+2; n == 0 || n > max {
				t.Errorf("%d stray lines logged, want 1 to %d (20 at once, 2 a second)", n, max)
			}
			logs.mu.Lock()
			rec := logs.last[msg]
			logs.mu.Unlock()
			rec.Attrs(func(a slog.Attr) bool {
				if a.Key == "line" && len(a.Value.String()) > 600 {
					t.Errorf("a logged line of %d bytes", len(a.Value.String()))
				}
				return true
			})
		})
	}
}

// An upstream that floods stderr costs a bounded number of log records:
// the first lines, then a few a second, with the rest counted and reported.
func TestStderrFloodIsBounded(t *testing.T) {
	const lines = 200_000 // and a 1 MiB line first
	logs := countLogs(t, "faulty")
	began := time.Now() // before the upstream starts
	w := serveWatched(t, faultyGateway(t, "stderr="+strconv.Itoa(lines), legacy, "", ""))
	cs := connect(t, w.url, legacy, nil, false)
	waitTool(t, cs, "f_echo")
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "f_echo", Arguments: map[string]any{"text": "still here"}})
	if err != nil || textOf(res) != "still here" {
		t.Fatalf("call: %v %q", err, textOf(res))
	}
	waitFor(t, "every stderr line is logged or counted", func() bool {
		st := upstreamStatus(t, w.cur, "faulty")
		return int(st.StderrDropped)+logs.count("upstream stderr") == lines+1
	})
	elapsed := time.Since(began)
	logged := logs.count("upstream stderr")
	if max := 100 + int(20*elapsed.Seconds()) + 20; logged > max {
		t.Errorf("%d stderr lines logged in %s, want at most %d (100, then 20 a second)", logged, elapsed, max)
	}
	logs.mu.Lock()
	bytes := logs.bytes
	logs.mu.Unlock()
	if bytes > (logged+10)*(8<<10+200) {
		t.Errorf("%d bytes of records for %d lines", bytes, logged)
	}
	// The drops are reported: at once when the upstream stops.
	w.rewrite(t, `mcp_server "other" { command = ["/bin/true"] }`)
	waitFor(t, "the drops are reported", func() bool { return logs.count("upstream stderr lines dropped") > 0 })
	t.Logf("%d stderr lines (%d MB): %d logged in %s, %d records of %d KB in all", lines+1, (lines*100+1<<20)>>20, logged, elapsed.Round(time.Millisecond), logs.count("upstream stderr")+logs.count("upstream stderr lines dropped"), bytes>>10)
}

// A burst of list_changed notifications costs a listing or two, not one
// each.
func TestListChangedBurstIsCoalesced(t *testing.T) {
	const burst = 2000
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			count := filepath.Join(t.TempDir(), "lists")
			w := serveWatched(t, faultyGateway(t, "plain", version, count, ""))
			cs := connect(t, w.url, version, nil, false)
			waitTool(t, cs, "f_burst")
			before := readCount(t, count)
			began := time.Now()
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "f_burst", Arguments: map[string]any{"n": burst}})
			if err != nil || textOf(res) != "sent" {
				t.Fatalf("burst: %v %q", err, textOf(res))
			}
			// One listing at once, one after the burst, and one per 500ms
			// while it lasts (it is read before the call's result).
			max := 2 + int(time.Since(began)/(500*time.Millisecond))
			// Settled: no listing for longer than the least interval
			// between two (500ms); without coalescing there would be
			// thousands, each taking a millisecond or so.
			last, stable := -1, 0
			waitFor(t, "the listings settle", func() bool {
				n := readCount(t, count)
				if n == last {
					stable++
				} else {
					last, stable = n, 0
				}
				return n > before && stable >= 40
			})
			if n := last - before; n > max {
				t.Errorf("%d listings for a burst of %d list_changed, want at most %d", n, burst, max)
			} else {
				t.Logf("%d listings for a burst of %d list_changed", n, burst)
			}
		})
	}
}

// A call to an upstream whose handshake does not complete, with a tool
// timeout shorter than connect_timeout, names the upstream and what
// failed, not the tool's timeout: a stdio upstream that never answers, an
// HTTP one that never answers, an HTTP one that answers 500.
func TestHandshakeNotCompleted(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stop) }) // before hang.Close, which waits for its handlers
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(fail.Close)
	for _, version := range []string{legacy, modern} {
		handshake := map[string]string{legacy: "initialize", modern: "server/discover, then initialize"}[version]
		for _, tc := range []struct{ name, server, want string }{
			{"stdio, mute", fmt.Sprintf(`command = [%q, "-test.run=^TestFaultyUpstreamProcess$"]
  env     = { %s = "mute" }`, exe, faultyEnv), "the handshake (" + handshake + ") has not completed after 500ms (connect_timeout 30s)"},
			{"http, mute", fmt.Sprintf("url = %q", hang.URL), "the handshake (" + handshake + ") has not completed after 500ms (connect_timeout 30s)"},
			{"http, 500", fmt.Sprintf("url = %q", fail.URL), "the handshake (" + handshake + ") failed: HTTP 500 Internal Server Error"},
		} {
			t.Run(version+" "+tc.name, func(t *testing.T) {
				gw := serveConfig(t, fmt.Sprintf(`
mcp_server "up" {
  %s
  protocol_version = %q
  connect_timeout  = "30s"
}

tool "hello" {
  description = "Says hello."
  timeout     = "500ms"
  mcp {
    server = "up"
    tool   = "echo"
  }
}
`, tc.server, version))
				cs := connect(t, gw, version, nil, false)
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "hello"})
				if err != nil {
					t.Fatal(err)
				}
				// The time waited (the tool's timeout) is rounded to the
				// millisecond; load may add some.
				got := regexp.MustCompile(`after \S+ \(`).ReplaceAllString(textOf(res), "after 500ms (")
				if want := "tool hello: upstream up is not connected: " + tc.want; !res.IsError || got != want {
					t.Errorf("got  %q\nwant %q", textOf(res), want)
				}
			})
		}
	}
}

// faultyProxy passes requests to an HTTP upstream, and answers its
// tools/call requests as fail says instead: "500" (a plain-text error
// page), "502" (an HTML one), "reset" (the connection is reset).
func faultyProxy(t *testing.T, upstream, fail string) string {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"method":"tools/call"`)) {
			rp.ServeHTTP(w, r)
			return
		}
		switch fail {
		case "500":
			http.Error(w, "panic: database exploded at db.internal:5432", http.StatusInternalServerError)
		case "502":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html><body>nginx: upstream 10.0.0.7 unreachable</body></html>")
		case "reset":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			_ = conn.(*net.TCPConn).SetLinger(0) // close sends RST
			_ = conn.Close()
		}
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// An HTTP upstream's failures name the upstream and say the status, or
// what became of the connection, not the SDK's "rejected by transport";
// the error page's body is in the log, not in the caller's error.
func TestHTTPUpstreamFailures(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo"}}}, nil, nil
		})
		up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: version == modern}))
		t.Cleanup(up.Close)
		for _, tc := range []struct{ fail, want string }{
			{"500", "HTTP 500 Internal Server Error"},
			{"502", "HTTP 502 Bad Gateway"},
			{"reset", "the connection failed: read: connection reset by peer"},
		} {
			t.Run(version+" "+tc.fail, func(t *testing.T) {
				logs := countLogs(t, "up")
				gw := serveConfig(t, fmt.Sprintf(`
mcp_server "up" {
  url              = %q
  protocol_version = %q
}

tool "hello" {
  description = "Says hello."
  mcp {
    server = "up"
    tool   = "echo"
  }
}
`, faultyProxy(t, up.URL, tc.fail), version))
				cs := connect(t, gw, version, nil, false)
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "hello"})
				if err != nil {
					t.Fatal(err)
				}
				if want := "tool hello: upstream up failed on echo: " + tc.want; !res.IsError || textOf(res) != want {
					t.Errorf("got  %q\nwant %q", textOf(res), want)
				}
				if tc.fail == "reset" {
					return
				}
				logs.mu.Lock()
				rec, ok := logs.last["upstream answered with an HTTP error"]
				logs.mu.Unlock()
				body := ""
				rec.Attrs(func(a slog.Attr) bool {
					if a.Key == "body" {
						body = a.Value.String()
					}
					return true
				})
				if !ok || !strings.Contains(body, map[string]string{"500": "database exploded", "502": "nginx"}[tc.fail]) {
					t.Errorf("the error page is not in the log: %q", body)
				}
			})
		}
	}
}
