package main

import "github.com/mcpd/mcpd/engine/adapter"

// registerAdapters registers every adapter mcpd ships.
func registerAdapters(reg *adapter.Registry) {
}
