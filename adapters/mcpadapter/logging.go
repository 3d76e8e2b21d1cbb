package mcpadapter

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// An upstream's log records (notifications/message) are relayed to the
// client of the tool call they belong to, through the call's Request.Log,
// which drops what is below the level that client asked for. mcpd therefore
// asks the upstream for every record: `logging/setLevel debug` once
// connected to a 2025-11-25 upstream that declares logging, and
// `_meta.io.modelcontextprotocol/logLevel: debug` on a tools/call to a
// 2026-07-28 one whose client may receive records (Request.LogWanted:
// it set a level), and only then. A record carries no reference to a
// call: it belongs to the call whose session it came on (a pooled
// session, which every call of an HTTP upstream whose client wants
// records has: pool.go), or to the one call in flight on the shared
// session (a stdio upstream's), as a 2025-11-25 upstream's requests do
// (relay.go), and is dropped otherwise. Like progress
// (progress.go), the records an upstream sent before its result are
// relayed before the call returns.

// upstreamLogLevel is the level mcpd asks its upstreams for.
const upstreamLogLevel mcp.LoggingLevel = "debug"

// logPendingKey is the pendingProgress key that counts log records read
// off a stdio upstream and not yet relayed.
const logPendingKey = "\x00notifications/message"

// onLog relays one log record of the upstream.
func (r *relays) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	defer r.pending.done(logPendingKey)
	if req == nil || req.Params == nil || !slices.Contains(adapter.LogLevels, string(req.Params.Level)) {
		return
	}
	// The call a record belongs to is found as a request's is: by the
	// session it came on, or as the one call in flight on a shared
	// session that has served one caller only (relay.go); one that cannot
	// be attributed is dropped and counted. A call whose client will not
	// receive records still counts, so that its records never reach
	// another call's client.
	c, err := r.target(ctx, "notifications/message", req.Session)
	if err != nil || c.log == nil {
		return
	}
	log := c.log
	msg, ok := req.Params.Data.(string)
	if !ok {
		b, err := json.Marshal(req.Params.Data)
		if err != nil {
			return
		}
		msg = string(b)
	}
	log(string(req.Params.Level), r.redact(msg))
}

// modernSession reports whether the session speaks 2026-07-28 (or later).
func modernSession(cs *mcp.ClientSession) bool {
	v := protocolOf(cs)
	return v != "" && v >= "2026-07-28"
}

// setUpstreamLogLevel asks a 2025-11-25 upstream that declares logging for
// every log record of the session.
func (u *upstream) setUpstreamLogLevel(ctx context.Context, cs *mcp.ClientSession) {
	r := cs.InitializeResult()
	if r == nil || modernSession(cs) || r.Capabilities == nil || r.Capabilities.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.connectTimeout)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: upstreamLogLevel}); err != nil {
		u.log.Warn("upstream refused logging/setLevel; its log records are not relayed", "err", u.redact(err.Error()))
	}
}
