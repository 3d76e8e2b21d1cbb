// Package builtin registers the adapters mcpd ships, so that every program
// that loads configs (mcpd, mcpd-import) offers the same ones.
package builtin

import (
	"github.com/mcpd/mcpd/engine/adapter"

	httpadapter "github.com/mcpd/mcpd/adapters/http"
	mcpadapter "github.com/mcpd/mcpd/adapters/mcp"
	"github.com/mcpd/mcpd/adapters/shell"
	sqladapter "github.com/mcpd/mcpd/adapters/sql"
)

// Register registers every adapter mcpd ships in reg, under the block name
// that selects it in a tool.
func Register(reg *adapter.Registry) { RegisterWithGroups(reg, nil) }

// RegisterWithGroups is Register whose shell adapter records the process
// group of every program it runs in groups (see shell.ProcessGroups), for a
// server to kill them all on its way out.
func RegisterWithGroups(reg *adapter.Registry, groups *shell.ProcessGroups) {
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.NewWithGroups(groups))
	reg.Register("sql", sqladapter.New())
	reg.Register("mcp", mcpadapter.New(groups))
}
