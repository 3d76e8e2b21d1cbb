package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

// opsConfig has a tool that sleeps as long as it is told (a real process,
// so that a call is really in flight), one that fails, and a SQLite
// database with a tool that reads it.
const opsConfig = `
server {
  name    = "ops-test"
  version = "0.1.0"
}

tool "sleep" {
  description = "Sleeps for the given number of seconds."
  param "seconds" {
    type = "string"
  }
  shell {
    command = ["sleep", args.seconds]
    timeout = "60s"
  }
  result {
    content "text" {
      text = "slept ${args.seconds}"
    }
  }
}

tool "fail" {
  description = "Always fails."
  shell {
    command = ["false"]
  }
}

database "books" {
  driver = "sqlite"
  dsn    = "file:books.db"
  seed   = "CREATE TABLE books (title TEXT); INSERT INTO books VALUES ('Dune');"
}

tool "count_books" {
  description = "Counts the books."
  annotations {
    read_only = true
  }
  sql {
    database = "books"
    query    = "SELECT count(*) AS n FROM books"
  }
}
`

// opsServer is a running `mcpd serve --http` with its logs.
type opsServer struct {
	cmd      *exec.Cmd
	endpoint string // http://127.0.0.1:PORT/mcp
	base     string // http://127.0.0.1:PORT
	logs     *lockedBuffer
}

var adminRE = regexp.MustCompile(`serving health and metrics" url=http://(\S+)/metrics`)

func startOps(t *testing.T, dir string, args ...string) *opsServer {
	t.Helper()
	cmd := mcpdCommand(append([]string{"serve", "--http", "127.0.0.1:0", "-c", dir}, args...)...)
	endpoint, logs := startHTTPLogs(t, cmd)
	return &opsServer{cmd: cmd, endpoint: endpoint, base: strings.TrimSuffix(endpoint, "/mcp"), logs: logs}
}

// startHTTPLogs is startHTTP that also returns the process's log.
func startHTTPLogs(t *testing.T, cmd *exec.Cmd) (string, *lockedBuffer) {
	t.Helper()
	// A pipe of the test's own, not cmd.StderrPipe: Wait closes that one
	// once the process exits, and the last lines it wrote (msg=stopped)
	// could be lost before they are read.
	stderrPipe, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stderrPipe.Close()
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	urls := make(chan string, 1)
	go func() {
		defer stderrPipe.Close()
		sc := bufio.NewScanner(stderrPipe)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	select {
	case u := <-urls:
		return u, logs
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpd did not report its URL; stderr:\n%s", logs.String())
	}
	return "", nil
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func connectHTTP(t *testing.T, endpoint, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "ops-test", Version: "1"}, opts)
	cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// waitExit waits for the process and returns its exit code and how long it
// took.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode(), time.Since(start)
	case <-time.After(limit):
		t.Fatalf("mcpd did not exit within %s", limit)
	}
	return -1, 0
}

type callOutcome struct {
	res *mcp.CallToolResult
	err error
}

// SIGTERM over HTTP, in both eras: /readyz turns 503 at once; calls in
// flight finish and are answered; a call longer than the grace period is
// answered with a tool error; the 2025 session's open GET stream does not
// hold the exit back; the exit status is 0.
func TestHTTPShutdownDrains(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	s := startOps(t, dir, "--shutdown-delay", "700ms", "--shutdown-grace", "2s")
	legacyCS := connectHTTP(t, s.endpoint, "2025-11-25", nil)
	modernCS := connectHTTP(t, s.endpoint, "2026-07-28", nil)
	if code, body := httpGet(t, s.base+"/readyz"); code != 200 || !strings.Contains(body, `"status": "ok"`) {
		t.Fatalf("/readyz before shutdown: %d %s", code, body)
	}

	calls := []struct {
		cs      *mcp.ClientSession
		seconds string
	}{{legacyCS, "1"}, {legacyCS, "1.5"}, {modernCS, "1"}, {legacyCS, "30"}, {modernCS, "30"}}
	results := make([]callOutcome, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": c.seconds}})
			results[i] = callOutcome{res, err}
		}()
	}
	wait.Until(t, "every call running", func() bool {
		_, scrape := httpGet(t, s.base+"/metrics")
		v, _ := metricValue(scrape, "mcpd_tool_calls_in_flight")
		return v == fmt.Sprint(len(calls))
	})
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	time.Sleep(100 * time.Millisecond) // "at once": /readyz must have turned within this window
	if code, body := httpGet(t, s.base+"/readyz"); code != 503 || !strings.Contains(body, `"status": "draining"`) {
		t.Errorf("/readyz during the drain: %d %s", code, body)
	}
	wg.Wait()
	code, _ := waitExit(t, s.cmd, 15*time.Second)
	took := time.Since(signalled)
	for i, c := range calls {
		r := results[i]
		if r.err != nil {
			t.Errorf("sleep %s: no answer: %v", c.seconds, r.err)
			continue
		}
		if c.seconds == "30" {
			if !r.res.IsError || !strings.Contains(textOf(r.res), "shutting down") {
				t.Errorf("sleep 30 past the grace period: %+v %q", r.res, textOf(r.res))
			}
		} else if r.res.IsError || textOf(r.res) != "slept "+c.seconds {
			t.Errorf("sleep %s: %q (isError %v)", c.seconds, textOf(r.res), r.res.IsError)
		}
	}
	if code != 0 {
		t.Errorf("exit status %d; log:\n%s", code, s.logs.String())
	}
	// delay 0.7s + grace 2s, plus the answers and the closing.
	if took > 5*time.Second {
		t.Errorf("shutdown took %s", took)
	}
}

// An idle server with open notification streams (a 2025 session's GET, a
// 2026 subscriptions/listen) exits at once on SIGTERM, not after the grace
// period.
func TestHTTPShutdownOpenStreams(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	s := startOps(t, dir, "--shutdown-grace", "20s")
	listen := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
	connectHTTP(t, s.endpoint, "2025-11-25", listen)
	connectHTTP(t, s.endpoint, "2026-07-28", listen)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, body := httpGet(t, s.base+"/metrics")
		if strings.Contains(body, `mcpd_streams_open{kind="get"} 1`) && strings.Contains(body, `mcpd_streams_open{kind="listen"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams not open:\n%s", grepLines(body, "mcpd_streams_open"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, s.cmd, 25*time.Second)
	if code != 0 || took > 2*time.Second {
		t.Errorf("exit %d after %s; log:\n%s", code, took, s.logs.String())
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// rawStdio is `mcpd serve --stdio` driven with raw JSON-RPC lines.
type rawStdio struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any // every message mcpd writes; closed at EOF
	logs  *lockedBuffer
}

func startRawStdio(t *testing.T, dir string, args ...string) *rawStdio {
	t.Helper()
	cmd := mcpdCommand(append([]string{"serve", "--stdio", "-c", dir}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 100), logs: &lockedBuffer{}}
	cmd.Stderr = r.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				r.lines <- m
			}
		}
	}()
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := <-r.lines; m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawStdio) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *rawStdio) callSleep(t *testing.T, id int, seconds string) {
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":%q}}}`, id, seconds))
}

// answers collects the responses by id until mcpd closes stdout.
func (r *rawStdio) answers(t *testing.T, limit time.Duration) map[int]map[string]any {
	t.Helper()
	out := map[int]map[string]any{}
	timeout := time.After(limit)
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				return out
			}
			if id, ok := m["id"].(float64); ok {
				out[int(id)] = m
			}
		case <-timeout:
			t.Fatalf("stdout still open after %s; log:\n%s", limit, r.logs.String())
		}
	}
}

func resultText(m map[string]any) (string, bool) {
	res, _ := m["result"].(map[string]any)
	if res == nil {
		return "", false
	}
	isError, _ := res["isError"].(bool)
	var parts []string
	content, _ := res["content"].([]any)
	for _, c := range content {
		if cm, ok := c.(map[string]any); ok {
			if s, ok := cm["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	return strings.Join(parts, "\n"), isError
}

// A stdio client that sends ten calls and closes stdin gets ten answers
// before mcpd exits.
func TestStdioEOFAnswersInFlight(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	r := startRawStdio(t, dir, "--log-level", "warn")
	for id := 1; id <= 10; id++ {
		r.callSleep(t, id, "0.5")
	}
	time.Sleep(100 * time.Millisecond) // the calls reach mcpd: a stdio pipe shows no sign of it
	r.stdin.Close()
	got := r.answers(t, 10*time.Second)
	for id := 1; id <= 10; id++ {
		text, isErr := resultText(got[id])
		if text != "slept 0.5" || isErr {
			t.Errorf("call %d: %v", id, got[id])
		}
	}
	if code, _ := waitExit(t, r.cmd, 5*time.Second); code != 0 {
		t.Errorf("exit status %d; log:\n%s", code, r.logs.String())
	}
}

// SIGTERM on stdio: the calls in flight are answered (the one longer than
// the grace period with a tool error), then mcpd exits with 0.
func TestStdioSIGTERMDrains(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	r := startRawStdio(t, dir, "--log-level", "warn", "--shutdown-grace", "1500ms")
	r.callSleep(t, 1, "1")
	r.callSleep(t, 2, "30")
	time.Sleep(300 * time.Millisecond) // the calls reach mcpd: a stdio pipe shows no sign of it
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := r.answers(t, 10*time.Second)
	if text, isErr := resultText(got[1]); text != "slept 1" || isErr {
		t.Errorf("call within the grace period: %v", got[1])
	}
	if text, isErr := resultText(got[2]); !isErr || !strings.Contains(text, "shutting down") {
		t.Errorf("call past the grace period: %v", got[2])
	}
	code, _ := waitExit(t, r.cmd, 5*time.Second)
	if took := time.Since(start); code != 0 || took > 4*time.Second {
		t.Errorf("exit status %d after %s; log:\n%s", code, took, r.logs.String())
	}
}

// A second signal ends a drain at once, with a non-zero status.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	r := startRawStdio(t, dir, "--log-level", "warn", "--shutdown-grace", "30s")
	r.callSleep(t, 1, "30")
	time.Sleep(300 * time.Millisecond) // the call reaches mcpd: a stdio pipe shows no sign of it
	r.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(300 * time.Millisecond) // the first signal is handled (the drain logs at info, above this test's level)
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code, took := waitExit(t, r.cmd, 5*time.Second); code != 128+int(syscall.SIGTERM) || took > 2*time.Second {
		t.Errorf("exit status %d after %s", code, took)
	}
}

// metricValue finds the value of one series in a Prometheus text scrape.
func metricValue(scrape, series string) (string, bool) {
	for _, l := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v, true
		}
	}
	return "", false
}

// binaryRevision is the commit go build stamped into bin ("" for none), as
// `go version -m` reads it.
func binaryRevision(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m %s: %v", bin, err)
	}
	if m := regexp.MustCompile(`(?m)^\s*build\s+vcs\.revision=(\S+)$`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// `mcpd version` of a binary built with go build in a git checkout names
// the checkout's commit (the toolchain's VCS stamp), and /metrics'
// mcpd_build_info carries it with the Go version.
func TestVersionNamesCommit(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	dir := strings.TrimSpace(string(root))
	// go build stamps only where .git is a directory: a worktree's .git is
	// a file, and a source archive has none.
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		t.Skipf("%s/.git is not a directory (a git worktree?): go build does not stamp the commit there", dir)
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	commit := strings.TrimSpace(string(head))
	bin := filepath.Join(t.TempDir(), "mcpd")
	// -buildvcs=true: GOFLAGS may turn stamping off, and the test must see
	// what a plain go build does in a checkout.
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The version is "dev", or the pseudo-version Go 1.24 and later derive
	// from the commit (v0.0.0-20261201214914-2ea3cd37be04).
	want := regexp.MustCompile(`^mcpd \S+ \(commit ` + commit[:12] + `(, modified)?, ` + regexp.QuoteMeta(runtime.Version()) + `\)\n$`)
	if !want.Match(out) {
		t.Errorf("mcpd version = %q, want it to match %s", out, want)
	}
	if got := binaryRevision(t, bin); got != commit {
		t.Errorf("vcs.revision = %q, want HEAD %s", got, commit)
	}
}

// /metrics after calls of each outcome, and /healthz after a broken reload.
func TestMetricsAndHealth(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	s := startOps(t, dir)
	cs := connectHTTP(t, s.endpoint, "2025-11-25", nil)
	ctx := bounded(t)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"seconds": "0"}}); err != nil || res.IsError {
		t.Fatalf("sleep: %v %v", err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail"}); err != nil || !res.IsError {
		t.Fatalf("fail: %v %v", err, res)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count_books"}); err != nil || res.IsError {
		t.Fatalf("count_books: %v %v", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no such tool"}); err == nil {
		t.Fatal("unknown tool: no error")
	}
	code, scrape := httpGet(t, s.base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, tc := range []struct{ series, want string }{
		{`mcpd_tool_calls_total{gen_ai_tool_name="sleep",outcome="ok"}`, "1"},
		{`mcpd_tool_calls_total{gen_ai_tool_name="fail",outcome="tool_error"}`, "1"},
		{`mcpd_tool_calls_total{gen_ai_tool_name="count_books",outcome="ok"}`, "1"},
		{`mcpd_tool_calls_total{gen_ai_tool_name="unknown",outcome="protocol_error"}`, "1"},
		{`mcpd_tool_call_duration_seconds_count{gen_ai_tool_name="sleep"}`, "1"},
		{`mcpd_tool_calls_in_flight`, "0"},
		{`mcpd_mcp_server_operation_duration_seconds_count{error_type="",mcp_method_name="tools/call"}`, "2"},
		{`mcpd_mcp_server_operation_duration_seconds_count{error_type="tool_error",mcp_method_name="tools/call"}`, "1"},
		{`mcpd_mcp_server_operation_duration_seconds_count{error_type="-32602",mcp_method_name="tools/call"}`, "1"},
		{`mcpd_streams_open{kind="get"}`, "1"},
		{`mcpd_sessions_open`, "1"},
		{`mcpd_config_generation`, "1"},
		{`mcpd_config_reloads_total{result="failure"}`, "0"},
		{fmt.Sprintf(`mcpd_build_info{goversion="%s",revision="%s",version="dev"}`, runtime.Version(), binaryRevision(t, mcpdBin)), "1"},
		{`mcpd_db_client_connections_max{db_client_connection_pool_name="books",mode="rw"}`, "10"},
		{`mcpd_db_client_connections{db_client_connection_pool_name="books",db_client_connection_state="used",mode="ro"}`, "0"},
	} {
		if got, ok := metricValue(scrape, tc.series); !ok || got != tc.want {
			t.Errorf("%s = %q, want %s", tc.series, got, tc.want)
		}
	}
	if n, _ := metricValue(scrape, `mcpd_db_client_connections{db_client_connection_pool_name="books",db_client_connection_state="idle",mode="ro"}`); n == "" || n == "0" {
		t.Errorf("the read-only pool has no idle connection after a query:\n%s", grepLines(scrape, "mcpd_db_"))
	}
	if v, _ := metricValue(scrape, `mcpd_http_requests_total{http_request_method="POST",http_response_status_code="200"}`); v == "" || v == "0" {
		t.Errorf("no HTTP requests counted:\n%s", grepLines(scrape, "mcpd_http"))
	}
	// The HTTP latency histogram: every POST answered took well under 10s.
	posts, _ := metricValue(scrape, `mcpd_http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="200"}`)
	if posts == "" || posts == "0" {
		t.Errorf("no HTTP request durations recorded:\n%s", grepLines(scrape, "mcpd_http_server"))
	}
	if v, _ := metricValue(scrape, `mcpd_http_server_request_duration_seconds_bucket{http_request_method="POST",http_response_status_code="200",le="10"}`); v != posts {
		t.Errorf("POST 200s under 10s: %q, want all %s:\n%s", v, posts, grepLines(scrape, "mcpd_http_server"))
	}

	// A broken edit: still healthy and ready (the last good config serves),
	// and the health answer says what is wrong and where.
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(opsConfig+"\ntool \"x\" {\n  oops = 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var health struct {
		Status string
		Config struct {
			Generation int
			LastReload struct {
				Result, Diagnostics string
				Time                *time.Time
			} `json:"last_reload"`
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := httpGet(t, s.base+"/healthz")
		if err := json.Unmarshal([]byte(body), &health); err != nil || code != 200 {
			t.Fatalf("/healthz: %d %s", code, body)
		}
		if health.Config.LastReload.Result == "failure" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never showed the failed reload: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := health.Config.LastReload.Diagnostics; !strings.Contains(d, "tools.hcl:") || !strings.Contains(d, "oops") || health.Config.LastReload.Time == nil {
		t.Errorf("diagnostics: %+v", health.Config.LastReload)
	}
	if health.Status != "ok" || health.Config.Generation != 1 {
		t.Errorf("health = %+v", health)
	}
	if code, _ := httpGet(t, s.base+"/readyz"); code != 200 {
		t.Errorf("/readyz after a failed reload: %d", code)
	}
	_, scrape = httpGet(t, s.base+"/metrics")
	if v, _ := metricValue(scrape, `mcpd_config_reloads_total{result="failure"}`); v != "1" {
		t.Errorf("failed reloads = %q", v)
	}
	// Health and metrics are Host-checked like /mcp.
	req, _ := http.NewRequest("GET", s.base+"/metrics", nil)
	req.Host = "evil.example.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("/metrics with a foreign Host: %d", resp.StatusCode)
	}
}

// --ready-check-backends: /readyz pings the databases and names the one
// that does not answer; without the flag, it does not ping.
func TestReadyChecksBackends(t *testing.T) {
	dsn := os.Getenv("MCPD_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("MCPD_TEST_POSTGRES_DSN not set")
	}
	config := fmt.Sprintf(`
database "good" {
  driver = "postgres"
  dsn    = %q
}

database "down" {
  driver = "postgres"
  dsn    = "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=1"
}

tool "one" {
  description = "Selects one."
  sql {
    database = "good"
    query    = "SELECT 1 AS one"
  }
}

tool "two" {
  description = "Selects two."
  sql {
    database = "down"
    query    = "SELECT 2 AS two"
  }
}
`, dsn)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"checked", []string{"--ready-check-backends"}, 503},
		{"unchecked", nil, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := configDir(t, map[string]string{"tools.hcl": config})
			s := startOps(t, dir, tc.args...)
			code, body := httpGet(t, s.base+"/readyz")
			if code != tc.want {
				t.Fatalf("/readyz = %d, want %d: %s", code, tc.want, body)
			}
			if tc.want != 503 {
				return
			}
			var ready struct {
				Status   string
				Backends map[string]string
			}
			if err := json.Unmarshal([]byte(body), &ready); err != nil {
				t.Fatal(err)
			}
			if ready.Status != "unavailable" || len(ready.Backends) != 1 || !strings.Contains(ready.Backends["database down"], `database "down"`) {
				t.Errorf("/readyz body: %s", body)
			}
			if strings.Contains(body, "postgres://") {
				t.Errorf("/readyz shows a DSN: %s", body)
			}
		})
	}
}

// A call the client cancelled is no longer waited for: closing stdin then
// ends mcpd at once, not after the grace period.
func TestStdioEOFAfterClientCancel(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": opsConfig})
	r := startRawStdio(t, dir, "--log-level", "warn", "--shutdown-grace", "20s")
	r.callSleep(t, 1, "30")
	time.Sleep(200 * time.Millisecond) // the call reaches mcpd: a stdio pipe shows no sign of it
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"test"}}`)
	time.Sleep(200 * time.Millisecond) // the cancellation reaches mcpd, likewise unseen
	r.stdin.Close()
	start := time.Now()
	r.answers(t, 10*time.Second)
	code, _ := waitExit(t, r.cmd, 10*time.Second)
	if took := time.Since(start); code != 0 || took > 3*time.Second {
		t.Errorf("exit status %d after %s; log:\n%s", code, took, r.logs.String())
	}
}
