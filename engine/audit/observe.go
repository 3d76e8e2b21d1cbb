package audit

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// ObserveCall records the audit line of one answered call (engine/serve
// tells it of every one); other requests are not audited. It only reads
// the event: the outcome, the caller, the redacted error and the result's
// size are the event's, computed once for every observer.
func (l *Logger) ObserveCall(c *event.Call) {
	if l == nil || c.Kind == "" {
		return
	}
	e := &Entry{
		Time: c.Time, Duration: c.Duration,
		Principal: c.Principal, AuthMethod: c.AuthMethod, SessionID: c.SessionID,
		// The SDK keeps the JSON-RPC id to itself; mcpd's id is what ties
		// the line to the request's log lines.
		RequestID: strconv.FormatUint(rand.Uint64(), 16),
		Transport: c.Transport, Protocol: c.Protocol, Client: c.Client,
		Kind: c.Kind, Name: c.Target, Outcome: c.Outcome, BytesOut: c.ResultBytes, Error: c.Error,
		Generation: c.Generation, Toolset: c.Toolset, Cache: c.Cache,
		Identity: c.Delegation.Mode, IdentitySubject: c.Delegation.Subject, Actor: c.Delegation.Actor,
	}
	red := c.Snapshot.Redactor()
	switch r := c.Request.(type) {
	case *mcp.CallToolRequest:
		t := c.Tool
		if t == nil {
			// Refused (unknown, hidden, busy): a declared tool's
			// sensitive arguments are hidden all the same.
			t, _ = c.Snapshot.Tool(c.Name)
		}
		e.Arguments = toolArgs(t, r.Params.Arguments, red)
	case *mcp.GetPromptRequest:
		if r.Params.Arguments != nil {
			e.Arguments = red.Value(stringMap(r.Params.Arguments))
		}
	}
	l.Record(e)
}

// toolArgs decodes a call's arguments for the audit line: those of t's
// sensitive params become redact.Mark, secrets in the others are redacted.
// Arguments that are not a JSON object are kept as redacted text.
func toolArgs(t *snapshot.Tool, raw json.RawMessage, red *redact.Redactor) any {
	if len(raw) == 0 {
		return nil
	}
	var args map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as the client sent them, not rounded to float64
	if err := dec.Decode(&args); err == nil && args == nil {
		return nil // null
	} else if err != nil {
		// Not an object (the tool refuses it): no named argument to hide.
		return red.String(string(raw))
	}
	if t != nil {
		for k := range args {
			if t.Sensitive(k) {
				args[k] = redact.Mark
			}
		}
	}
	return red.Value(args)
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
