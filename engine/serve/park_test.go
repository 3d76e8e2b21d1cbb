package serve_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
)

// "asker" asks its user, then answers with what it was told; it reserves
// a sixth of a 1 MiB output budget three times over (fakeCaps), so that two
// of them hold all of it. "capped" reserves as much, "plain" nothing.
const parkConfig = `
tool "asker" {
  fake {
    mode = "capped"
  }
  ask "topic" {
    elicit = "Topic?"
    field "topic" {
      type = "string"
    }
  }
  result {
    text = "'about ' + inputs.topic.topic"
  }
}

tool "plain" {
  result {
    text = "'plain'"
  }
}

tool "capped" {
  fake {
    mode = "capped"
  }
}
`

// A 2025-11-25 call waiting for its user's answer holds no request slot
// and no output budget: with the in-flight limit at 2 (calls running, and
// HTTP requests in flight) and both taken by calls whose questions the
// user has not answered, another call still runs, and the answers, which
// come as requests of their own, still arrive; then the parked calls take
// their slots back and finish.
func TestParkedCallsHoldNoSlot(t *testing.T) {
	const limit = 2
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			e := newEnvConfig(t, parkConfig)
			e.srv = serve.New(e.cur, serve.Options{Logger: quiet, MaxInflight: limit, OutputBudget: 1 << 20, OutputBudgetWait: 200 * time.Millisecond})
			asked := make(chan string, 2*limit)
			answer := make(chan struct{})
			var answerOnce sync.Once
			answerAll := func() { answerOnce.Do(func() { close(answer) }) }
			t.Cleanup(answerAll)
			opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- req.Params.Message
				select {
				case <-answer:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"topic": "cats"}}, nil
			}}
			var cs *mcp.ClientSession
			if tr == "stdio" {
				cs = inMemory(legacy)(t, e, opts)
			} else {
				ts := httptest.NewServer(e.srv.HTTPHandler(serve.HTTPOptions{MaxInflight: limit}))
				t.Cleanup(ts.Close)
				// A call still waiting for an answer that cannot arrive
				// (the failure this test is for) ends with its connection.
				t.Cleanup(ts.CloseClientConnections)
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					defer cancel()
					e.srv.Shutdown(ctx)
				})
				cs = connect(t, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, legacy, opts)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			var wg sync.WaitGroup
			results := make(chan string, limit)
			for range limit {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "asker", Arguments: map[string]any{}})
					results <- callText(res, err)
				}()
			}
			for i := range limit {
				waitFor(t, asked, fmt.Sprintf("question %d", i+1))
			}
			// Both slots and all of the budget are taken by calls waiting
			// on the user.
			for _, tool := range []string{"plain", "capped"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if got := callText(res, err); got != tool {
					t.Errorf("a call of %s beside %d parked ones: %s", tool, limit, got)
				}
			}
			answerAll()
			wg.Wait()
			close(results)
			for got := range results {
				if got != "about cats" {
					t.Errorf("a parked call: %s", got)
				}
			}
			// What they took back was given back: the limit still admits
			// as many calls as before.
			for _, tool := range []string{"plain", "capped", "plain", "capped"} {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
				if got := callText(res, err); got != tool {
					t.Fatalf("a call of %s after the parked ones: %s", tool, got)
				}
			}
		})
	}
}

// callText is the text of a result, or what went wrong.
func callText(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	if res.IsError {
		b.WriteString("isError: ")
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
