package main

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/internal/wait"
)

const drainAskConfig = `
tool "greet" {
  description = "Asks the user's name, then greets them."
  ask "who" {
    elicit = "Your name?"
    field "name" {
      type = "string"
    }
  }
  result {
    content "text" {
      text = "hello ${inputs.who.name}"
    }
  }
}
`

// A SIGTERM to mcpd on stdio while a call waits for the user's answer to
// its question: the drain keeps reading stdin, so the answer arrives and
// the call completes with it, while a new call is refused. Reading used to
// stop at the shutdown, and the call was cancelled when the grace period
// ended.
func TestStdioDrainReadsAnswers(t *testing.T) {
	dir := configDir(t, map[string]string{"tools.hcl": drainAskConfig})
	cmd := mcpdCommand("serve", "--stdio", "-c", dir, "--shutdown-grace", "10s")
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	asked := make(chan struct{})
	var askedOnce sync.Once
	answer := make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "drain", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// Once: a second question (a call the drain should have
			// refused, asking) must fail the test below, not panic here
			// and take the package's other tests with it.
			askedOnce.Do(func() { close(asked) })
			select {
			case <-answer:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet"})
		done <- outcome{res, err}
	}()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not ask")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "mcpd begins its shutdown", func() bool { return strings.Contains(logs.String(), "shutting down") })

	// A new call during the drain is refused at once.
	if res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet"}); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Errorf("a new call during the drain: %v %v, want refused", res, err)
	}

	close(answer)
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("the call: %v; log:\n%s", o.err, logs.String())
		}
		if o.res.IsError || textOf(o.res) != "hello Ada" {
			t.Fatalf("the call: %v %q, want hello Ada; log:\n%s", o.res.IsError, textOf(o.res), logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the call did not end; log:\n%s", logs.String())
	}
	// mcpd exits on its own once the call is answered: Close (which waits
	// for the process, and would kill it after a while) finds it exited 0.
	wait.Until(t, "mcpd exits", func() bool { return processGone(cmd.Process.Pid) })
	cs.Close()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("mcpd exited %v; log:\n%s", cmd.ProcessState, logs.String())
	}
}
