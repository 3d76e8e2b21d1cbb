// An adapter's own rounds after the tool's asks, through Tool.Call: how the
// two share one requestState is the orchestration's job.

package snapshot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// An adapter that relays its backend's questions asks a client that is
// asked by rounds (no Answerer) with input_required, after the rounds of
// the tool's own asks: its state comes back inside mcpd's requestState,
// which keeps the asks' answers and is bound to the call.
func TestHandlerRounds(t *testing.T) {
	s, _ := build(t, newFake().register(), nil, map[string]string{"tools.hcl": `
tool "greet" {
  description = "Confirmed, then the adapter asks."
  confirm     = "Greet?"
  param "who" { type = "string" }
  fake { mode = "relay" }
}
`})
	tl := tool(t, s, "greet")
	sealer := requeststate.MustRandomSealer()
	args := []byte(`{"who":"x"}`)
	call := func(args []byte, state string, responses mcp.InputResponseMap) (*mcp.CallToolResult, error) {
		return tl.Call(context.Background(), &snapshot.CallRequest{Args: args, Answers: ask.Answers{Caps: elicitCaps, Sealer: sealer, State: state, Responses: responses}})
	}

	res, err := call(args, "", nil)
	if err != nil || res.InputRequests["confirm"] == nil {
		t.Fatalf("first call: %v %s", err, render(res))
	}
	// The confirmation answered, the adapter asks; its key is its own.
	res, err = call(args, res.RequestState, mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}})
	if err != nil || len(res.InputRequests) != 1 || res.InputRequests["q"] == nil {
		t.Fatalf("after the confirmation: %v %s", err, render(res))
	}
	adapterState := res.RequestState
	answer := mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}

	var se *ask.StateError
	// The tampered state differs in its first character whatever that is
	// (a fixed replacement is sometimes no change at all).
	tampered := "B" + adapterState[1:]
	if adapterState[0] == 'B' {
		tampered = "C" + adapterState[1:]
	}
	if _, err := call(args, tampered, answer); !errors.As(err, &se) {
		t.Errorf("tampered state: %v", err)
	}
	if _, err := call([]byte(`{"who":"y"}`), adapterState, answer); !errors.As(err, &se) || !errors.Is(err, requeststate.ErrForeign) {
		t.Errorf("state of other arguments: %v", err)
	}
	// The confirmation is not asked again: the state carries it.
	res, err = call(args, adapterState, answer)
	if err != nil || res.InputRequests != nil || render(res) != "text:hello Ada" {
		t.Fatalf("answered: %v %s", err, render(res))
	}

	// A client asked within the call (an Answerer) gives the adapter no
	// rounds.
	res, err = tl.Call(context.Background(), &snapshot.CallRequest{Args: args, Answers: ask.Answers{Caps: elicitCaps,
		Answerer: ask.AnswerFunc(func(_ context.Context, q mcp.InputRequestMap) (mcp.InputResponseMap, error) {
			return mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}, nil
		})}})
	if err != nil || !res.IsError || render(res) == "" {
		t.Errorf("with an Answerer: %v %s", err, render(res))
	}
}
