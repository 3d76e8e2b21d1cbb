// Package ask is the stage of a call that asks the user (the ask blocks,
// and the requests an adapter relays to the client): the ask state machine
// (Asker, whose one loop Resolve asks round after round in both protocol
// eras; engine/snapshot compiles the blocks into it), what a request
// brings to answer (Answers: the client's responses, the sealed
// requestState of the previous round, or an Answerer that asks while the
// call waits) and the protocol errors of asking.
package ask

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/requeststate"
)

// Answers is what a call brings for the questions of its ask blocks, and
// how further answers are obtained. There is one ask loop (Asker.Resolve);
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
// a value that does not fit) is asked again, up to MaxRounds rounds; an
// error ends the call (the tool does not run).
type Answerer interface {
	Answer(ctx context.Context, questions mcp.InputRequestMap) (mcp.InputResponseMap, error)
}

// Open returns the state the request brings, bound to bind: round 1 and
// no answers on a first call, a *StateError when it is refused.
func (a *Answers) Open(bind string) (requeststate.State, error) {
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

// ByRounds reports whether the client is asked by input_required rounds
// (a 2026-07-28 client): there is no Answerer, and a Sealer for the
// requestState.
func (a *Answers) ByRounds() bool { return a.Answerer == nil && a.Sealer != nil }

// ClientAsker is the adapter's view of the Answerer: one request put to
// the client while the call runs (adapter.Request.Client), nil when the
// call has no Answerer (a 2026-07-28 client, which is asked only by
// input_required rounds before the adapter runs).
func (a *Answers) ClientAsker() adapter.ClientAsker {
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

// MaxRounds bounds the rounds an Answerer is asked within one call,
// where a client that keeps answering with invalid values would otherwise
// be asked forever.
const MaxRounds = 10

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

// NoValidAnswer is a call whose Answerer gave no valid answer in
// MaxRounds rounds.
type NoValidAnswer struct{ Rounds int }

func (e *NoValidAnswer) Error() string {
	return fmt.Sprintf("no valid answer after %d questions", e.Rounds)
}

// StateError is a requestState that is refused: tampered, expired or
// minted for another call. It is a protocol error, not a tool error.
type StateError struct{ Err error }

func (e *StateError) Error() string { return "invalid requestState: " + e.Err.Error() }
func (e *StateError) Unwrap() error { return e.Err }

// MissingCapabilityError means a question must be asked that the client
// cannot answer: the call does not run (fail closed).
type MissingCapabilityError struct {
	What string   // "tool x" or "prompt x"
	Asks []string // the kinds of the questions
	// Capabilities names the client capabilities missing, as keys of
	// ClientCapabilities: "elicitation", "roots", "sampling", sorted; an
	// extension as "extensions:" and its identifier.
	Capabilities []string
	// Message, when set, is the message (an adapter's: see
	// adapter.MissingCapabilityError).
	Message string
}

func (e *MissingCapabilityError) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return fmt.Sprintf("%s needs to ask the user (%s) but the client did not declare that capability, so it did not run", e.What, strings.Join(e.Asks, ", "))
}

// RequiredCapabilities is the ClientCapabilities object that names
// exactly the missing capabilities, each as {}: the data.requiredCapabilities
// of the -32021 error. (mcp.ClientCapabilities cannot say it: it always
// encodes "roots".)
func (e *MissingCapabilityError) RequiredCapabilities() map[string]any {
	out := make(map[string]any, len(e.Capabilities))
	for _, c := range e.Capabilities {
		if id, ok := strings.CutPrefix(c, "extensions:"); ok {
			// An extension, named by its identifier (an upstream's
			// -32021 for a task-only tool names the tasks extension).
			ext, _ := out["extensions"].(map[string]any)
			if ext == nil {
				ext = map[string]any{}
				out["extensions"] = ext
			}
			ext[id] = map[string]any{}
			continue
		}
		out[c] = map[string]any{}
	}
	return out
}
