package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/mcpd/mcpd/engine/snapshot"
)

// The output budget bounds what the calls in flight can hold in memory
// together. Each call reserves its tool's output caps (what its adapter
// may hold: a program's two streams, a response body, a result's bytes)
// before it runs and gives them back when its result has been handed to
// the SDK; the SDK's write of it is bounded by --write-timeout. Per-tool
// caps alone do not bound the sum: 64 calls of a tool whose cap was raised
// to 100 MiB could hold 6 GiB.

// defaultBudgetWait is how long a call waits for budget held by others
// before it is refused.
const defaultBudgetWait = 5 * time.Second

func newBudget(bytes int64) *semaphore.Weighted {
	if bytes <= 0 {
		return nil
	}
	return semaphore.NewWeighted(bytes)
}

// reserveOutput takes t's output caps from the budget, waiting up to
// Options.OutputBudgetWait for calls in flight to give some back. A tool
// whose caps exceed the whole budget takes all of it, so it runs alone
// rather than never. It returns the bytes that releaseOutput gives back,
// or the tool error result to answer with.
func (s *Server) reserveOutput(ctx context.Context, t *snapshot.Tool) (int64, *mcp.CallToolResult) {
	n := t.MaxOutputBytes()
	if s.budget == nil || n <= 0 {
		return 0, nil
	}
	n = min(n, s.opts.OutputBudget)
	if s.budget.TryAcquire(n) {
		return n, nil
	}
	return s.waitOutput(ctx, t, n)
}

// releaseOutput gives back what reserveOutput reserved.
func (s *Server) releaseOutput(n int64) {
	if n > 0 {
		s.budget.Release(n)
	}
}

// waitOutput is reserveOutput when the budget is short.
func (s *Server) waitOutput(ctx context.Context, t *snapshot.Tool, n int64) (int64, *mcp.CallToolResult) {
	wait := s.opts.OutputBudgetWait
	if wait <= 0 {
		wait = defaultBudgetWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.budget.Acquire(wctx, n); err != nil {
		msg := fmt.Sprintf("tool %s was not run: the calls in flight hold the server's output budget (%d MiB, --max-output-budget) and none gave enough back within %s; retry in a few seconds", t.Def.Name, s.opts.OutputBudget>>20, wait)
		if ctx.Err() != nil {
			msg = fmt.Sprintf("tool %s was cancelled while waiting for output budget: %v", t.Def.Name, context.Cause(ctx))
		}
		return 0, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
	}
	return n, nil
}
