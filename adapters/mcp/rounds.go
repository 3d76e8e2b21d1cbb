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

// roundState is what mcpd keeps of an upstream call between a client's
// rounds (adapter.InputRequired.State).
type roundState struct {
	Upstream string `json:"u"` // the upstream's name
	Tool     string `json:"t"` // the upstream's tool
	// Round counts the input_required rounds of the call so far, which
	// maxInputRounds bounds across retries.
	Round int `json:"n"`
	// State is the upstream's requestState (a 2026-07-28 upstream).
	State string `json:"s,omitempty"`
	// Held names the call held in this process for the answer (a
	// 2025-11-25 upstream: held.go).
	Held string `json:"h,omitempty"`
}

// openRound decodes the state of the call's last round. The engine has
// checked its signature; what it says must still be about this tool of
// this upstream (a reload may have pointed the tool elsewhere).
func (u *upstream) openRound(tool, raw string) (roundState, error) {
	var st roundState
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Round < 1 {
		return roundState{}, fmt.Errorf("the requestState of upstream %s's tool %s cannot be read; call the tool again", u.cfg.name, tool)
	}
	if st.Upstream != u.cfg.name || st.Tool != tool {
		return roundState{}, fmt.Errorf("the requestState was issued for upstream %s's tool %s, not upstream %s's tool %s; call the tool again", st.Upstream, st.Tool, u.cfg.name, tool)
	}
	return st, nil
}

// askByRounds turns a 2026-07-28 upstream's input_required result into
// mcpd's own, for a client asked by rounds whose capabilities are caps:
// every question must be one the client declared (the call fails
// otherwise, naming what is missing, as when it is relayed within a call).
func (u *upstream) askByRounds(tool string, round int, res *mcp.CallToolResult, caps *mcp.ClientCapabilities) (*adapter.InputRequired, error) {
	for _, ir := range res.InputRequests {
		if err := u.check(ir, caps); err != nil {
			return nil, fmt.Errorf("tool %s: %w", tool, err)
		}
	}
	b, err := json.Marshal(roundState{Upstream: u.cfg.name, Tool: tool, Round: round, State: res.RequestState})
	if err != nil {
		return nil, fmt.Errorf("upstream %s's tool %s: encoding its requestState: %w", u.cfg.name, tool, err)
	}
	return &adapter.InputRequired{Requests: res.InputRequests, State: string(b)}, nil
}
