package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// A reload that adds the state block moves new tasks to Redis without a
// restart: B, which shares the Redis from its start, answers for the tasks
// A creates after A's reload, and A still answers for the task it created
// before it, kept in its memory.
func TestTasksFollowStateReload(t *testing.T) {
	t.Parallel()
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	state := fmt.Sprintf("server {\n  state {\n    redis = %q\n    key_prefix = %q\n  }\n}\n", url, prefix)
	dirA := writeConfig(t, tasksConfig)
	a, b := startOps(t, dirA), startOps(t, writeConfig(t, state+tasksConfig))
	onA := connectTasks(t, a.endpoint, "alice-key-0123456789", true)
	onB := connectTasks(t, b.endpoint, "alice-key-0123456789", true)

	before := startTask(t, onA, "build", map[string]any{"seconds": 60})
	t.Cleanup(func() { taskCall(t, onA, "tasks/cancel", before, nil) })
	if _, err := taskCall(t, onB, "tasks/get", before, nil); rpcCode(err) != -32602 {
		t.Fatalf("B knows A's task kept in memory: %v", err)
	}

	tmp := filepath.Join(dirA, "tools.hcl.tmp")
	if err := os.WriteFile(tmp, []byte(state+tasksConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dirA, "tools.hcl")); err != nil {
		t.Fatal(err)
	}
	wait.Until(t, "a task created on A after its reload to be answered on B", func() bool {
		res, err := onA.CallTool(bounded(t), &mcp.CallToolParams{Name: "only_task"})
		if err != nil {
			t.Fatalf("calling only_task on A: %v", err)
		}
		rel, _ := res.Meta["io.modelcontextprotocol/related-task"].(map[string]any)
		id, _ := rel["taskId"].(string)
		if id == "" {
			return false // refused (the bound of the caller's tasks): not yet
		}
		_, err = taskCall(t, onB, "tasks/get", id, nil)
		return err == nil
	})
	if r, err := taskCall(t, onA, "tasks/get", before, nil); err != nil || r.Status != "working" {
		t.Fatalf("A's task created before the reload: %+v, %v; want it still working", r, err)
	}
	if _, err := taskCall(t, onA, "tasks/cancel", before, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := taskCall(t, onA, "tasks/get", before, nil); err != nil || r.Status != "cancelled" {
		t.Fatalf("A's task created before the reload, cancelled: %+v, %v", r, err)
	}
}
