package mcpadapter

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// A 2026-07-28 client of mcpd cannot be asked while a call runs: it is
// asked by input_required rounds (adapter.Rounds). An upstream's questions
// reach it so:
//
//   - A 2026-07-28 upstream asks by input_required itself. Its questions
//     become the questions of mcpd's input_required, under the same keys,
//     and its requestState travels inside mcpd's (roundState, which the
//     engine signs, binds to the tool, arguments and caller, and lets
//     expire). The client's retry calls the upstream again with the
//     client's answers and the upstream's requestState. Nothing is kept
//     between the rounds: the retry may reach another mcpd replica.
//   - A 2025-11-25 upstream asks while the call runs: the call is held in
//     this process until the client's retry brings the answer (held.go).
//
// A prompt get that asks is relayed the same way as a tool call
// (exchange.go): "call" below stands for either.

// roundState is what mcpd keeps of an upstream call between a client's
// rounds (adapter.InputRequired.State).
type roundState struct {
	Upstream string `json:"u"` // the upstream's name
	Name     string `json:"t"` // the upstream's tool or prompt
	// Prompt: the rounds are a prompt get's, not a tool call's (states
	// issued before prompts were relayed have none).
	Prompt bool `json:"p,omitempty"`
	// Round counts the input_required rounds of the call so far, which
	// maxInputRounds bounds across retries.
	Round int `json:"n"`
	// State is the upstream's requestState (a 2026-07-28 upstream).
	State string `json:"s,omitempty"`
	// Held names the call held in this process for the answer (a
	// 2025-11-25 upstream: held.go).
	Held string `json:"h,omitempty"`
}

// newRoundState is the state of one round of a tool's or prompt's request.
func (u *upstream) newRoundState(kind, name string, round int) roundState {
	return roundState{Upstream: u.cfg.name, Name: name, Prompt: kind == "prompt", Round: round}
}

// encode is st as adapter.InputRequired.State.
func (st roundState) encode() (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("upstream %s's %s %s: encoding its requestState: %w", st.Upstream, st.kind(), st.Name, err)
	}
	return string(b), nil
}

// openRound decodes the state of the call's last round. The engine has
// checked its signature; what it says must still be about this tool (or
// prompt) of this upstream (a reload may have pointed the name elsewhere).
func (u *upstream) openRound(x *exchange, raw string) (roundState, error) {
	var st roundState
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Round < 1 {
		return roundState{}, fmt.Errorf("the requestState of upstream %s's %s %s cannot be read; %s again", u.cfg.name, x.kind, x.name, x.again())
	}
	if st.Upstream != u.cfg.name || st.Name != x.name || st.kind() != x.kind {
		return roundState{}, fmt.Errorf("the requestState was issued for upstream %s's %s %s, not upstream %s's %s %s; %s again", st.Upstream, st.kind(), st.Name, u.cfg.name, x.kind, x.name, x.again())
	}
	return st, nil
}

func (st roundState) kind() string {
	if st.Prompt {
		return "prompt"
	}
	return "tool"
}

// again is what the client should do when its retry cannot continue.
func (x *exchange) again() string {
	if x.kind == "prompt" {
		return "get the prompt"
	}
	return "call the tool"
}

// askByRounds turns a 2026-07-28 upstream's input_required result (its
// questions and requestState) into mcpd's own, for a client asked by
// rounds: every question must be one the client declared (the call fails
// otherwise, naming what is missing, as when it is relayed within a call).
func (u *upstream) askByRounds(x *exchange, round int, questions mcp.InputRequestMap, upState string) (*adapter.InputRequired, error) {
	for _, ir := range questions {
		if err := u.relay.check(ir, x.rounds.Caps); err != nil {
			return nil, fmt.Errorf("%s %s: %w", x.kind, x.name, err)
		}
	}
	st := u.newRoundState(x.kind, x.name, round)
	st.State = upState
	state, err := st.encode()
	if err != nil {
		return nil, err
	}
	return &adapter.InputRequired{Requests: questions, State: state}, nil
}
