package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/snapshot"
)

// Tools and prompts with ask blocks (engine/snapshot/ask.go) answer a call
// whose questions are open with an input_required result. A 2026-07-28
// client answers by retrying with inputResponses and the requestState. For a
// 2025-11-25 session this file asks the client itself (elicitation/create,
// sampling/createMessage, roots/list) and calls again with the answers,
// round after round: the SDK's own multi-round-trip middleware would do the
// same, but it wraps only the SDK's registered handlers (mcpd's middleware
// answers tools/call and prompts/get before they are reached) and it
// retries only once, which a multi-round ask needs more than.

// maxAskRounds bounds the rounds asked in a 2025 session, where a client
// that keeps answering with invalid values would otherwise be asked forever.
const maxAskRounds = 10

var (
	inputRequiredCall   = template[mcp.CallToolResult](`{"content":[],"resultType":"input_required"}`)
	inputRequiredPrompt = template[mcp.GetPromptResult](`{"messages":[],"resultType":"input_required"}`)
)

func (s *Server) askCall(snap *snapshot.Snapshot, caps *mcp.ClientCapabilities, responses mcp.InputResponseMap, state string) *snapshot.AskCall {
	sealer := snap.Server.StateSealer
	if sealer == nil {
		sealer = s.sealer
	}
	return &snapshot.AskCall{Responses: responses, State: state, Caps: caps, Sealer: sealer}
}

// callAsking runs t, asking the client for what it needs first.
func (s *Server) callAsking(ctx context.Context, req *mcp.CallToolRequest, snap *snapshot.Snapshot, t *snapshot.Tool, progress snapshot.ProgressFunc, log snapshot.LogFunc) (mcp.Result, error) {
	var ac *snapshot.AskCall // read only by a tool that asks
	if t.Asks() {
		ac = s.askCall(snap, req.ClientCapabilities(), req.Params.InputResponses, req.Params.RequestState)
	}
	modern := isModernSession(req.Session)
	for round := 1; ; round++ {
		res, err := t.CallAsking(ctx, req.Params.Arguments, progress, log, ac)
		if err != nil {
			var me *snapshot.MissingCapabilityError
			if !modern && errors.As(err, &me) {
				// A 2025 client has no error code for this: the model
				// reads why the tool did not run.
				return markCall(req.Session, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}), nil
			}
			return nil, askError(err)
		}
		if res.InputRequests == nil {
			return markCall(req.Session, res), nil
		}
		if modern {
			out := inputRequiredCall
			out.Content, out.InputRequests, out.RequestState = nil, res.InputRequests, res.RequestState
			return &out, nil
		}
		if round >= maxAskRounds {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("tool %s: no valid answer after %d questions; it did not run", req.Params.Name, round)}}}, nil
		}
		responses, err := fulfil(ctx, req.Session, res.InputRequests)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("tool %s did not run: asking the user failed: %v", req.Params.Name, err)}}}, nil
		}
		ac.Responses, ac.State = responses, res.RequestState
	}
}

// getAsking renders p, asking the client for what it needs first.
func (s *Server) getAsking(ctx context.Context, req *mcp.GetPromptRequest, snap *snapshot.Snapshot, p *snapshot.Prompt) (mcp.Result, error) {
	ac := s.askCall(snap, req.ClientCapabilities(), req.Params.InputResponses, req.Params.RequestState)
	modern := isModernSession(req.Session)
	for round := 1; ; round++ {
		res, err := p.GetAsking(req.Params.Arguments, ac)
		if err != nil {
			return nil, askError(err)
		}
		if res.InputRequests == nil {
			return markPrompt(req.Session, res), nil
		}
		if modern {
			out := inputRequiredPrompt
			out.Messages, out.InputRequests, out.RequestState = nil, res.InputRequests, res.RequestState
			return &out, nil
		}
		if round >= maxAskRounds {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("prompt %s: no valid answer after %d questions", req.Params.Name, round)}
		}
		responses, err := fulfil(ctx, req.Session, res.InputRequests)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("prompt %s: asking the user failed: %v", req.Params.Name, err)}
		}
		ac.Responses, ac.State = responses, res.RequestState
	}
}

// askError turns the errors of asking into JSON-RPC errors: a refused
// requestState is invalid params; a question the client cannot answer is
// -32021 naming the capability (SEP-2575), which the SDK's HTTP handler
// sends with status 400.
func askError(err error) error {
	var me *snapshot.MissingCapabilityError
	if errors.As(err, &me) {
		data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: me.Required})
		return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: err.Error(), Data: data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

// fulfil asks a 2025 session's client every question of one round, at
// once, as the SDK's multi-round-trip middleware does.
func fulfil(ctx context.Context, ss *mcp.ServerSession, reqs mcp.InputRequestMap) (mcp.InputResponseMap, error) {
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
				resp, err = ss.Elicit(ctx, p)
			case *mcp.CreateMessageParams:
				resp, err = ss.CreateMessage(ctx, p)
			case *mcp.ListRootsParams:
				resp, err = ss.ListRoots(ctx, p)
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
