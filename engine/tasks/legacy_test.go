package tasks_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/tasks"
	"github.com/mcpd/mcpd/internal/wait"
)

// ListOwner pages through one owner's tasks in the order of their ids,
// and never shows another owner's.
func TestListOwner(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := tasks.NewManager(newStore(), tasks.Options{Renew: 20 * time.Millisecond, Lease: time.Second})
			p := policy
			p.MaxPerCaller = 10
			done := func(context.Context, map[string]json.RawMessage, string) tasks.Outcome { return result("ok") }
			var mine []string
			for range 5 {
				r, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: p}, done)
				if err != nil {
					t.Fatal(err)
				}
				mine = append(mine, r.ID)
			}
			if _, err := m.Start(ctx, ctx, tasks.Spec{Owner: "bob", Tool: "t", Policy: p}, done); err != nil {
				t.Fatal(err)
			}
			slices.Sort(mine)
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				recs, more, err := m.ListOwner(ctx, "alice", after, 2)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) > 2 || pages > 3 {
					t.Fatalf("page %d of %d tasks", pages, len(recs))
				}
				for _, r := range recs {
					if r.Owner != "alice" {
						t.Fatalf("another owner's task listed: %+v", r)
					}
					got = append(got, r.ID)
				}
				if !more {
					break
				}
				after = recs[len(recs)-1].ID
			}
			if !slices.Equal(got, mine) {
				t.Fatalf("listed %v, want %v", got, mine)
			}
		})
	}
}

// OnStatus hears of each status change a task goes through here:
// input_required, working again once answered, and its end.
func TestOnStatus(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			var mu sync.Mutex
			var seen []tasks.Status
			m := tasks.NewManager(newStore(), tasks.Options{Renew: 20 * time.Millisecond, Lease: time.Second, OnStatus: func(r *tasks.Record) {
				mu.Lock()
				seen = append(seen, r.Status)
				mu.Unlock()
			}})
			r, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "ask", Policy: policy}, func(_ context.Context, answers map[string]json.RawMessage, _ string) tasks.Outcome {
				if answers == nil {
					return tasks.Outcome{Inputs: map[string]json.RawMessage{"q": json.RawMessage(`{"method":"elicitation/create"}`)}}
				}
				return result("answered")
			})
			if err != nil {
				t.Fatal(err)
			}
			await(t, m, "alice", r.ID, tasks.InputRequired)
			if _, err := m.Answer(ctx, "alice", r.ID, map[string]json.RawMessage{"q": json.RawMessage(`{"action":"accept"}`)}); err != nil {
				t.Fatal(err)
			}
			await(t, m, "alice", r.ID, tasks.Completed)
			want := []tasks.Status{tasks.InputRequired, tasks.Working, tasks.Completed}
			wait.Until(t, "the statuses heard", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Equal(seen, want)
			})
		})
	}
}
