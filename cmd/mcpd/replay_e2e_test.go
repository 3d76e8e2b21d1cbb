package main

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// One run per confirmation: a 2026-07-28 retry that brings a confirmed
// requestState runs a tool that changes something once; the same state
// sent again is refused, on this replica and, with a state block, on any
// other. Real go-sdk clients over HTTP, a real SQLite database whose rows
// count the runs, and a real Redis shared by two servers.

// replayConfig is a tool that asks for confirmation and writes, and one
// that does the same but is declared idempotent (its runs are counted to
// show that the declaration is what lets a state run it again).
func replayConfig(state string) string {
	return `
server {
  request_state_key = "replay-test-key-0123456789"
` + state + `
}

database "shop" {
  driver = "sqlite"
  dsn    = "file:shop.db"
}

tool "add" {
  description = "Adds copies after the user confirms."
  confirm     = "Add ${args.copies} copies?"
  param "copies" {
    type = "integer"
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO log (tool, copies) VALUES ('add', :copies)"
  }
}

tool "put" {
  description = "Sets copies after the user confirms; declared idempotent."
  confirm     = "Set ${args.copies} copies?"
  annotations {
    idempotent = true
  }
  param "copies" {
    type = "integer"
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO log (tool, copies) VALUES ('put', :copies)"
  }
}
`
}

var acceptConfirm = mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}

// modernClient is a 2026-07-28 client of e over HTTP that answers
// input_required itself (no automatic retries).
func (e *askEnv) modernClient(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(e.srv.HTTPHandler(serve.HTTPOptions{}))
	t.Cleanup(ts.Close)
	return rawModern(t, ts.URL)
}

// replaysRefused returns what e's /metrics says of the replays refused,
// through the metrics mcpd serve registers.
func (e *askEnv) replaysRefused(t *testing.T) string {
	t.Helper()
	m := telemetry.NewMetricsFor(buildinfo.Read("test", ""))
	watchReplays(m, e.cur)
	ts := httptest.NewServer(m.Handler())
	defer ts.Close()
	_, body := httpGet(t, ts.URL)
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "mcpd_requeststate_replays_refused_total ") {
			return line
		}
	}
	return "(no mcpd_requeststate_replays_refused_total)"
}

// askState makes a first call of tool and returns its requestState.
func askState(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("first call of %s: %v %+v", tool, err, res)
	}
	return res.RequestState
}

// confirmWith retries tool with the confirmation and state; it returns
// the call's error (nil: the tool answered).
func confirmWith(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, state string) error {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tool, Arguments: args, InputResponses: acceptConfirm, RequestState: state})
	if err == nil && (res.IsError || res.NeedsInput()) {
		t.Fatalf("confirmed call of %s: %+v", tool, res)
	}
	return err
}

func TestAskStateRunsOnce(t *testing.T) {
	e := newAskEnv(t, replayConfig(""))
	cs := e.modernClient(t)
	args := map[string]any{"copies": 2}
	state := askState(t, cs, "add", args)
	if err := confirmWith(t, cs, "add", args, state); err != nil {
		t.Fatalf("confirmed call: %v", err)
	}
	for i := range 3 {
		if err := confirmWith(t, cs, "add", args, state); err == nil || !strings.Contains(err.Error(), "already been used") {
			t.Errorf("replay %d: err = %v, want the state refused as used", i+1, err)
		}
	}
	if n := e.rows(t, "add"); n != 1 {
		t.Fatalf("the tool ran %d times for one confirmation, want 1", n)
	}
	if got, want := e.replaysRefused(t), "mcpd_requeststate_replays_refused_total 3"; got != want {
		t.Errorf("metrics: %s, want %s", got, want)
	}
	// Asked again, the user confirms again: a new state, a new run.
	if err := confirmWith(t, cs, "add", args, askState(t, cs, "add", args)); err != nil || e.rows(t, "add") != 2 {
		t.Fatalf("a new confirmation: %v, %d runs; want 2", err, e.rows(t, "add"))
	}
	// A tool declared idempotent may run again with the same state: a
	// retry after a lost response needs no new question.
	state = askState(t, cs, "put", args)
	for range 2 {
		if err := confirmWith(t, cs, "put", args, state); err != nil {
			t.Fatalf("idempotent tool: %v", err)
		}
	}
	if n := e.rows(t, "put"); n != 2 {
		t.Errorf("idempotent tool ran %d times, want 2", n)
	}
	// Neither a new confirmation nor an idempotent rerun is a replay.
	if got, want := e.replaysRefused(t), "mcpd_requeststate_replays_refused_total 3"; got != want {
		t.Errorf("metrics: %s, want %s", got, want)
	}
}

// Two servers (replicas) sharing Redis and request_state_key: a state
// confirmed on one is refused on the other, whichever ran it.
func TestAskStateRunsOnceAcrossReplicas(t *testing.T) {
	url := sharedstatetest.URL(t)
	prefix := sharedstatetest.Prefix(t, url)
	cfg := replayConfig(fmt.Sprintf("  state {\n    redis      = %q\n    key_prefix = %q\n  }\n", url, prefix))
	a, b := newAskEnv(t, cfg), newAskEnv(t, cfg)
	ca, cb := a.modernClient(t), b.modernClient(t)
	runs := func() int { return a.rows(t, "add") + b.rows(t, "add") }
	args := map[string]any{"copies": 3}

	state := askState(t, ca, "add", args)
	if err := confirmWith(t, ca, "add", args, state); err != nil {
		t.Fatalf("confirmed on a: %v", err)
	}
	for _, cs := range []*mcp.ClientSession{cb, ca, cb} {
		if err := confirmWith(t, cs, "add", args, state); err == nil || !strings.Contains(err.Error(), "already been used") {
			t.Errorf("replay: err = %v, want the state refused as used", err)
		}
	}
	if n := runs(); n != 1 {
		t.Fatalf("the tool ran %d times for one confirmation on two replicas, want 1", n)
	}
	// Asked on a, confirmed on b, replayed on a.
	state = askState(t, ca, "add", args)
	if err := confirmWith(t, cb, "add", args, state); err != nil {
		t.Fatalf("confirmed on b: %v", err)
	}
	if err := confirmWith(t, ca, "add", args, state); err == nil || !strings.Contains(err.Error(), "already been used") {
		t.Errorf("replayed on a after b ran it: err = %v, want refused", err)
	}
	if n := runs(); n != 2 {
		t.Fatalf("%d runs for two confirmations, want 2", n)
	}
	// Each replica counts what it refused, by its own Used set or by
	// Redis: a refused the first replay and the last, b the two between.
	for _, r := range []struct {
		name string
		e    *askEnv
	}{{"a", a}, {"b", b}} {
		if got, want := r.e.replaysRefused(t), "mcpd_requeststate_replays_refused_total 2"; got != want {
			t.Errorf("replica %s: %s, want %s", r.name, got, want)
		}
	}
}
