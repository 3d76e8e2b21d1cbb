// Package event is the record of one answered MCP request: which config
// answered, what was called, by whom, how it ended, how big its result was
// and how long it took. engine/serve builds one per request, once, and
// hands the same value to every observer of calls (metrics and spans in
// serve, the audit log, the console), so that none of them computes its own
// kind, outcome or caller, and they cannot drift apart.
package event

import (
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Kinds of call: the requests the audit log and the console record.
const (
	KindTool     = "tool"     // tools/call
	KindResource = "resource" // resources/read
	KindPrompt   = "prompt"   // prompts/get
)

// Outcomes of a call: the values of the outcome label of
// mcpd_tool_calls_total and of the audit log's outcome field.
const (
	OutcomeOK            = "ok"             // a result that is not an error
	OutcomeToolError     = "tool_error"     // a result with isError: bad arguments, backend failures
	OutcomeProtocolError = "protocol_error" // a JSON-RPC error: unknown tool, malformed request
	OutcomeCancelled     = "cancelled"      // the client or a shutdown cancelled the call
)

// Outcomes lists every outcome.
var Outcomes = [...]string{OutcomeOK, OutcomeToolError, OutcomeProtocolError, OutcomeCancelled}

// LocalPrincipal is the principal name of a request with no verified
// caller: stdio, or HTTP with authentication off.
const LocalPrincipal = "local"

// MaxError bounds Call.Error: enough for any message mcpd writes, not a
// whole backend response body.
const MaxError = 1024

// Call is one answered request. The fields above Detail are set for every
// request; Detail's only when the server has an observer that reads them
// (the audit log, the console), so that metrics alone pay nothing for them.
//
// A Call and what it points to must not be changed by observers.
type Call struct {
	// Method is the MCP method; Kind is KindTool, KindResource or
	// KindPrompt for the methods that are calls, "" for the others (lists,
	// initialize, ...), which only metrics and spans see.
	Method string
	Kind   string
	// Name is the tool's or prompt's name, or the resource's URI, as the
	// client sent it (see Detail.Name for the redacted form).
	Name string
	// Snapshot is the config that answered; Tool is the tool that ran,
	// nil when the call was refused before a tool was found (unknown,
	// hidden by scopes, or the server busy) or the request is not a
	// tools/call.
	Snapshot *snapshot.Snapshot
	Tool     *snapshot.Tool
	// Toolset is the toolset the request came through (/mcp/<toolset>,
	// stdio --toolset, or server.default_toolset on /mcp); "" when it
	// came through an endpoint that serves everything.
	Toolset string
	// Caller is the verified caller, decoded once per request; nil for the
	// local user.
	Caller *principal.Principal
	// Delegation is the identity the tool's adapter presented to its
	// backend on the caller's behalf (an exchanged token's subject and
	// actor, say); its Mode is "" when the adapter used the config's own
	// credentials or none.
	Delegation adapter.Delegation
	// Request, Result and Err are what the SDK handed mcpd and what it
	// answers: Result is nil when Err is set. An observer must not keep
	// Result, nor a string of it, past its call: the texts of a result
	// the fast path writes may be in buffers reused once the answer is
	// written (engine/resultbuf). What it keeps, it copies.
	Request mcp.Request
	Result  mcp.Result
	Err     error
	// Time is when the request was received; Duration how long mcpd took
	// to answer it.
	Time     time.Time
	Duration time.Duration
	// Outcome is one of the Outcome constants for a call, "" for the
	// other methods.
	Outcome string
	// InputRequired: the call (a 2026-07-28 round) was answered with an
	// input_required result, a question for the user instead of an
	// answer; its Outcome is OutcomeOK.
	InputRequired bool
	// Cache is the result cache's part in a call of a cached tool:
	// cache.Hit, Miss or Error; "" for a tool that is
	// not cached, and for tool errors.
	Cache string

	Detail
}

// Detail is what the audit log and the console show of a call besides its
// outcome. Every string is safe to show an operator: names and errors are
// redacted with the snapshot's secrets, the error is truncated.
type Detail struct {
	// Target is Name redacted: what may be shown.
	Target string
	// Principal is the caller's name, or LocalPrincipal; AuthMethod how it
	// was verified ("api_key", "oauth"), or "none".
	Principal  string
	AuthMethod string
	// Client is the label the client gave itself in params._meta
	// ("mcpd/client"); it proves nothing.
	Client string
	// Transport is "stdio" or "http"; Protocol the MCP protocol version
	// the client negotiated or sent; SessionID the 2025 protocol's session
	// id (HTTP), or "".
	Transport string
	Protocol  string
	SessionID string
	// Error is the text of the tool error or of the protocol error the
	// client got, redacted and truncated to MaxError; "" on success.
	Error string
	// Generation is the config generation that answered, when the server
	// knows it.
	Generation int
	// ResultBytes is the size of the JSON encoding of the result, counted
	// without encoding it (see Size); 0 for a protocol error, and when no
	// observer asked for it (the audit log does).
	ResultBytes int
}

// Outcome is the outcome of a call of kind that answered with a result
// that is an error (isError) or with the protocol error err; cancelled
// says that the request's context had ended. A tool's cancellation shows
// as a tool error (its adapter was stopped), a read's or a prompt's as a
// protocol error; a tool's protocol error is about the request (unknown
// tool, busy server), whatever became of its context. "" when kind is "".
func Outcome(kind string, isError bool, err error, cancelled bool) string {
	switch {
	case kind == "":
		return ""
	case err != nil && cancelled && kind != KindTool:
		return OutcomeCancelled
	case err != nil:
		return OutcomeProtocolError
	case isError && cancelled:
		return OutcomeCancelled
	case isError:
		return OutcomeToolError
	}
	return OutcomeOK
}

// ResultText is the text of a tool result's text contents, one per line.
func ResultText(r *mcp.CallToolResult) string {
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

// Truncate cuts s to at most n bytes on a UTF-8 boundary, marking the cut
// with "...".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}
