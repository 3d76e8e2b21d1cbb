package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests start the real mcpd binary, built once in TestMain, and talk
// to it with the official SDK client, as a host would.

var mcpdBin string

func TestMain(m *testing.M) {
	if stamp := os.Getenv(hostileUpstreamEnv); stamp != "" {
		os.Exit(runHostileUpstream(stamp)) // a stdio upstream of a test's mcpd
	}
	dir, err := os.MkdirTemp("", "mcpd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcpdBin = filepath.Join(dir, "mcpd")
	// mcpd-import beside mcpd, as go install puts it, for the binary; and
	// named by $MCPD_IMPORT for run() in this test process.
	importBin := filepath.Join(dir, "mcpd-import")
	for _, b := range [][2]string{{mcpdBin, "."}, {importBin, "../mcpd-import"}} {
		build := exec.Command("go", "build", "-o", b[0], b[1])
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", b[1]+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	os.Setenv("MCPD_IMPORT", importBin)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// e2eConfig adds to cliConfig a tool that waits ten seconds between its
// progress steps: long enough that only a cancellation ends it in a test.
const e2eConfig = cliConfig + `
tool "wait" {
  description = "Waits ten seconds between steps."
  progress {
    steps    = [0, 100]
    total    = 100
    interval = "10s"
  }
  result {
    content "text" {
      text = "waited"
    }
  }
}
`

// mcpdCommand is the binary with a clean MCPD_* environment.
func mcpdCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(mcpdBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func rpcCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

func textOf(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// exercise runs the calls every transport must answer the same way.
func exercise(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ir := cs.InitializeResult()
	if ir.ServerInfo == nil || ir.ServerInfo.Name != "cli-test" || ir.ServerInfo.Version != "0.1.0" {
		t.Errorf("ServerInfo = %+v", ir.ServerInfo)
	}
	tools, err := cs.ListTools(bounded(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if want := []string{"lookup", "fail", "steps", "wait"}; !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"id": "007"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"id": "007", "limit": float64(10), "verbose": nil, "tags": nil}; res.IsError || !reflect.DeepEqual(res.StructuredContent, want) {
		t.Errorf("lookup: isError=%v structured=%v", res.IsError, res.StructuredContent)
	}
	res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"id": 7}})
	if err != nil || !res.IsError || textOf(res) != `invalid arguments for tool lookup: argument "id" must be a string, got integer 7` {
		t.Errorf("bad arguments: %v %v", res, err)
	}
	if _, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown tool: %v", err)
	}
	rr, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "users://42"})
	if err != nil || rr.Contents[0].Text != `{"id":"42"}` {
		t.Errorf("read: %v %v", rr, err)
	}
	if _, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "users:/"}); rpcCode(err) != mcp.CodeResourceNotFound {
		t.Errorf("unknown resource: %v", err)
	}
	pr, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "trip", Arguments: map[string]string{"city": "Oslo"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "Plan Oslo" {
		t.Errorf("prompt: %v %v", pr, err)
	}
}

// progressRecorder collects progress notifications and signals the first.
type progressRecorder struct {
	mu    sync.Mutex
	got   []float64
	first chan struct{}
	once  sync.Once
}

func newProgressRecorder() *progressRecorder { return &progressRecorder{first: make(chan struct{})} }

func (p *progressRecorder) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.got = append(p.got, req.Params.Progress)
	p.mu.Unlock()
	p.once.Do(func() { close(p.first) })
}

func (p *progressRecorder) values() []float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]float64(nil), p.got...)
}

// Both protocol eras over stdio, with the SDK's CommandTransport spawning
// the binary. Closing the session closes stdin; the server must then exit
// with status 0 (CommandTransport.Close reports the exit status).
func TestStdio(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": e2eConfig})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			rec := newProgressRecorder()
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler})
			cmd := mcpdCommand("serve", "--stdio", "-c", dir)
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s", got)
			}
			exercise(t, cs)

			params := &mcp.CallToolParams{Name: "steps", Arguments: map[string]any{}}
			params.SetProgressToken(7)
			if res, err := cs.CallTool(bounded(t), params); err != nil || res.IsError {
				t.Fatalf("steps: %v %v", res, err)
			}
			// The client handles notifications asynchronously: wait for both
			// (a liveness bound), then check their order.
			for deadline := time.Now().Add(20 * time.Second); len(rec.values()) < 2 && time.Now().Before(deadline); {
				time.Sleep(2 * time.Millisecond)
			}
			if got := rec.values(); !reflect.DeepEqual(got, []float64{1, 2}) {
				t.Errorf("progress = %v, want [1 2]", got)
			}

			if err := cs.Close(); err != nil {
				t.Errorf("server did not exit cleanly when stdin closed: %v\nstderr:\n%s", err, stderr.String())
			}
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
				t.Errorf("exit state %v", cmd.ProcessState)
			}
		})
	}
}

// The stdio contract hosts depend on: stdout carries newline-delimited
// JSON-RPC and nothing else, logs go to stderr, a cancelled call ends
// without stopping the server, and EOF on stdin ends the process with
// status 0.
func TestStdioRawStreams(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": e2eConfig})
	cmd := mcpdCommand("serve", "--stdio", "-c", dir, "--log-level", "debug")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	stdout := &teeWriter{pipe: pw}
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		pw.Close()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	})

	rec := newProgressRecorder()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-raw", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: rec.handler})
	cs, err := client.Connect(bounded(t), &mcp.IOTransport{Reader: pr, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	exercise(t, cs)

	// Cancel a call that would take ten seconds, once it has started.
	ctx, cancel := context.WithCancel(context.Background())
	params := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}}
	params.SetProgressToken("w")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	select {
	case <-rec.first:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow call never reported its first step")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	// The server keeps serving.
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "lookup", Arguments: map[string]any{"id": "after"}})
	if err != nil || res.IsError {
		t.Fatalf("call after cancel: %v %v", res, err)
	}
	if got := rec.values(); !reflect.DeepEqual(got, []float64{0}) {
		t.Errorf("progress of the cancelled call = %v, want only the first step", got)
	}

	// Closing the session closes stdin: the server must exit, with 0.
	cs.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("mcpd exited with %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("mcpd did not exit after stdin closed\nstderr:\n%s", stderr.String())
	}

	out := stdout.bytes()
	if len(out) == 0 || out[len(out)-1] != '\n' {
		t.Errorf("stdout does not end with a newline: %q", tail(out))
	}
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	if len(lines) < 10 {
		t.Errorf("only %d lines on stdout", len(lines))
	}
	for i, line := range lines {
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
		}
		if err := json.Unmarshal(line, &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout line %d is not JSON-RPC: %q", i+1, line)
		}
	}
	logs := stderr.String()
	for _, want := range []string{"level=INFO msg=\"config loaded\"", "msg=\"serving MCP on stdio\""} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %s:\n%s", want, logs)
		}
	}
}

func tail(b []byte) []byte {
	if len(b) > 200 {
		return b[len(b)-200:]
	}
	return b
}

// teeWriter keeps everything the server wrote to stdout and passes it on
// to the client; once the client stops reading, it only keeps it.
type teeWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	pipe   *io.PipeWriter
	broken bool
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	broken := w.broken
	w.mu.Unlock()
	if !broken {
		if _, err := w.pipe.Write(p); err != nil {
			w.mu.Lock()
			w.broken = true
			w.mu.Unlock()
		}
	}
	return len(p), nil
}

func (w *teeWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf.Bytes()...)
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var urlRE = regexp.MustCompile(`url=(https?://\S+/mcp)`)

// startHTTP starts `mcpd serve` on a free loopback port and returns the
// endpoint URL, read from its log.
func startHTTP(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	endpoint, _ := startHTTPLogs(t, cmd)
	return endpoint
}

// `mcpd serve` over HTTP: both eras on one endpoint, the Origin and Host
// guard configured by flags and by MCPD_* variables, and a clean exit on
// SIGTERM.
func TestServeHTTP(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": e2eConfig})
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", dir, "--allowed-origin", "https://app.example.com")
	cmd.Env = append(cmd.Env, "MCPD_ALLOWED_HOST=mcp.example.com")
	endpoint := startHTTP(t, cmd)

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-http", Version: "1"}, nil)
			cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s", got)
			}
			exercise(t, cs)
		})
	}

	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"", "", 200},
		{"", "http://evil.example.com", 403},
		{"evil.example.com", "", 403},
		{"", "http://localhost:5173", 200},
		{"", "https://app.example.com", 200}, // --allowed-origin
		{"mcp.example.com", "", 200},         // MCPD_ALLOWED_HOST
	} {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q Origin %q: status %d, want %d: %s", tc.host, tc.origin, resp.StatusCode, tc.want, body)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("mcpd exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("mcpd did not exit after SIGTERM")
	}
}

// A config with errors stops `mcpd serve` before it serves anything, with
// the diagnostics on stderr and status 1; stdout stays empty.
func TestServeBrokenConfig(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": brokenConfig})
	cmd := mcpdCommand("serve", "--stdio", "-c", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit: %v", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), filepath.Join(dir, "tools.hcl")+":1:6: error: Invalid tool name") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
