package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/tasks"
	"github.com/mcpd/mcpd/internal/wait"
)

// redisState opens a shared state on the test Redis, under a prefix of
// the test's own.
func redisState(t testing.TB) *sharedstate.Store {
	t.Helper()
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpd.hcl")
	src := fmt.Sprintf("server {\n  state {\n    redis = %q\n    key_prefix = %q\n  }\n}\n", url, prefix)
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load([]string{path}, config.Blocks{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s, diags := sharedstate.Compile(cfg.Server.State, "", &hcl.EvalContext{Functions: funcs.Table(dir)})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	st := sharedstate.Open(s, nil)
	t.Cleanup(func() { st.Close() })
	return st
}

// stores are the stores every test runs against: each call returns a
// fresh one (the Redis ones of one test share the test's prefix, as the
// replicas of one deployment do).
func stores(t *testing.T) map[string]func() tasks.Store {
	return map[string]func() tasks.Store{
		"memory": func() tasks.Store { return tasks.NewMemory(0) },
		"redis": func() tasks.Store {
			st := redisState(t)
			return tasks.NewRedis(func() *sharedstate.Store { return st }, 0)
		},
	}
}

var policy = tasks.Policy{Mode: tasks.Optional, TTL: time.Minute, MaxPerCaller: 2, PollInterval: time.Second}

func result(text string) tasks.Outcome {
	return tasks.Outcome{Result: json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, text))}
}

func await(t *testing.T, m *tasks.Manager, owner, id string, want tasks.Status) *tasks.Record {
	t.Helper()
	var r *tasks.Record
	wait.Until(t, "task "+id+" "+string(want), func() bool {
		var err error
		r, err = m.Get(context.Background(), owner, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status == want
	})
	return r
}

func TestLifecycle(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := tasks.NewManager(newStore(), tasks.Options{Renew: 20 * time.Millisecond, Lease: time.Second})
			release := make(chan struct{})
			r, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "build", Policy: policy}, func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
				tasks.Report(ctx, "half way", true)
				select {
				case <-release:
				case <-ctx.Done():
				}
				return result("built")
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Get(ctx, "alice", r.ID)
			if err != nil || got.Status != tasks.Working {
				t.Fatalf("Get at once: %+v, %v", got, err)
			}
			wait.Until(t, "the progress", func() bool {
				got, _ := m.Get(ctx, "alice", r.ID)
				return got.Message == "half way"
			})
			// Another owner sees nothing, and cancels nothing.
			for _, op := range []func() error{
				func() error { _, err := m.Get(ctx, "bob", r.ID); return err },
				func() error { _, err := m.Cancel(ctx, "bob", r.ID); return err },
				func() error { _, err := m.Answer(ctx, "bob", r.ID, nil); return err },
			} {
				if err := op(); !errors.Is(err, tasks.ErrNotFound) {
					t.Errorf("another owner: %v, want ErrNotFound", err)
				}
			}
			close(release)
			done := await(t, m, "alice", r.ID, tasks.Completed)
			if string(done.Result) == "" || done.Lease != (time.Time{}) || done.Expires.Sub(done.Updated) != time.Minute {
				t.Fatalf("completed: %+v", done)
			}
			// Cancelling an ended task changes nothing.
			if c, err := m.Cancel(ctx, "alice", r.ID); err != nil || c.Status != tasks.Completed {
				t.Fatalf("cancel after the end: %+v, %v", c, err)
			}
		})
	}
}

func TestCancelEndsTheCall(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := tasks.NewManager(newStore(), tasks.Options{Renew: 20 * time.Millisecond, Lease: time.Second})
			var ended atomic.Bool
			r, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "wait", Policy: policy}, func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
				<-ctx.Done()
				ended.Store(true)
				return result("too late")
			})
			if err != nil {
				t.Fatal(err)
			}
			if c, err := m.Cancel(ctx, "alice", r.ID); err != nil || c.Status != tasks.Cancelled {
				t.Fatalf("cancel: %+v, %v", c, err)
			}
			wait.Until(t, "the call's context to end", ended.Load)
			wait.Until(t, "the run to end", func() bool { return m.Running() == 0 })
			if got, _ := m.Get(ctx, "alice", r.ID); got.Status != tasks.Cancelled || got.Result != nil {
				t.Fatalf("after the call returned: %+v, want cancelled without a result", got)
			}
		})
	}
}

// Answers are taken one key at a time; the task stays input_required
// until every question is answered, then runs the next round with them.
func TestAnswers(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := tasks.NewManager(newStore(), tasks.Options{Renew: 20 * time.Millisecond, Lease: time.Second})
			r, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "ask", Policy: policy}, func(ctx context.Context, answers map[string]json.RawMessage, state string) tasks.Outcome {
				if answers == nil {
					return tasks.Outcome{Inputs: map[string]json.RawMessage{"a": json.RawMessage(`{}`), "b": json.RawMessage(`{}`)}, State: "s1"}
				}
				return result(fmt.Sprintf("%s %s %s", answers["a"], answers["b"], state))
			})
			if err != nil {
				t.Fatal(err)
			}
			await(t, m, "alice", r.ID, tasks.InputRequired)
			if got, _ := m.Answer(ctx, "alice", r.ID, map[string]json.RawMessage{"a": json.RawMessage(`1`), "zzz": json.RawMessage(`0`)}); got.Status != tasks.InputRequired || len(got.Inputs) != 1 || got.Inputs["b"] == nil {
				t.Fatalf("after a partial answer: %+v", got)
			}
			m.Answer(ctx, "alice", r.ID, map[string]json.RawMessage{"b": json.RawMessage(`2`)})
			done := await(t, m, "alice", r.ID, tasks.Completed)
			if want := `{"content":[{"type":"text","text":"1 2 s1"}]}`; string(done.Result) != want {
				t.Fatalf("result %s, want %s", done.Result, want)
			}
		})
	}
}

// A caller holds at most MaxPerCaller tasks not ended; ended ones count
// against the store-wide bound only.
func TestBounds(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			m := tasks.NewManager(newStore(), tasks.Options{Renew: 20 * time.Millisecond, Lease: time.Second, MaxKeptPerCaller: 3})
			block := func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
				<-ctx.Done()
				return tasks.Outcome{}
			}
			a, _ := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, block)
			m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, block)
			if _, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, block); !errors.Is(err, tasks.ErrTooMany) {
				t.Fatalf("a third running task: %v, want ErrTooMany", err)
			}
			if _, err := m.Start(ctx, ctx, tasks.Spec{Owner: "bob", Tool: "t", Policy: policy}, block); err != nil {
				t.Fatalf("another caller: %v", err)
			}
			m.Cancel(ctx, "alice", a.ID)
			if _, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, block); err != nil {
				t.Fatalf("after a cancel: %v", err)
			}
			// alice now holds 3 (one cancelled, kept): the store-wide bound.
			b, _ := m.List(ctx, 100)
			if len(b) != 4 {
				t.Errorf("List: %d tasks, want 4", len(b))
			}
			for _, r := range b {
				m.Cancel(ctx, r.Owner, r.ID)
			}
			if _, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, block); !errors.Is(err, tasks.ErrTooMany) {
				t.Fatalf("past the kept bound: %v, want ErrTooMany", err)
			}
		})
	}
}

// A task whose replica stops renewing its lease is failed by the next
// poller, not working forever.
func TestLostReplica(t *testing.T) {
	for name, newStore := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := newStore()
			var now atomic.Int64
			now.Store(time.Now().UnixNano())
			clock := func() time.Time { return time.Unix(0, now.Load()) }
			dead := tasks.NewManager(store, tasks.Options{Lease: time.Second, Renew: time.Hour, Now: clock})
			r, err := dead.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, func(ctx context.Context, _ map[string]json.RawMessage, _ string) tasks.Outcome {
				<-ctx.Done()
				return tasks.Outcome{}
			})
			if err != nil {
				t.Fatal(err)
			}
			other := tasks.NewManager(store, tasks.Options{Now: clock})
			if got, _ := other.Get(ctx, "alice", r.ID); got.Status != tasks.Working {
				t.Fatalf("within the lease: %s", got.Status)
			}
			now.Add(int64(2 * time.Second))
			got, err := other.Get(ctx, "alice", r.ID)
			if err != nil || got.Status != tasks.Failed || got.Error == nil {
				t.Fatalf("past the lease: %+v, %v; want failed", got, err)
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			var store tasks.Store = tasks.NewMemory(0)
			if name == "redis" {
				st := redisState(b)
				store = tasks.NewRedis(func() *sharedstate.Store { return st }, 0)
			}
			ctx := context.Background()
			m := tasks.NewManager(store, tasks.Options{})
			r, err := m.Start(ctx, ctx, tasks.Spec{Owner: "alice", Tool: "t", Policy: policy}, func(context.Context, map[string]json.RawMessage, string) tasks.Outcome {
				return result("done, with a result of a realistic size: " + strings.Repeat("x", 200))
			})
			if err != nil {
				b.Fatal(err)
			}
			for {
				if got, _ := m.Get(ctx, "alice", r.ID); got.Status == tasks.Completed {
					break
				}
				time.Sleep(time.Millisecond)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Get(ctx, "alice", r.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
