// Package mcpadapter puts MCP servers a team already runs behind mcpd: the
// `mcp_server` top-level block declares an upstream server (a program
// spoken to over stdio, or a Streamable HTTP endpoint of either protocol
// era), and a tool's `mcp` block exposes one of its tools:
//
//	mcp_server "everything" {
//	  command = ["npx", "-y", "@modelcontextprotocol/server-everything"]
//	}
//
//	tool "echo" {
//	  description = "Echo a message back."
//	  param "message" { type = "string" }
//	  mcp {
//	    server = "everything"
//	    tool   = "echo"
//	  }
//	}
//
// The upstream is connected with the official Go SDK's client. A stdio
// upstream is a supervised child process: it runs in its own process
// group, its stderr goes to mcpd's log under the upstream's name, it is
// restarted with backoff when it dies, and its group is killed when the
// backend is closed (reload removal, shutdown). An HTTP upstream is
// reconnected the same way when its session breaks.
//
// The call path knows nothing of the upstream's transport: a Handler gets
// a session from the live upstream (waiting a bounded time for one while
// it connects) and passes the call through: its content blocks,
// structuredContent and isError come back as adapter.Output.Result;
// progress notifications are relayed to the mcpd client; cancellation and
// mcpd's timeout end the upstream request (the SDK sends
// notifications/cancelled). The upstream's requests to its client
// (elicitation, sampling, roots), and a 2026-07-28 upstream's
// input_required rounds, are relayed to the client of the call: asked
// within the call through adapter.Request.Client (relay.go), or, for a
// 2026-07-28 client, by mcpd's own input_required rounds through
// adapter.Request.Rounds (rounds.go; held.go holds a 2025-11-25
// upstream's call between the client's requests).
//
// The block also exposes an upstream's tools in bulk (the `expose` block,
// see expose.go): the live upstream lists them at run time and mcpd
// rebuilds its tool set when the listing changes.
package mcpadapter

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/proc"
)

// Adapter is the MCP upstream adapter. Register it as "mcp"; its backend
// block is "mcp_server".
type Adapter struct {
	procs *proc.Supervisor // starts every stdio upstream's program
	// tokens are the OAuth tokens identity blocks obtained, for the life
	// of the adapter: a reload keeps them.
	tokens *identity.Cache
	// connect runs the per-user connect flow of upstreams whose identity
	// mode is user_authorization (userauth.go); nil: such upstreams load
	// but cannot be called (validate, lint).
	connect *connect.Service
}

// WithConnect gives the adapter the service that runs the per-user
// connect flow (engine/connect) and receives its callbacks.
func (a *Adapter) WithConnect(s *connect.Service) *Adapter {
	a.connect = s
	return a
}

// New returns the adapter. procs starts every stdio upstream's program and
// kills them all, with what they started, on mcpd's exit (see engine/proc);
// nil: the adapter has a supervisor of its own.
func New(procs *proc.Supervisor) *Adapter {
	if procs == nil {
		procs = proc.NewSupervisor()
	}
	return &Adapter{procs: procs, tokens: identity.NewCache(userAgent)}
}

var (
	_ adapter.BackendAdapter  = (*Adapter)(nil)
	_ adapter.Schemaer        = (*Adapter)(nil)
	_ adapter.BackendSchemaer = (*Adapter)(nil)
	_ adapter.BackendConfig   = (*serverConfig)(nil)
	_ adapter.Backend         = (*upstream)(nil)
	_ adapter.Pinger          = (*upstream)(nil)
	_ adapter.Handler         = (*handler)(nil)
)

// userAgent is what token requests send.
const userAgent = "mcpd-mcp/1"

// BackendBlock is the top-level block this adapter owns.
func (a *Adapter) BackendBlock() string { return "mcp_server" }

// ToolSchema is the schema of a tool's mcp block.
func (a *Adapter) ToolSchema() *adapter.Schema { return toolSchema }

// BackendSchema is the schema of the mcp_server block.
func (a *Adapter) BackendSchema() *adapter.Schema { return serverSchema }

var toolSchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "server", Required: true},
		{Name: "tool"},
		{Name: "arguments"},
		{Name: "max_output_bytes"},
	},
}

var serverSchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "command"},
		{Name: "env"},
		{Name: "inherit_env"},
		{Name: "dir"},
		{Name: "url"},
		{Name: "headers"},
		{Name: "protocol_version"},
		{Name: "connect_timeout"},
		{Name: "answer_timeout"},
		{Name: "max_idle_sessions"},
		{Name: "idle_session_timeout"},
		{Name: "start"},
		{Name: "on_drift"},
		{Name: "fast_path"},
	},
	Blocks: []adapter.BlockSchema{
		{Type: "expose", Schema: exposeSchema},
		{Type: "identity", Schema: identity.Schema},
	},
}
