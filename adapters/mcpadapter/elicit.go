package mcpadapter

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayElicit takes an upstream's elicitation/create before the SDK's
// client handles it: the SDK checks a form's requestedSchema against its
// own reading of the spec before it calls the handler, and refused schemas
// that clients accept (a titled multi-select whose items say
// `type: string` beside their `anyOf`, SEP-1330), so that the upstream's
// question never reached the client. The gateway passes the question on as
// it is (onElicit) and leaves checking it to the client that answers it; a
// 2026-07-28 upstream's questions take that path already (answerInputs).
func (r *relays) relayElicit(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "elicitation/create" {
			return next(ctx, method, req)
		}
		er, ok := req.(*mcp.ElicitRequest)
		if !ok || er.Params == nil {
			return next(ctx, method, req)
		}
		// The request keeps its session: it tells which call it belongs
		// to when calls have sessions of their own (held.go).
		return r.onElicit(ctx, er)
	}
}
