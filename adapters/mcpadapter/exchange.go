package mcpadapter

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// The protocol lets two requests ask their client for input: tools/call
// and prompts/get. mcpd relays an upstream's questions for both the same
// way (roundTrip in call.go, rounds.go, held.go); an exchange is one such
// request and how its client can be asked, and the functions below are
// all that tells the two apart.

// exchange is one request to the upstream that may ask mcpd's client.
type exchange struct {
	kind string // "tool" or "prompt", for messages and roundState
	name string // the upstream's name of the tool or prompt
	// params are the request's (*mcp.CallToolParams or *mcp.GetPromptParams),
	// without answers.
	params mcp.RequestParams
	// client and rounds are how mcpd's client is asked (adapter.Request's
	// Client and Rounds): at most one is set.
	client adapter.ClientAsker
	rounds *adapter.Rounds
	// progress receives the upstream's progress; nil when the client did
	// not ask for it. log receives the upstream's log records of the
	// request; nil when the client will not receive them (it set no level).
	progress func(progress, total float64, message string)
	log      func(level, message string)
}

// answered is a copy of params that carries the client's answers and the
// upstream's requestState of its last round.
func answered(params mcp.RequestParams, responses mcp.InputResponseMap, state string) mcp.RequestParams {
	switch p := params.(type) {
	case *mcp.CallToolParams:
		next := *p
		next.InputResponses, next.RequestState = responses, state
		return &next
	case *mcp.GetPromptParams:
		next := *p
		next.InputResponses, next.RequestState = responses, state
		return &next
	}
	panic(fmt.Sprintf("mcpadapter: no request of %T asks its client", params))
}

// send sends params once on cs.
func send(ctx context.Context, cs *mcp.ClientSession, params mcp.RequestParams) (mcp.Result, error) {
	switch p := params.(type) {
	case *mcp.CallToolParams:
		return cs.CallTool(ctx, p)
	case *mcp.GetPromptParams:
		return cs.GetPrompt(ctx, p)
	}
	panic(fmt.Sprintf("mcpadapter: no request of %T asks its client", params))
}

// questionsOf are the questions and requestState of an input_required
// result; asked is false for a complete one.
func questionsOf(res mcp.Result) (questions mcp.InputRequestMap, state string, asked bool) {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r.InputRequests, r.RequestState, r.NeedsInput()
	case *mcp.GetPromptResult:
		return r.InputRequests, r.RequestState, r.NeedsInput()
	}
	return nil, "", false
}

// tooManyRounds ends a request whose upstream keeps asking.
func (u *upstream) tooManyRounds(kind, name string, rounds int) error {
	return fmt.Errorf("upstream %s still asked for input after %d rounds of %s %s; mcpd stopped the call", u.cfg.name, rounds, kind, name)
}
