package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The conformance fixtures of examples/conformance/hooks.hcl, served by the
// real binary as CI serves them (with the state directory as a second config
// path): each trigger call changes its list exactly once, every call again,
// and no other list; test_tool_with_logging sends its three records once the
// client set a level, and none before.
func TestConformanceHookFixtures(t *testing.T) {
	state := t.TempDir()
	cmd := mcpdCommand("serve", "--stdio", "-c", "../../examples/conformance", "-c", state, "--log-level", "warn")
	cmd.Env = append(cmd.Env, "MCPD_CONFORMANCE_STATE="+state)
	var tools, prompts atomic.Int64
	changed := make(chan string, 10)
	var mu sync.Mutex
	var logs []string
	client := mcp.NewClient(&mcp.Implementation{Name: "hooks-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			tools.Add(1)
			changed <- "tools"
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			prompts.Add(1)
			changed <- "prompts"
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, fmt.Sprintf("%s:%s:%v", r.Params.Level, r.Params.Logger, r.Params.Data))
		},
	})
	ctx := bounded(t)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(name string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
	}
	// trigger calls name and expects exactly one list_changed of kind,
	// within the suite's 1.5 s, and nothing else.
	trigger := func(name, kind string, wantTools, wantPrompts int64) {
		t.Helper()
		start := time.Now()
		call(name)
		select {
		case got := <-changed:
			if got != kind {
				t.Fatalf("%s: got %s list_changed, want %s", name, got, kind)
			}
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Errorf("%s: list_changed after %s; the suite waits 1.5 s", name, d)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no list_changed", name)
		}
		// Long enough for a second, wrong notification (debounce 50 ms).
		time.Sleep(500 * time.Millisecond)
		if tools.Load() != wantTools || prompts.Load() != wantPrompts {
			t.Fatalf("after %s: %d tools and %d prompts list_changed, want %d and %d", name, tools.Load(), prompts.Load(), wantTools, wantPrompts)
		}
	}
	trigger("test_trigger_tool_change", "tools", 1, 0)
	trigger("test_trigger_tool_change", "tools", 2, 0) // a repeated call changes the list again
	trigger("test_trigger_prompt_change", "prompts", 2, 1)

	call("test_tool_with_logging")
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	call("test_tool_with_logging")
	want := []string{
		"info:test_tool_with_logging:Tool execution started",
		"info:test_tool_with_logging:Tool processing data",
		"info:test_tool_with_logging:Tool execution completed",
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := append([]string(nil), logs...)
		mu.Unlock()
		if len(got) >= len(want) || time.Now().After(deadline) {
			if len(got) != len(want) {
				t.Fatalf("log records %q, want %q (none before setLevel)", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("log records %q, want %q", got, want)
				}
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}
