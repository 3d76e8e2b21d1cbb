package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const reloadTool = `
tool "first" {
  description = "The first tool"
  result {
    content "text" {
      text = "one"
    }
  }
}
`

const reloadTool2 = reloadTool + `
tool "second" {
  description = "Added while mcpd runs"
  result {
    content "text" {
      text = "two"
    }
  }
}
`

// The real binary over stdio, as desktop hosts run it: editing its config
// file reloads it, the client receives exactly one tools/list_changed and
// sees the new tool; a broken edit changes nothing; SIGHUP reloads.
func TestStdioHotReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(path, []byte(reloadTool), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := mcpdCommand("serve", "--stdio", "-c", path, "--log-level", "warn")
	var changes atomic.Int64
	signal := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changes.Add(1)
			signal <- struct{}{}
		},
	})
	ctx := bounded(t)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	names := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range res.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	waitOne := func(what string) {
		t.Helper()
		select {
		case <-signal:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no tools/list_changed", what)
		}
		time.Sleep(300 * time.Millisecond) // a window in which no second notification may arrive
		if n := changes.Swap(0); n != 1 {
			t.Errorf("%s: %d notifications, want exactly 1", what, n)
		}
	}
	time.Sleep(100 * time.Millisecond) // the watcher starts beside the session

	// An editor's atomic save.
	tmp := filepath.Join(dir, ".tools.hcl.swp")
	if err := os.WriteFile(tmp, []byte(reloadTool2), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitOne("atomic save")
	if got := names(); !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("tools after reload = %v", got)
	}

	// A broken edit: nothing changes, the old tools still answer.
	if err := os.WriteFile(path, []byte(reloadTool2+"tool \"x\" {\n  oops = 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a window in which no notification may arrive
	if n := changes.Load(); n != 0 {
		t.Errorf("a broken edit sent %d notifications", n)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "second"})
	if err != nil || res.IsError {
		t.Fatalf("the last good config stopped answering: %v %v", err, res)
	}

	// Fixing the file reloads it; then a SIGHUP reload that finds nothing
	// new tells no one.
	if err := os.WriteFile(path, []byte(reloadTool), 0o644); err != nil {
		t.Fatal(err)
	}
	waitOne("fixed edit")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a window in which no notification may arrive
	if n := changes.Load(); n != 0 {
		t.Errorf("a SIGHUP reload that changed nothing sent %d notifications", n)
	}
	if got := names(); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("tools after SIGHUP = %v", got)
	}
}

// --no-watch leaves a running server alone until SIGHUP.
func TestNoWatchReloadsOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(path, []byte(reloadTool), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := mcpdCommand("serve", "--stdio", "--no-watch", "-c", path, "--log-level", "warn")
	signal := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "reload-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal <- struct{}{} },
	})
	ctx := bounded(t)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := os.WriteFile(path, []byte(reloadTool2), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-signal:
		t.Fatal("reloaded with --no-watch")
	case <-time.After(500 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-signal:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reload")
	}
}
