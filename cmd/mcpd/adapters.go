package main

import (
	"github.com/mcpd/mcpd/engine/adapter"

	httpadapter "github.com/mcpd/mcpd/adapters/http"
	"github.com/mcpd/mcpd/adapters/shell"
	sqladapter "github.com/mcpd/mcpd/adapters/sql"
)

// registerAdapters registers every adapter mcpd ships, under the block name
// that selects it in a tool.
func registerAdapters(reg *adapter.Registry) {
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
}
