// Package builtin registers the adapters mcpd ships, so that every program
// that loads configs (mcpd, mcpd-import) offers the same ones.
package builtin

import (
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/proc"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/adapters/sqladapter"
)

// Register registers every adapter mcpd ships in reg, under the block name
// that selects it in a tool.
func Register(reg *adapter.Registry) { RegisterWithSupervisor(reg, nil) }

// RegisterWithSupervisor is Register whose adapters that start programs
// (shell, and mcp for stdio upstreams) start them through procs (see
// engine/proc), for a server to kill them all on its way out; nil: one
// supervisor of their own, whose programs end when the process does.
func RegisterWithSupervisor(reg *adapter.Registry, procs *proc.Supervisor) {
	RegisterServing(reg, procs, nil)
}

// RegisterServing is RegisterWithSupervisor for a server: conn runs the
// per-user connect flow of MCP upstreams that authorize each user
// (engine/connect); nil: such upstreams load but cannot be called.
func RegisterServing(reg *adapter.Registry, procs *proc.Supervisor, conn *connect.Service) {
	if procs == nil {
		procs = proc.NewSupervisor()
	}
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.NewWithSupervisor(procs))
	reg.Register("sql", sqladapter.New())
	reg.Register("mcp", mcpadapter.New(procs).WithConnect(conn))
}
