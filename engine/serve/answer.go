package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Tools and prompts with ask blocks (engine/snapshot/ask.go) put questions
// to the user before they run, through one ask loop in the snapshot; this
// file says how a request's questions get answered (ask.Answers). A
// 2026-07-28 client answers by retrying with inputResponses and the
// requestState of an input_required result. A 2025-11-25 session is asked
// while the call waits, by sessionAnswerer (elicitation/create,
// sampling/createMessage, roots/list), round after round: the SDK's own
// multi-round-trip middleware would do the same, but it wraps only the
// SDK's registered handlers (mcpd's middleware answers tools/call and
// prompts/get before they are reached) and it retries only once, which a
// multi-round ask needs more than.

// answers is how the questions of one request are answered: by the client
// retrying (2026-07-28), or by asking its session while the call waits.
// A call's hold, when not nil, is given back while it waits (park.go).
func (s *Server) answers(snap *snapshot.Snapshot, ss *mcp.ServerSession, caps *mcp.ClientCapabilities, responses mcp.InputResponseMap, state string, hold *callHold) ask.Answers {
	sealer := snap.Server.StateSealer
	if sealer == nil {
		sealer = s.sealer
	}
	a := ask.Answers{Responses: responses, State: state, Caps: caps, Sealer: sealer}
	if !isModernSession(ss) {
		a.Answerer = sessionAnswerer{ss: ss, s: s, hold: hold}
	}
	return a
}

// inputRequired is an input_required result exactly as the 2026-07-28
// schema's InputRequiredResult has it: resultType, inputRequests,
// requestState (and _meta). The SDK's result types would also carry their
// "content" or "messages", as null.
type inputRequired struct {
	mcp.ResultBase
	ResultType    string              `json:"resultType"`
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
	RequestState  string              `json:"requestState,omitempty"`
}

func newInputRequired(reqs mcp.InputRequestMap, state string) *inputRequired {
	return &inputRequired{ResultType: "input_required", InputRequests: reqs, RequestState: state}
}

// protocolError turns the errors of asking into JSON-RPC errors: a refused
// requestState is invalid params; a question the client cannot answer is
// -32021 naming exactly the missing capabilities (SEP-2575), which the
// SDK's HTTP handler sends with status 400; an answerer that failed is an
// internal error.
func protocolError(err error) error {
	var me *ask.MissingCapabilityError
	if errors.As(err, &me) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": me.RequiredCapabilities()})
		return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: err.Error(), Data: data}
	}
	var ae *ask.AnswerError
	if errors.As(err, &ae) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// sessionAnswerer asks a 2025 session's client every question of one
// round, at once, as the SDK's multi-round-trip middleware does.
type sessionAnswerer struct {
	ss   *mcp.ServerSession
	s    *Server
	hold *callHold // nil: the request holds nothing to give back
}

// Answer leaves out the answers to a form that do not fit it, so that the
// ask loop asks again, as it does for a 2026-07-28 client: the SDK checks a
// form's answer against the form, on the client (which then answers
// elicitation/create with invalid params) and on the server (an error of
// ServerSession.Elicit after the answer arrived). Any other failure ends
// the call.
func (a sessionAnswerer) Answer(ctx context.Context, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	if a.hold == nil {
		return a.ask(ctx, reqs)
	}
	a.s.parkCall(a.hold)
	out, err := a.ask(ctx, reqs)
	if rerr := a.s.resumeCall(ctx, a.hold); rerr != nil && err == nil {
		return nil, rerr
	}
	return out, err
}

// ask puts the questions of one round to the client and waits for them.
func (a sessionAnswerer) ask(ctx context.Context, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	out := make(mcp.InputResponseMap, len(reqs))
	for id, ir := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var resp mcp.InputResponse
			var err error
			switch p := ir.(type) {
			case *mcp.ElicitParams:
				resp, err = a.ss.Elicit(ctx, p)
				if err != nil && invalidAnswer(ctx, err) {
					return // asked again
				}
			case *mcp.CreateMessageParams:
				resp, err = a.ss.CreateMessage(ctx, p)
			case *mcp.ListRootsParams:
				resp, err = a.ss.ListRoots(ctx, p)
			default:
				err = fmt.Errorf("unknown input request %T", ir)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", id, err)
					cancel()
				}
				return
			}
			out[id] = resp
		}()
	}
	wg.Wait()
	return out, firstErr
}

// invalidAnswer reports whether err, from an elicitation, says the answer
// did not fit the form rather than that the client could not be asked:
// the client answered with invalid params (the SDK's client refuses its
// own user's answer so), or it answered and the SDK refused the answer
// (a plain error, with the request's context alive and the connection
// open).
func invalidAnswer(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, mcp.ErrConnectionClosed) {
		return false
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code == jsonrpc.CodeInvalidParams
	}
	return true
}
