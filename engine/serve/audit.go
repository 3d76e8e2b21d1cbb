package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// maxAuditError bounds the error text of an audit line: enough for any
// message mcpd writes, not a whole backend response body.
const maxAuditError = 1024

// auditCall is the audit entry of one request being served.
type auditCall struct {
	entry *audit.Entry
	snap  *snapshot.Snapshot // the config that answers: its sensitive params and secrets
	req   mcp.Request
}

// auditBegin starts the audit entry of a tools/call, resources/read or
// prompts/get; nil for other methods or with the audit log off. It reads
// the caller from the request itself (not from ctx), so that it does not
// depend on which middleware put the principal in ctx.
func (s *Server) auditBegin(req mcp.Request, start time.Time) *auditCall {
	if s.opts.Audit == nil {
		return nil
	}
	e := &audit.Entry{Time: start, Principal: audit.LocalPrincipal, AuthMethod: "none", Transport: "stdio"}
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		e.Kind, e.Name = audit.KindTool, r.Params.Name
	case *mcp.ReadResourceRequest:
		e.Kind, e.Name = audit.KindResource, r.Params.URI
	case *mcp.GetPromptRequest:
		e.Kind, e.Name = audit.KindPrompt, r.Params.Name
	default:
		return nil
	}
	if extra := req.GetExtra(); extra != nil {
		if p := principal.FromTokenInfo(extra.TokenInfo); p != nil {
			e.Principal, e.AuthMethod = p.Name, p.Method
		}
		if extra.Header != nil {
			e.Transport = "http"
			e.Protocol = extra.Header.Get("Mcp-Protocol-Version")
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		e.SessionID = ss.ID()
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			e.Protocol = ip.ProtocolVersion
		}
	}
	// The SDK keeps the JSON-RPC id to itself; mcpd's id is what ties the
	// line to the request's log lines.
	e.RequestID = strconv.FormatUint(rand.Uint64(), 16)
	e.Client = clientLabel(req)
	if s.opts.Generation != nil {
		e.Generation = s.opts.Generation()
	}
	return &auditCall{entry: e, snap: s.current.Load(), req: req}
}

// auditEnd completes e with the request's outcome and records it. outcome
// is the tool call's outcome as observe computed it, "" for other kinds.
func (s *Server) auditEnd(ctx context.Context, a *auditCall, res mcp.Result, err error, outcome string, took time.Duration) {
	e, snap := a.entry, a.snap
	e.Duration = took
	red := snap.Redactor()
	switch r := a.req.(type) {
	case *mcp.CallToolRequest:
		e.Arguments = toolArgs(snap, r.Params.Name, r.Params.Arguments, red)
	case *mcp.GetPromptRequest:
		if r.Params.Arguments != nil {
			e.Arguments = red.Value(stringMap(r.Params.Arguments))
		}
	case *mcp.ReadResourceRequest:
		e.Name = red.String(e.Name)
	}
	switch {
	case outcome != "":
		e.Outcome = outcome
	case err != nil && ctx.Err() != nil:
		e.Outcome = audit.OutcomeCancelled
	case err != nil:
		e.Outcome = audit.OutcomeProtocolError
	default:
		e.Outcome = audit.OutcomeOK
	}
	if err != nil {
		e.Error = err.Error()
	} else if tr, ok := res.(*mcp.CallToolResult); ok && tr.IsError {
		e.Error = resultText(tr)
	}
	if e.Error != "" {
		// Tool errors are redacted by the snapshot already; protocol
		// errors (a template variable echoed back) may not be.
		e.Error = truncate(red.String(e.Error), maxAuditError)
	}
	if err == nil && res != nil {
		if b, merr := json.Marshal(res); merr == nil {
			e.BytesOut = len(b)
		}
	}
	s.opts.Audit.Record(e)
}

// toolArgs decodes a call's arguments for the audit line: sensitive ones
// become redact.Mark, secrets in the others are redacted. Arguments that
// are not a JSON object are kept as redacted text.
func toolArgs(snap *snapshot.Snapshot, name string, raw json.RawMessage, red *redact.Redactor) any {
	if len(raw) == 0 {
		return nil
	}
	t, _ := snap.Tool(name)
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

// resultText is the text of a tool result's text contents.
func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
