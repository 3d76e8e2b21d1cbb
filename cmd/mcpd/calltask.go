package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/tasks"
)

// callAsTask is `mcpd call --task`: the call runs as a task of this
// process's own (engine/tasks, as `mcpd serve` runs it), whose id and each
// change of status and progress go to stderr; its result is the call's.
// Interrupting (Ctrl-C) cancels the task, as tasks/cancel does: its call's
// context ends and the backend stops.
func callAsTask(ctx context.Context, tool *snapshot.Tool, raw json.RawMessage, yes bool, stderr io.Writer) *mcp.CallToolResult {
	p := tool.Task()
	if p.Mode == tasks.Never {
		p = tasks.Policy{Mode: tasks.Optional, TTL: tasks.DefaultTTL, MaxPerCaller: 1, PollInterval: tasks.DefaultPollInterval}
	}
	m := tasks.NewManager(tasks.NewMemory(1), tasks.Options{})
	run := func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
		res := callConfirming(ctx, tool, raw, yes, func(p, total float64, msg string) {
			tasks.Report(ctx, fmt.Sprintf("%g/%g %s", p, total, msg), total > 0 && p >= total)
		})
		b, err := json.Marshal(res)
		if err != nil {
			return tasks.Outcome{Err: &tasks.Error{Code: -32603, Message: err.Error()}}
		}
		return tasks.Outcome{Result: b}
	}
	r, err := m.Start(context.Background(), context.Background(), tasks.Spec{Tool: tool.Def.Name, Policy: p}, run)
	if err != nil {
		return toolErrorResult(err.Error())
	}
	fmt.Fprintf(stderr, "task %s: %s\n", r.ID, r.Status)
	last := string(r.Status)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	done := ctx.Done()
	for {
		select {
		case <-done:
			done = nil
			fmt.Fprintf(stderr, "task %s: cancelling\n", r.ID)
			m.Cancel(context.Background(), "", r.ID)
		case <-tick.C:
		}
		r, err = m.Get(context.Background(), "", r.ID)
		if err != nil {
			return toolErrorResult(err.Error())
		}
		if now := string(r.Status) + " " + r.Message; now != last {
			fmt.Fprintf(stderr, "task %s: %s\n", r.ID, now)
			last = now
		}
		switch r.Status {
		case tasks.Completed:
			var res mcp.CallToolResult
			if err := json.Unmarshal(r.Result, &res); err != nil {
				return toolErrorResult(err.Error())
			}
			return &res
		case tasks.Failed:
			return toolErrorResult("the task failed: " + r.Error.Message)
		case tasks.Cancelled:
			// Its call's context has ended; wait for the backend to stop.
			m.Shutdown(context.Background())
			return toolErrorResult("the task was cancelled")
		}
	}
}

func toolErrorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
