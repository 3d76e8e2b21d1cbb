package snapshot

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/requeststate"
)

// One run per requestState: a tool that may change something is run
// once per requestState (engine/ask's Replay claims it); rerunnable says
// which tools may run again.

// rerunnable reports whether a second run of tool tc with the same
// arguments changes nothing, so that a requestState may run it again: it
// has no adapter (its result block is all it does), it only reads (see
// notReadOnly), or its annotations declare it idempotent.
// Only the config's own annotations count: a gateway's tools, whose
// annotations an upstream declares, are never rerunnable (they have no
// tc).
func rerunnable(tc *config.Tool, h adapter.Handler) bool {
	if h == nil || notReadOnly(tc, h) == "" {
		return true
	}
	a := tc.Annotations
	return a != nil && a.Idempotent != nil && *a.Idempotent
}

// ReplaysRefused is the number of requestStates refused because they had
// already run their tool, since the first config was served (the count
// is carried over reloads, as the Used set is).
func (s *Snapshot) ReplaysRefused() uint64 {
	if s == nil || s.used == nil {
		return 0
	}
	return s.used.RefusedTotal()
}

// stateRefused is the answer of a call whose requestState could not be
// claimed (ask.Refusal).
func stateRefused(tool string, err error, protoErr *error) *mcp.CallToolResult {
	msg, perr := ask.Refusal(tool, err)
	if perr != nil {
		*protoErr = perr
	}
	return toolError(msg)
}

// initReplay gives every tool that a requestState may run once only the
// snapshot's Used set (prev's, so that a reload forgets nothing) and,
// with a state block, the shared state.
func (s *Snapshot) initReplay(prev *Snapshot) {
	if prev != nil && prev.used != nil {
		s.used = prev.used
	} else {
		s.used = requeststate.NewUsed(requeststate.DefaultMaxUsed)
	}
	for _, t := range s.Tools {
		if t.rerunnable || !t.Asks() {
			continue
		}
		if s.state != nil {
			t.state = s.state
		}
		t.replay = &ask.Replay{Tool: t.Def.Name, Used: s.used, State: t.state, Limits: t.limits}
	}
}
