package console

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/tasks"
)

// The tasks view: the page asks prefix+"tasks" every few seconds for the
// tasks of its caller (the principal its token verifies, or the local
// user), and cancels one with tasks/cancel on /mcp, like any client. Only
// the caller's own tasks are listed: a task is bound to the principal that
// created it, and tasks/cancel would refuse another's anyway. An operator
// view of every caller's tasks is left out on purpose: it would show who
// runs what (the console shows other callers' calls without their names)
// and could cancel nothing.

// TaskLister lists a caller's tasks (nil: the local user), newest first:
// serve.Server.TasksOf.
type TaskLister func(ctx context.Context, who *principal.Principal, n int) ([]*tasks.Record, error)

// Task is one task as the page shows it.
type Task struct {
	ID      string    `json:"id"`
	Tool    string    `json:"tool"`
	Status  string    `json:"status"`
	Message string    `json:"message,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	PollMS  int64     `json:"poll_ms"`
}

// maxTasksShown bounds the tasks one answer lists.
const maxTasksShown = 50

// SetTasks makes the console list tasks with f (nil: the page shows no
// tasks view).
func (c *Console) SetTasks(f TaskLister) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tasks = f
}

func (c *Console) serveTasks(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	f := c.tasks
	c.mu.Unlock()
	if f == nil {
		http.NotFound(w, r)
		return
	}
	who := principal.FromTokenInfo(sdkauth.TokenInfoFromContext(r.Context()))
	recs, err := f(r.Context(), who, maxTasksShown)
	if err != nil {
		c.opts.Logger.Warn("console: listing tasks", "err", err)
		http.Error(w, "the task store did not answer", http.StatusServiceUnavailable)
		return
	}
	out := make([]Task, 0, len(recs))
	for _, t := range recs {
		out = append(out, Task{ID: t.ID, Tool: t.Tool, Status: string(t.Status), Message: t.Message, Created: t.Created, Updated: t.Updated, PollMS: t.Poll.Milliseconds()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{"tasks": out, "now": time.Now().UTC()})
}
