// Global limits through Tool.Call on replicas built from one config: the
// limits blocks as compiled, the state block's failure modes and their
// diagnostics, with the call's one deadline.

package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// replicas builds n snapshots of the same config, as n replicas would:
// each with a Store of its own on the same Redis.
func replicas(t *testing.T, n int, url, prefix, tools string) []*snapshot.Snapshot {
	rs, _ := replicasWithFakes(t, n, url, prefix, tools)
	return rs
}

func replicasWithFakes(t *testing.T, n int, url, prefix, tools string) ([]*snapshot.Snapshot, []*fake) {
	t.Helper()
	cfg := fmt.Sprintf("server {\n  name = \"shared\"\n  state {\n    redis      = %q\n    key_prefix = %q\n    timeout    = \"300ms\"\n  }\n}\n", url, prefix) + tools
	out := make([]*snapshot.Snapshot, n)
	fakes := make([]*fake, n)
	for i := range out {
		fakes[i] = newFake()
		out[i], _ = build(t, fakes[i].register(), nil, map[string]string{"mcpd.hcl": cfg})
	}
	return out, fakes
}

func as(name string) context.Context {
	return principal.NewContext(context.Background(), &principal.Principal{Name: name, Method: "api_key"})
}

// With a state block, per_caller and per_tool hold across replicas: three
// replicas admit a caller's 3/m once, not three times; another caller has
// a share of its own; the refusal says when to retry, as the local one
// does; scope = "replica" keeps the old per-process count.
func TestGlobalRateLimit(t *testing.T) {
	url := sharedstatetest.URL(t)
	tools := `
tool "search" {
  description = "Searches."
  rate_limit {
    per_caller = "3/m"
  }
  fake {
    mode = "echo"
  }
}
tool "export" {
  description = "Exports."
  rate_limit {
    per_tool = "4/m"
  }
  fake {
    mode = "echo"
  }
}
tool "local" {
  description = "Counted per replica."
  rate_limit {
    per_caller = "1/m"
    scope      = "replica"
  }
  fake {
    mode = "echo"
  }
}
`
	rs := replicas(t, 3, url, sharedstatetest.Prefix(t, url), tools)
	admitted := func(toolName, caller string, calls int) (int, string) {
		ok, last := 0, ""
		for i := 0; i < calls; i++ {
			res := call(tool(t, rs[i%len(rs)], toolName), as(caller), nil, nil)
			if !res.IsError {
				ok++
			} else {
				last = render(res)
			}
		}
		return ok, last
	}
	if n, refusal := admitted("search", "alice", 9); n != 3 || !strings.Contains(refusal, "tool search is rate limited (3/m per caller) and you have used your share; retry in ") {
		t.Fatalf("alice: %d of 9 admitted across 3 replicas (want 3); refusal %q", n, refusal)
	}
	if n, _ := admitted("search", "bob", 9); n != 3 {
		t.Fatalf("bob: %d admitted, want 3 of his own", n)
	}
	// The retry hint is the time until one token is back: ~20s for 3/m.
	res := call(tool(t, rs[0], "search"), as("alice"), nil, nil)
	if got := render(res); !strings.Contains(got, "retry in 1") && !strings.Contains(got, "retry in 20.0s") {
		t.Errorf("retry hint %q, want about 20s", got)
	}
	if n, refusal := admitted("export", "carol", 6); n != 4 || !strings.Contains(refusal, "(4/m for all callers)") {
		t.Fatalf("per_tool: %d admitted (want 4), refusal %q", n, refusal)
	}
	if n, _ := admitted("local", "dave", 6); n != 3 {
		t.Fatalf("scope = replica: %d admitted across 3 replicas, want 1 each", n)
	}
}

// max_concurrency with concurrency_scope = "global" counts the calls of
// every replica; a killed replica's slot comes back when its lease expires
// (see sharedstate's TestLeases); per replica is the default.
func TestGlobalConcurrency(t *testing.T) {
	url := sharedstatetest.URL(t)
	tools := `
tool "slow" {
  description = "Blocks."
  max_concurrency   = 1
  concurrency_scope = "global"
  queue_timeout     = "300ms"
  timeout           = "20s"
  fake {
    mode = "block"
  }
}
tool "slow_local" {
  description = "Blocks."
  max_concurrency = 1
  queue_timeout   = "300ms"
  timeout         = "20s"
  fake {
    mode = "block"
  }
}
`
	rs, fakes := replicasWithFakes(t, 2, url, sharedstatetest.Prefix(t, url), tools)
	for _, tc := range []struct {
		tool, want string
	}{
		{"slow", "tool slow is busy: it already runs its maximum of 1 calls at once (max_concurrency across all replicas) and none finished within 300ms"},
		{"slow_local", ""},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(tool(t, rs[0], tc.tool), ctx, nil, nil)
		}()
		select { // the first call holds its slot once it runs
		case <-fakes[0].started:
		case <-time.After(10 * time.Second):
			t.Fatal("first call did not start")
		}
		// The other replica: refused when global, admitted (blocks) when not.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
		res := call(tool(t, rs[1], tc.tool), ctx2, nil, nil)
		cancel2()
		got := render(res)
		if tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: second replica got %q, want %q", tc.tool, got, tc.want)
		}
		if tc.want == "" && strings.Contains(got, "busy") {
			t.Errorf("%s: per replica, yet the second replica is busy: %q", tc.tool, got)
		}
		cancel()
		wg.Wait()
	}
	// The slot is back once the call ended.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if got := render(call(tool(t, rs[1], "slow"), ctx, nil, nil)); strings.Contains(got, "busy") {
		t.Errorf("slot not released: %q", got)
	}
}

// Redis killed and restarted mid-load: a fail-open tool falls back to this
// replica's limits (and counts it), a fail-closed tool is refused with a
// clear error, nothing crashes, and the global limits are back within
// seconds of Redis's return.
func TestSharedStateFailure(t *testing.T) {
	srv := sharedstatetest.NewServer(t)
	tools := `
tool "open" {
  description = "Fails open."
  rate_limit {
    per_caller = "2/m"
  }
  fake {
    mode = "echo"
  }
}
tool "closed" {
  description = "Fails closed."
  on_state_failure = "closed"
  rate_limit {
    per_caller = "100/s"
  }
  fake {
    mode = "echo"
  }
}
`
	rs := replicas(t, 2, srv.URL(), "fail", tools)
	st := rs[0].State()
	srv.Kill()
	// The first call finds Redis gone (or the probe does).
	for i := 0; i < 50 && st.Healthy(); i++ {
		call(tool(t, rs[0], "open"), as("erin"), nil, nil)
		time.Sleep(20 * time.Millisecond)
	}
	if st.Healthy() {
		t.Fatal("store still healthy with Redis killed")
	}
	// Fail-open: this replica's own 2/m applies.
	ok := 0
	for i := 0; i < 4; i++ {
		if !call(tool(t, rs[0], "open"), as("frank"), nil, nil).IsError {
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("fail-open: %d of 4 admitted, want the local 2", ok)
	}
	if st.Status().Fallbacks == 0 {
		t.Error("fallbacks not counted")
	}
	got := render(call(tool(t, rs[0], "closed"), as("frank"), nil, nil))
	if !strings.Contains(got, "ERROR") || !strings.Contains(got, "tool closed was not run: its rate limit is shared by every replica of this server and the shared state (Redis) does not answer; retry in 5.0s") {
		t.Errorf("fail-closed: %q", got)
	}
	if st.Status().Refusals == 0 {
		t.Error("fail-closed refusals not counted")
	}
	srv.Start()
	wait.Until(t, "both replicas' state healthy", func() bool { return rs[0].State().Healthy() && rs[1].State().Healthy() })
	if got := render(call(tool(t, rs[0], "closed"), as("frank"), nil, nil)); strings.Contains(got, "ERROR") {
		t.Errorf("after recovery: %q", got)
	}
	// Global again: the fresh Redis holds gina's 2/m across both replicas.
	ok = 0
	for i := 0; i < 6; i++ {
		if !call(tool(t, rs[i%2], "open"), as("gina"), nil, nil).IsError {
			ok++
		}
	}
	if ok != 2 {
		t.Errorf("after recovery: %d of 6 admitted across 2 replicas, want 2", ok)
	}
}

// The limit options are checked at load, with their ranges.
func TestSharedLimitDiagnostics(t *testing.T) {
	state := "server {\n  state {\n    redis = \"redis://127.0.0.1:1\"\n  }\n}\n"
	for _, tc := range []struct {
		name, config, want string
	}{
		{"global concurrency without state", `tool "t" {
  description = "x"
  max_concurrency   = 2
  concurrency_scope = "global"
  fake {
    mode = "echo"
  }
}
`, `mcpd.hcl:4:23: Invalid concurrency_scope; concurrency_scope = "global" counts across replicas in the shared state, and the server has no state block`},
		{"scope without max_concurrency", state + `tool "t" {
  description = "x"
  concurrency_scope = "global"
  fake {
    mode = "echo"
  }
}
`, `mcpd.hcl:8:23: Invalid concurrency_scope; concurrency_scope says where max_concurrency is counted; set max_concurrency too`},
		{"bad rate scope", state + `tool "t" {
  description = "x"
  rate_limit {
    per_caller = "1/s"
    scope      = "cluster"
  }
  fake {
    mode = "echo"
  }
}
`, `mcpd.hcl:10:18: Invalid scope; scope is "global" (across replicas, in the shared state) or "replica" (each process alone), not "cluster"`},
		{"on_state_failure without state", `tool "t" {
  description = "x"
  on_state_failure = "closed"
  fake {
    mode = "echo"
  }
}
`, `mcpd.hcl:3:22: Invalid on_state_failure; on_state_failure is what the tool's shared limits do`},
		{"bad on_state_failure", state + `tool "t" {
  description = "x"
  on_state_failure = "shut"
  fake {
    mode = "echo"
  }
}
`, `mcpd.hcl:8:22: Invalid on_state_failure; "shut" is neither "open"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "mcpd.hcl", tc.config)
			f := newFake()
			l := loader.Load([]string{dir}, f.register(), nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
				t.Fatal("loaded")
			}
			var all []string
			for _, d := range l.Diagnostics {
				all = append(all, fmt.Sprintf("%s:%d:%d: %s; %s", lastPart(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail))
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Fatalf("diagnostics:\n%s\nwant %s", strings.Join(all, "\n"), tc.want)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastPart(p string) string { return p[strings.LastIndex(p, "/")+1:] }
