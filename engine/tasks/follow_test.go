package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/tasks"
)

// A reload that adds the state block sends new tasks to Redis, where
// another replica finds them, while those created before are still
// answered from memory; one that removes it sends new tasks back to
// memory, and the tasks in Redis become unknown (not an error).
func TestFollowReload(t *testing.T) {
	st := redisState(t)
	var shared atomic.Bool
	state := func() *sharedstate.Store {
		if shared.Load() {
			return st
		}
		return nil
	}
	f := tasks.NewFollow(tasks.NewMemory(0), tasks.NewRedis(state, 0), shared.Load)
	m := tasks.NewManager(f, tasks.Options{})
	other := tasks.NewRedis(func() *sharedstate.Store { return st }, 0) // another replica's view
	ctx := context.Background()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	run := func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
		select {
		case <-ctx.Done():
		case <-block:
		}
		return result("done")
	}
	spec := tasks.Spec{Owner: "alice", Tool: "build", Policy: policy}

	before, err := m.Start(ctx, ctx, spec, run)
	if err != nil {
		t.Fatal(err)
	}
	shared.Store(true) // the reload adds the state block
	after, err := m.Start(ctx, ctx, spec, run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, "alice", after.ID); err != nil {
		t.Fatalf("the task created after the state block was added is not in Redis: %v", err)
	}
	if _, err := other.Get(ctx, "alice", before.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("the task created before is in Redis: %v", err)
	}
	for _, id := range []string{before.ID, after.ID} {
		if r, err := m.Get(ctx, "alice", id); err != nil || r.Status != tasks.Working {
			t.Fatalf("task %s after the reload: %+v, %v", id, r, err)
		}
	}
	if recs, err := m.Recent(ctx, "alice", 10); err != nil || len(recs) != 2 {
		t.Fatalf("alice's tasks: %d, %v; want both", len(recs), err)
	}
	if _, err := m.Cancel(ctx, "alice", before.ID); err != nil {
		t.Fatalf("cancelling the task kept in memory: %v", err)
	}

	shared.Store(false) // and a reload removes it
	if _, err := m.Get(ctx, "alice", after.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("a task in Redis once the state block is gone: %v, want unknown", err)
	}
	again, err := m.Start(ctx, ctx, spec, run)
	if err != nil {
		t.Fatalf("creating a task once the state block is gone: %v", err)
	}
	if _, err := other.Get(ctx, "alice", again.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Fatalf("the task created without the state block is in Redis: %v", err)
	}
	if r, err := m.Get(ctx, "alice", again.ID); err != nil || r.Status != tasks.Working {
		t.Fatalf("the new task: %+v, %v", r, err)
	}
}
