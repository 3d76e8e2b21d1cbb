package serve

import (
	"context"

	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/tasks"
)

// TasksOf returns at most n of caller's tasks (nil: the local user) that
// have not expired, newest first and without their results: the console's
// tasks view. A caller sees its own tasks only, as tasks/get answers it
// for its own only; cancelling one goes through tasks/cancel on /mcp, so
// the same checks apply.
func (s *Server) TasksOf(ctx context.Context, caller *principal.Principal, n int) ([]*tasks.Record, error) {
	return s.tasks.Recent(ctx, ownerKey(caller), n)
}
