package mcpadapter

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// withRelay is the context of an upstream call. Requests the upstream
// sends back to its client while a call runs (elicitation) are refused
// for now: see onElicit.
func withRelay(ctx context.Context) context.Context { return ctx }

// onElicit answers an upstream's elicitation/create. mcpd does not relay
// it to its own client yet (docs/gateway.md, "Limits"): the upstream is
// told so with an error, and its tool decides what to do without the
// answer.
func (u *upstream) onElicit(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return nil, fmt.Errorf("mcpd does not relay elicitation from upstream %s to its client", u.cfg.name)
}
