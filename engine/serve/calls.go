package serve

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/event"
)

// ClientMetaKey is the params._meta key a client may set to say what it is,
// e.g. "console" for mcpd's own browser console. It is carried into the
// audit log and the call events as a label only: any client can set any
// value, so nothing may be allowed or refused on it.
const ClientMetaKey = "mcpd/client"

// maxClientLabel bounds the label a client gives itself.
const maxClientLabel = 64

// clientLabel returns the label the client put under ClientMetaKey.
func clientLabel(req mcp.Request) string {
	meta := paramsMeta(req)
	if meta == nil {
		return ""
	}
	s, _ := meta[ClientMetaKey].(string)
	return event.Truncate(s, maxClientLabel)
}
