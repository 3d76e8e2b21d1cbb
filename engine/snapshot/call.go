package snapshot

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/requeststate"
)

// The call API, in net/http's spirit: a request value in, a result and an
// error out, one entry point per verb (Tool.Call, Prompt.Get,
// Snapshot.Read). Both protocol eras, the CLI, the tests and resource reads
// come through it; what differs between them is in the request: who calls,
// where progress and log records go, and how the questions of the ask
// blocks are answered (Answers).

// CallRequest is one call of a tool.
type CallRequest struct {
	// Args are the arguments as the client sent them: a JSON object, or
	// empty for none.
	Args json.RawMessage
	// Caller is the verified caller; nil for the local user (stdio, HTTP
	// without authentication, the CLI). Scopes, caller-bound params, rate
	// limits and requestState are decided by it.
	Caller *principal.Principal
	// Progress and Log receive the call's progress and log records,
	// redacted; nil: nowhere.
	Progress ProgressFunc
	Log      LogFunc
	// Answers is how the tool's ask blocks get answered.
	Answers Answers
}

// GetRequest is one get of a prompt.
type GetRequest struct {
	Args    map[string]string
	Caller  *principal.Principal
	Answers Answers
}

// ReadRequest is one read of a resource or of an instance of a template.
type ReadRequest struct {
	URI    string
	Caller *principal.Principal
	// Toolset, when not nil, limits the read to its resources and
	// templates: any other URI is not found.
	Toolset *Toolset
}

// Answers is what a call brings for the questions of its ask blocks, and
// how further answers are obtained. There is one ask loop (asker.resolve);
// the three ways of answering differ only here:
//
//   - a 2026-07-28 request brings the client's Responses and the State of
//     the previous round; with no Answerer, a call whose questions are
//     open returns input_required, and the client retries;
//   - a 2025-11-25 session has an Answerer that asks the client while the
//     call waits (elicitation/create, sampling/createMessage, roots/list);
//   - the CLI has an Answerer that accepts confirmations (--yes) and can
//     answer nothing else.
type Answers struct {
	// Responses are the client's answers to the questions of the last
	// round, by ask name.
	Responses mcp.InputResponseMap
	// State is the requestState the answers go with ("" on a first call).
	State string
	// Caps are the client's capabilities; nil: it can answer nothing (fail
	// closed: the call does not run).
	Caps *mcp.ClientCapabilities
	// Sealer signs and opens requestState; needed when State is set or
	// when Answerer is nil.
	Sealer *requeststate.Sealer
	// Answerer, when not nil, answers each round within the call.
	Answerer Answerer
}

// An Answerer obtains the user's answers to one round of questions while
// the call waits. A question it leaves out of the answers (or answers with
// a value that does not fit) is asked again, up to maxAskRounds rounds; an
// error ends the call (the tool does not run).
type Answerer interface {
	Answer(ctx context.Context, questions mcp.InputRequestMap) (mcp.InputResponseMap, error)
}

// open returns the state the request brings, bound to bind: round 1 and
// no answers on a first call, a *StateError when it is refused.
func (a *Answers) open(bind string) (requeststate.State, error) {
	if a.State == "" {
		return requeststate.State{Round: 1}, nil
	}
	if a.Sealer == nil {
		return requeststate.State{}, &StateError{requeststate.ErrTampered}
	}
	st, err := a.Sealer.Open(a.State, bind)
	if err != nil {
		return requeststate.State{}, &StateError{err}
	}
	return st, nil
}

// byRounds reports whether the client is asked by input_required rounds
// (a 2026-07-28 client): there is no Answerer, and a Sealer for the
// requestState.
func (a *Answers) byRounds() bool { return a.Answerer == nil && a.Sealer != nil }

// clientAsker is the adapter's view of the Answerer: one request put to
// the client while the call runs (adapter.Request.Client), nil when the
// call has no Answerer (a 2026-07-28 client, which is asked only by
// input_required rounds before the adapter runs).
func (a *Answers) clientAsker() adapter.ClientAsker {
	if a.Answerer == nil {
		return nil
	}
	return answererAsker{a.Answerer, a.Caps}
}

type answererAsker struct {
	a    Answerer
	caps *mcp.ClientCapabilities
}

func (c answererAsker) Capabilities() *mcp.ClientCapabilities { return c.caps }

// relayKey names the one question of a relayed request.
const relayKey = "relay"

// Ask asks one round of one question. An Answerer leaves out an answer
// that does not fit an elicitation's form (so that an ask block asks
// again); a relayed request is asked once, and its requester is told.
func (c answererAsker) Ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	out, err := c.a.Answer(ctx, mcp.InputRequestMap{relayKey: req})
	if err != nil {
		return nil, err
	}
	resp, ok := out[relayKey]
	if !ok || resp == nil {
		return nil, fmt.Errorf("the client's answer did not fit the request")
	}
	return resp, nil
}

// AnswerFunc is a function as an Answerer.
type AnswerFunc func(ctx context.Context, questions mcp.InputRequestMap) (mcp.InputResponseMap, error)

// Answer calls f.
func (f AnswerFunc) Answer(ctx context.Context, q mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	return f(ctx, q)
}

// maxAskRounds bounds the rounds an Answerer is asked within one call,
// where a client that keeps answering with invalid values would otherwise
// be asked forever.
const maxAskRounds = 10

// AnswerError is an Answerer that failed: the call did not run.
type AnswerError struct {
	What string // "prompt x"; "" inside the ask loop
	Err  error
}

func (e *AnswerError) Error() string {
	if e.What != "" {
		return e.What + ": asking the user failed: " + e.Err.Error()
	}
	return "asking the user failed: " + e.Err.Error()
}
func (e *AnswerError) Unwrap() error { return e.Err }

// noValidAnswer is a call whose Answerer gave no valid answer in
// maxAskRounds rounds.
type noValidAnswer struct{ rounds int }

func (e *noValidAnswer) Error() string {
	return fmt.Sprintf("no valid answer after %d questions", e.rounds)
}

// callerID names a caller in a requestState's binding.
func callerID(p *principal.Principal) string {
	if p == nil {
		return ""
	}
	return p.Method + ":" + p.Name
}
