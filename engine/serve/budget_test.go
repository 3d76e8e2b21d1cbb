package serve_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Two tools whose output caps are 1.2 MiB (two streams of 600 KiB) and
// 0.2 MiB; the program says it started by writing a file, then sleeps.
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
    max_output_bytes = 614400
  }
}

tool "small" {
  shell {
    command          = ["echo", "small"]
    max_output_bytes = 102400
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
	l := engine.Load([]string{dir}, reg, nil, "test")
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
