package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// Two tools whose reservations are 1.2 MiB (three times two streams of
// 200 KiB) and 0.2 MiB; the program says it started by writing a file,
// then sleeps.
const budgetConfig = `
tool "big" {
  param "marker" {
    type = "string"
  }
  param "secs" {
    type = "number"
  }
  shell {
    command          = ["sh", "-c", "echo > \"$1\"; sleep \"$2\"", "sh", args.marker, args.secs]
    max_output_bytes = 204800
  }
}

tool "small" {
  shell {
    command          = ["echo", "small"]
    max_output_bytes = 34133
  }
}
`

// The calls in flight hold their tools' output caps against the server's
// budget: a call that would go past it waits, then gets a busy tool error,
// while a call with caps that fit still runs, and the budget comes back
// when the holder finishes.
func TestOutputBudget(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(budgetConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("shell", shell.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, OutputBudget: 2 << 20, OutputBudgetWait: 200 * time.Millisecond})

	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(raw)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	marker := filepath.Join(t.TempDir(), "started")
	held := make(chan *mcp.CallToolResult, 1)
	go func() { held <- call("big", map[string]any{"marker": marker, "secs": 2}) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call never started")
		}
	}

	// 1.2 MiB held of 2 MiB: another 1.2 MiB does not fit.
	res := call("big", map[string]any{"marker": filepath.Join(t.TempDir(), "x"), "secs": 0})
	if !res.IsError || !strings.Contains(text(res), "output budget (2 MiB, --max-output-budget)") {
		t.Fatalf("second big call: isError=%v %q, want a busy tool error", res.IsError, text(res))
	}
	// 0.2 MiB fits beside it.
	if res := call("small", nil); res.IsError || !strings.Contains(text(res), "small") {
		t.Fatalf("small call: isError=%v %q", res.IsError, text(res))
	}
	if res := <-held; res.IsError {
		t.Fatalf("the holder failed: %q", text(res))
	}
	// Given back: the same call now runs.
	if res := call("big", map[string]any{"marker": filepath.Join(t.TempDir(), "y"), "secs": 0}); res.IsError {
		t.Fatalf("big call after the holder finished: %q", text(res))
	}
}

// Tools for TestBudgetWaitDoesNotStarve: "hold" reserves 1.2 MiB (three
// times two streams of 200 KiB) and runs until its release file exists,
// "small" reserves 0.2 MiB, "static" builds its result from the config and
// reserves nothing.
const starveConfig = `
tool "hold" {
  param "marker" {
    type = "string"
  }
  param "release" {
    type = "string"
  }
  shell {
    command          = ["sh", "-c", "echo > \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.02; done; echo held", "sh", args.marker, args.release]
    max_output_bytes = 204800
    timeout          = "60s"
  }
}

tool "small" {
  shell {
    command          = ["echo", "small"]
    max_output_bytes = 34133
  }
}

tool "static" {
  result {
    content "text" {
      text = "static answer"
    }
  }
}
`

// Calls waiting for output budget must not starve cheap calls: with 4
// request slots and a budget that one "hold" call fills, at most two calls
// wait for it (half the slots), a third is refused at once with a tool
// error instead of taking the last slot, and meanwhile a call that needs
// no budget and one whose reservation fits what is free are both served,
// over real HTTP requests, instead of a 503 or a wait behind the larger
// calls. Once the holder ends, the waiters run.
func TestBudgetWaitDoesNotStarve(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(starveConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("shell", shell.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, MaxInflight: 4, OutputBudget: 2 << 20, OutputBudgetWait: 30 * time.Second})
	ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{MaxInflight: 4, JSONResponse: true}))
	t.Cleanup(ts.Close)
	client := &http.Client{Timeout: 20 * time.Second}

	type answer struct {
		status int
		text   string
		err    error
	}
	call := func(tool string, args map[string]any) answer {
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": tool, "arguments": args,
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": modern, "io.modelcontextprotocol/clientCapabilities": map[string]any{}},
		}})
		req, _ := http.NewRequest(http.MethodPost, ts.URL, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", modern)
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		resp, err := client.Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, text: string(body), err: err}
	}
	tmp := t.TempDir()
	release := filepath.Join(tmp, "release")
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	holdArgs := func(name string) map[string]any {
		return map[string]any{"marker": filepath.Join(tmp, name), "release": release}
	}

	held := make(chan answer, 3)
	go func() { held <- call("hold", holdArgs("holder")) }()
	wait.Until(t, "the holder to start", func() bool { _, err := os.Stat(filepath.Join(tmp, "holder")); return err == nil })
	for _, name := range []string{"waiter1", "waiter2"} {
		go func() { held <- call("hold", holdArgs(name)) }()
	}
	wait.Until(t, "two calls to wait for budget", func() bool { return srv.BudgetWaiters() == 2 })

	if a := call("hold", holdArgs("third")); a.err != nil || a.status != http.StatusOK || !strings.Contains(a.text, `"isError":true`) || !strings.Contains(a.text, "2 more already wait for it; retry in a few seconds") {
		t.Fatalf("third hold call while two wait: %d %s %v, want a busy tool error at once", a.status, a.text, a.err)
	}
	if a := call("static", nil); a.err != nil || a.status != http.StatusOK || !strings.Contains(a.text, "static answer") {
		t.Fatalf("static call while two wait for budget: %d %s %v, want it served", a.status, a.text, a.err)
	}
	if a := call("small", nil); a.err != nil || a.status != http.StatusOK || strings.Contains(a.text, `"isError":true`) || !strings.Contains(a.text, "small") {
		t.Fatalf("small call while two wait for budget: %d %s %v, want it run ahead of them", a.status, a.text, a.err)
	}
	if n := srv.BudgetWaiters(); n != 2 {
		t.Fatalf("%d calls wait for budget after the cheap calls, want still 2", n)
	}

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if a := <-held; a.err != nil || a.status != http.StatusOK || strings.Contains(a.text, `"isError":true`) || !strings.Contains(a.text, "held") {
			t.Fatalf("hold call: %d %s %v, want it run once the holder ended", a.status, a.text, a.err)
		}
	}
}

// A result costs most while the SDK encodes and writes it, after the call
// has returned: over HTTP, a call's reservation is given back only once
// its POST has been answered. Here a client that does not read holds a
// 16 MB result in the server's write, and with it the whole budget: a
// second call waits and is refused; once the first client has read its
// answer, the second call runs.
func TestBudgetHeldUntilWritten(t *testing.T) {
	dir := t.TempDir()
	cfg := `
tool "huge" {
  shell {
    command          = ["sh", "-c", "yes aaaaaaaaaaaaaaa | head -c 16000000"]
    max_output_bytes = 16777216
  }
}
` + starveConfig
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("shell", shell.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, OutputBudget: 8 << 20, OutputBudgetWait: 300 * time.Millisecond})
	ts := httptest.NewServer(srv.HTTPHandler(serve.HTTPOptions{JSONResponse: true}))
	t.Cleanup(ts.Close)
	addr := ts.Listener.Addr().String()

	// The first client sends its call and reads nothing yet.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	slow := &memConn{nc: nc, br: bufio.NewReader(nc)}
	slow.req = dialMemRequest(addr, "huge")
	if _, err := nc.Write(slow.req); err != nil {
		t.Fatal(err)
	}

	small := func() string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(dialMemRequest(addr, "small")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The huge result is being written: its reservation (all 8 MiB) is
	// still held.
	// The huge call may not have reserved yet: call again until refused.
	wait.Until(t, "a small call refused as busy while a huge result is unread", func() bool {
		return strings.Contains(small(), "output budget (8 MiB, --max-output-budget)")
	})
	resp, err := http.ReadResponse(slow.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n < 16000000 {
		t.Fatalf("huge answer: %d bytes, %v", n, err)
	}
	wait.Until(t, "a small call answered once the huge answer was read", func() bool {
		got := small()
		return !strings.Contains(got, `"isError":true`) && strings.Contains(got, "small")
	})
}

// Tools for TestOutputBudgetBuiltResult: "hold" reserves 1.2 MiB of the
// 2 MiB budget until its release file exists; "built" and "huge" build
// results of 400,000 and 1,000,000 bytes with their result blocks (1.1 and
// 2.9 MiB at three times), "built_text" builds 400,000 bytes from an
// adapter's few, and "tiny" builds a few bytes.
const builtConfig = `
tool "hold" {
  param "marker" {
    type = "string"
  }
  param "release" {
    type = "string"
  }
  shell {
    command          = ["sh", "-c", "echo > \"$1\"; while [ ! -e \"$2\" ]; do sleep 0.02; done; echo held", "sh", args.marker, args.release]
    max_output_bytes = 204800
    timeout          = "60s"
  }
}

tool "built" {
  result {
    text = "repeat('x', 400000)"
  }
}

tool "huge" {
  result {
    content "text" {
      text = format("%01000000d", 0)
    }
  }
}

tool "built_text" {
  shell {
    command          = ["echo", "few"]
    max_output_bytes = 1024
  }
  result {
    text = "repeat(stdout, 100000)"
  }
}

tool "tiny" {
  result {
    text = "'tiny'"
  }
}
`

// A result built by a result block counts against the output budget as
// an adapter's output does: while another call holds most of the budget,
// a call whose built result does not fit in the rest waits and gets the
// same busy tool error as an adapter tool whose caps do not fit (and not
// its result), one whose result is larger than the whole budget waits for
// all of it, and a small one runs beside the holder; once the holder ends,
// every one of them runs.
func TestOutputBudgetBuiltResult(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(builtConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := newFake().registry()
	reg.Register("shell", shell.New())
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, OutputBudget: 2 << 20, OutputBudgetWait: 200 * time.Millisecond})

	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (*mcp.CallToolResult, string) {
		t.Helper()
		raw, _ := json.Marshal(args)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(raw)})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return res, b.String()
	}

	tmp := t.TempDir()
	marker, release := filepath.Join(tmp, "started"), filepath.Join(tmp, "release")
	held := make(chan string, 1)
	go func() {
		_, text := call("hold", map[string]any{"marker": marker, "release": release})
		held <- text
	}()
	wait.Until(t, "the holder started", func() bool { _, err := os.Stat(marker); return err == nil })

	// The adapter tool's refusal, for comparison: its caps do not fit.
	res, adapterText := call("hold", map[string]any{"marker": filepath.Join(tmp, "m2"), "release": release})
	if !res.IsError || !strings.Contains(adapterText, "output budget (2 MiB, --max-output-budget) and none gave enough back within 200ms") {
		t.Fatalf("a second holder: isError=%v %q, want the busy tool error", res.IsError, adapterText)
	}
	for _, tool := range []string{"built", "huge", "built_text"} {
		res, text := call(tool, nil)
		if !res.IsError || !strings.Contains(text, "output budget (2 MiB, --max-output-budget) and none gave enough back within 200ms") ||
			!strings.Contains(text, "which was dropped") || len(text) > 1000 {
			t.Errorf("%s beside the holder: isError=%v %.300q, want the busy tool error", tool, res.IsError, text)
		}
	}
	if res, text := call("tiny", nil); res.IsError || text != "tiny" {
		t.Errorf("tiny beside the holder: isError=%v %q", res.IsError, text)
	}

	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if text := <-held; !strings.Contains(text, "held") {
		t.Fatalf("the holder: %q", text)
	}
	for tool, size := range map[string]int{"built": 400000, "huge": 1000000, "built_text": 400000} {
		if res, text := call(tool, nil); res.IsError || len(text) != size {
			t.Errorf("%s alone: isError=%v, %d bytes (%.200q), want %d", tool, res.IsError, len(text), text, size)
		}
	}
}
