package mcpadapter

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

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
// it set a level), and only then. A record carries no reference to a call: it is relayed
// when exactly one call of the upstream is in flight (as a 2025-11-25
// upstream's requests are, relay.go), and dropped otherwise. Like progress
// (progress.go), the records a stdio upstream wrote before its result are
// relayed before the call returns.

// upstreamLogLevel is the level mcpd asks its upstreams for.
const upstreamLogLevel mcp.LoggingLevel = "debug"

// logPendingKey is the pendingProgress key that counts log records read
// off a stdio upstream and not yet relayed.
const logPendingKey = "\x00notifications/message"

// logCalls are the log recipients of the calls in flight.
type logCalls struct {
	mu    sync.Mutex
	next  int
	calls map[int]func(level, message string)
}

// logTo registers the log recipient of one call; the returned function,
// called when the call ends, first waits for the records already read.
func (u *upstream) logTo(log func(level, message string)) func() {
	u.logs.mu.Lock()
	if u.logs.calls == nil {
		u.logs.calls = map[int]func(level, message string){}
	}
	id := u.logs.next
	u.logs.next++
	u.logs.calls[id] = log
	u.logs.mu.Unlock()
	return func() {
		u.pending.drain(logPendingKey, progressDrainWait)
		u.logs.mu.Lock()
		delete(u.logs.calls, id)
		u.logs.mu.Unlock()
	}
}

// onLog relays one log record of the upstream.
func (u *upstream) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	defer u.pending.done(logPendingKey)
	if req == nil || req.Params == nil || !slices.Contains(adapter.LogLevels, string(req.Params.Level)) {
		return
	}
	var log func(level, message string)
	u.logs.mu.Lock()
	if len(u.logs.calls) == 1 {
		for _, f := range u.logs.calls {
			log = f
		}
	}
	u.logs.mu.Unlock()
	if log == nil {
		return
	}
	msg, ok := req.Params.Data.(string)
	if !ok {
		b, err := json.Marshal(req.Params.Data)
		if err != nil {
			return
		}
		msg = string(b)
	}
	log(string(req.Params.Level), u.redact(msg))
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
