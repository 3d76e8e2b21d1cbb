package mcpadapter

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

var ctyString = cty.String

var exposeSchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "prefix"},
		{Name: "include"},
		{Name: "exclude"},
		{Name: "scopes"},
		{Name: "when_down"},
	},
}

// exposeConfig is an mcp_server's expose block: which of the upstream's
// tools mcpd serves as its own, under which names.
type exposeConfig struct{}

func decodeExpose(d *adapter.Decoder, b *hcl.Block) *exposeConfig { return &exposeConfig{} }

// listing is what the upstream listed last.
type listing struct {
	tools []any
}

func (u *upstream) relist(what string) {}
