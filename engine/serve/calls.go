package serve

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/audit"
)

// ClientMetaKey is the params._meta key a client may set to say what it is,
// e.g. "console" for mcpd's own browser console. It is carried into the
// audit log and the call records as a label only: any client can set any
// value, so nothing may be allowed or refused on it.
const ClientMetaKey = "mcpd/client"

// maxClientLabel bounds the label a client gives itself.
const maxClientLabel = 64

// CallRecord is what Options.OnCall hears of one tools/call, resources/read
// or prompts/get once it has been answered: enough to list recent calls,
// never the arguments.
type CallRecord struct {
	Time      time.Time
	Kind      string // audit.KindTool, KindResource or KindPrompt
	Name      string // the tool's or prompt's name, or the resource's URI (redacted)
	Principal string // the verified caller, or audit.LocalPrincipal
	Client    string // the label under ClientMetaKey, or ""
	Transport string // "stdio" or "http"
	Duration  time.Duration
	Outcome   string // as in the audit log
	Error     string // the tool error's or protocol error's text, redacted and truncated
}

// clientLabel returns the label the client put under ClientMetaKey.
func clientLabel(req mcp.Request) string {
	meta := paramsMeta(req)
	if meta == nil {
		return ""
	}
	s, _ := meta[ClientMetaKey].(string)
	return truncate(s, maxClientLabel)
}

// recordCalls is the middleware that tells Options.OnCall of every call,
// read and prompt once answered. New installs it only when OnCall is set
// (mcpd serve --ui), just inside observe: with it off, a call pays nothing
// for it.
func (s *Server) recordCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch req.(type) {
		case *mcp.CallToolRequest, *mcp.ReadResourceRequest, *mcp.GetPromptRequest:
		default:
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		s.recordCall(ctx, req, res, err, start, time.Since(start))
		return res, err
	}
}

// recordCall builds the record of one answered request and hands it to
// Options.OnCall. ctx is the request's, as bound by observe to the
// shutdown's grace period: done means the call was cancelled.
func (s *Server) recordCall(ctx context.Context, req mcp.Request, res mcp.Result, err error, start time.Time, took time.Duration) {
	rec := CallRecord{Time: start, Principal: audit.LocalPrincipal, Transport: "stdio", Duration: took}
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		rec.Kind, rec.Name = audit.KindTool, r.Params.Name
	case *mcp.ReadResourceRequest:
		rec.Kind, rec.Name = audit.KindResource, r.Params.URI
	case *mcp.GetPromptRequest:
		rec.Kind, rec.Name = audit.KindPrompt, r.Params.Name
	default:
		return
	}
	if p := callerOf(req); p != nil {
		rec.Principal = p.Name
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		rec.Transport = "http"
	}
	rec.Client = clientLabel(req)
	// The outcomes of the audit log and the mcpd_tool_calls_total metric.
	tr, _ := res.(*mcp.CallToolResult)
	switch {
	case err != nil && ctx.Err() != nil:
		rec.Outcome = audit.OutcomeCancelled
	case err != nil:
		rec.Outcome = audit.OutcomeProtocolError
	case tr != nil && tr.IsError && ctx.Err() != nil:
		rec.Outcome = audit.OutcomeCancelled
	case tr != nil && tr.IsError:
		rec.Outcome = audit.OutcomeToolError
	default:
		rec.Outcome = audit.OutcomeOK
	}
	if err != nil {
		rec.Error = err.Error()
	} else if tr != nil && tr.IsError {
		rec.Error = resultText(tr)
	}
	red := s.current.Load().Redactor()
	rec.Name = red.String(rec.Name)
	if rec.Error != "" {
		rec.Error = truncate(red.String(rec.Error), maxAuditError)
	}
	s.opts.OnCall(rec)
}
