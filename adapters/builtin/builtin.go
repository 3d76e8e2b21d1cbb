// Package builtin registers the adapters mcpd ships, so that every program
// that loads configs (mcpd, mcpd-import) offers the same ones.
package builtin

import (
	"github.com/mcpd/mcpd/engine/adapter"

	httpadapter "github.com/mcpd/mcpd/adapters/http"
	"github.com/mcpd/mcpd/adapters/shell"
	sqladapter "github.com/mcpd/mcpd/adapters/sql"
)

// Register registers every adapter mcpd ships in reg, under the block name
// that selects it in a tool.
func Register(reg *adapter.Registry) {
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
}
