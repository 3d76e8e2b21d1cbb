package serve

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/snapshot"
)

// A gateway's tools on the fast path of 2025-11-25 sessions.
//
// A tool that asks its client within a call puts its questions on the
// POST's stream, which is the SDK's: the legacy fast path leaves such
// calls to the SDK. An mcp tool (a gateway's) is such a tool, since its
// upstream may ask (elicitation, sampling, roots) and mcpd relays the
// question; but mcpd relays only what the calling client declared it can
// answer (adapter.ClientAsker; adapters/mcpadapter refuses the rest to the
// upstream itself), so the call of a client that declared none of those
// capabilities asks nothing, and needs nothing of the session's stream.
// Those calls are served on the fast path; a tool with ask blocks of its
// own, or a client that can be asked, stays with the SDK.
// TestLegacyFastPathDifferential holds the answers and call events of such
// a tool to the SDK's, and TestLegacyFastPathRelaying checks which calls
// are taken.

// asksInCall reports whether a call of t in session ss may put a request
// to the session's client while it runs.
func asksInCall(t *snapshot.Tool, ss *mcp.ServerSession) bool {
	if !t.Asks() {
		return false
	}
	if !t.RelaysOnly() {
		return true
	}
	var caps *mcp.ClientCapabilities
	if p := ss.InitializeParams(); p != nil {
		caps = p.Capabilities
	}
	return canBeAsked(caps)
}

// canBeAsked reports whether a client declared anything a relayed
// request may ask of it (adapters/mcpadapter relays elicitation, sampling and
// roots requests, each only to a client that declared it).
func canBeAsked(c *mcp.ClientCapabilities) bool {
	return c != nil && (c.Elicitation != nil || c.Sampling != nil || c.RootsV2 != nil || c.Roots.ListChanged)
}
