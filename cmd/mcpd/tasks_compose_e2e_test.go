package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// composeConfig has a task-only tool whose question is asked first,
// through input_required rounds of tools/call, and whose task is created
// on the last round (asks = "first").
const composeConfig = `
tool "greet_later" {
  description = "Asks for a name first, then greets as a task"
  task {
    mode = "required"
    asks = "first"
  }
  ask "user_name" {
    elicit = "Whom to greet?"
    field "name" { type = "string" }
  }
  shell {
    command = ["echo", "Hello, ${inputs.user_name.name}"]
  }
}
`

// A go-sdk client of the 2026-07-28 protocol calls a tool whose task
// asks first: the SDK's client answers the input_required round (its
// elicitation handler is asked once, before any task exists), and the
// retry is answered with a task whose result holds the answer. A declined
// question ends the call with the refusal, creating no task.
func TestTasksAskFirst(t *testing.T) {
	t.Parallel()
	dir := writeConfig(t, composeConfig)
	s := startOps(t, dir)

	connect := func(t *testing.T, answer func() *mcp.ElicitResult, asked *atomic.Int32) *mcp.ClientSession {
		caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{},
			Extensions: map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
		client := mcp.NewClient(&mcp.Implementation{Name: "compose-test", Version: "1"}, &mcp.ClientOptions{Capabilities: caps,
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return answer(), nil
			}})
		for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			if err := mcp.AddSendingCustomMethod[*taskParams, *taskResult](client, m); err != nil {
				t.Fatal(err)
			}
		}
		cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: s.endpoint, MaxRetries: -1, HTTPClient: http.DefaultClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}

	t.Run("answered, then a task", func(t *testing.T) {
		var asked atomic.Int32
		cs := connect(t, func() *mcp.ElicitResult {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}
		}, &asked)
		id := startTask(t, cs, "greet_later", nil)
		if n := asked.Load(); n != 1 {
			t.Fatalf("the client was asked %d times before the task was created, want 1", n)
		}
		r := awaitStatus(t, cs, id, "completed", "failed")
		if r.Status != "completed" || r.Result == nil || !strings.Contains(textOf(r.Result), "Hello, Alice") {
			t.Fatalf("task %+v (result %+v), want completed with the answer gathered first", r, r.Result)
		}
		if asked.Load() != 1 {
			t.Fatalf("the task asked again: %d questions", asked.Load())
		}
	})

	t.Run("declined", func(t *testing.T) {
		var asked atomic.Int32
		cs := connect(t, func() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }, &asked)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "greet_later"})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := res.Meta["io.modelcontextprotocol/related-task"]; ok || !strings.Contains(textOf(res), "declined") {
			t.Fatalf("declined call answered %+v, want the refusal and no task", res)
		}
	})
}
