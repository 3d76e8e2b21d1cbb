package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// The ask blocks, end to end: real go-sdk clients (with and without the
// capabilities to answer) in both protocol eras, and a real SQLite
// database whose rows show whether a tool ran.

const askStateKey = "ask-test-key-0123456789"

const askConfig = `
server {
  confirm_destructive = true
  request_state_key   = "` + askStateKey + `"
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

tool "wipe" {
  description = "Destructive, so confirmed under confirm_destructive."
  annotations {
    destructive = true
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO log (tool) VALUES ('wipe')"
  }
}

tool "wipe_unconfirmed" {
  description = "Destructive, but opted out of confirmation."
  confirm     = false
  annotations {
    destructive = true
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO log (tool) VALUES ('wipe_unconfirmed')"
  }
}

tool "restock" {
  description = "Restocks, asking the user why."
  param "copies" {
    type = "integer"
  }
  ask "why" {
    elicit = "Why restock ${args.copies} copies?"
    field "reason" {
      type = "string"
    }
    field "urgency" {
      type    = "string"
      enum    = ["low", "high"]
      default = "low"
    }
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO log (tool, reason, urgency, copies) VALUES ('restock', :reason, :urgency, :copies)"
    params    = { reason = inputs.why.reason, urgency = inputs.why.urgency }
  }
}

tool "two_rounds" {
  description = "Asks a second question that depends on the first answer."
  ask "first" {
    elicit = "Your name?"
    field "name" {
      type = "string"
    }
  }
  ask "second" {
    round  = 2
    elicit = "Which colour, ${inputs.first.name}?"
    field "color" {
      type = "string"
    }
  }
  result {
    content "text" {
      text = "${inputs.first.name} likes ${inputs.second.color}"
    }
  }
}

prompt "briefing" {
  description = "Asks for the topic first."
  ask "topic" {
    elicit = "Which topic?"
    field "topic" {
      type = "string"
    }
  }
  message {
    role = "user"
    text = "Brief me on ${inputs.topic.topic}."
  }
}
`

type askEnv struct {
	srv *serve.Server
	cur *snapshot.Current
	dir string
}

func newAskEnv(t *testing.T, config string) *askEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	createLog(t, dir)
	l := loader.Load([]string{dir}, registry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	return &askEnv{srv: serve.New(cur, serve.Options{}), cur: cur, dir: dir}
}

// createLog creates the database the tools write to.
func createLog(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE log (tool TEXT, reason TEXT, urgency TEXT, copies INTEGER)"); err != nil {
		t.Fatal(err)
	}
}

// rows counts the rows a tool wrote: the proof that its backend ran.
func (e *askEnv) rows(t *testing.T, tool string) int {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM log WHERE tool = ?", tool).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

type askEra struct {
	name    string
	version string
	http    bool
}

var askEras = []askEra{
	{"stdio/2025-11-25", "2025-11-25", false},
	{"stdio/2026-07-28", "2026-07-28", false},
	{"http/2025-11-25", "2025-11-25", true},
	{"http/2026-07-28", "2026-07-28", true},
}

func (e *askEnv) connect(t *testing.T, era askEra, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	var tr mcp.Transport
	if era.http {
		ts := httptest.NewServer(e.srv.HTTPHandler(serve.HTTPOptions{}))
		t.Cleanup(ts.Close)
		tr = &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}
	} else {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := e.srv.SDK().Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		tr = ct
	}
	return connectVersion(t, tr, era.version, opts)
}

func connectVersion(t *testing.T, tr mcp.Transport, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	var so *mcp.ClientSessionOptions
	if version == "2025-11-25" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ask-test", Version: "1"}, opts).Connect(bounded(t), tr, so)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs
}

// elicitor answers every elicitation with the next of its answers (the
// last one repeats) and records the messages it was shown.
type elicitor struct {
	mu       sync.Mutex
	answers  []*mcp.ElicitResult
	messages []string
}

func (el *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	el.messages = append(el.messages, req.Params.Message)
	i := min(len(el.messages), len(el.answers)) - 1
	return el.answers[i], nil
}

func (el *elicitor) asked() []string {
	el.mu.Lock()
	defer el.mu.Unlock()
	return append([]string(nil), el.messages...)
}

func TestAskConfirm(t *testing.T) {
	cases := []struct {
		name     string
		answer   *mcp.ElicitResult // nil: the client cannot elicit
		wantRows int
		wantText string
	}{
		{"accepted", &mcp.ElicitResult{Action: "accept"}, 1, ""},
		{"declined", &mcp.ElicitResult{Action: "decline"}, 0, "The user declined the confirmation (\"Add 2 copies?\")"},
		{"cancelled", &mcp.ElicitResult{Action: "cancel"}, 0, "The user cancelled the confirmation"},
		{"client without elicitation", nil, 0, "did not declare that capability, so it did not run"},
	}
	for _, era := range askEras {
		for _, tc := range cases {
			t.Run(era.name+"/"+tc.name, func(t *testing.T) {
				e := newAskEnv(t, askConfig)
				opts := &mcp.ClientOptions{}
				el := &elicitor{answers: []*mcp.ElicitResult{tc.answer}}
				if tc.answer != nil {
					opts.ElicitationHandler = el.handle
				}
				cs := e.connect(t, era, opts)
				res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"copies": 2}})
				switch {
				case tc.answer == nil && era.version == "2026-07-28":
					// SEP-2575: a request the client lacks the capability
					// for is -32021.
					if rpcCode(err) != mcp.CodeMissingRequiredClientCapabilities {
						t.Fatalf("err = %v, want -32021 (result %v)", err, res)
					}
				case err != nil:
					t.Fatal(err)
				case tc.answer == nil:
					if !res.IsError || !strings.Contains(textOf(res), tc.wantText) {
						t.Fatalf("result = %v %q, want a tool error containing %q", res.IsError, textOf(res), tc.wantText)
					}
				default:
					if res.IsError || !strings.Contains(textOf(res), tc.wantText) {
						t.Fatalf("result = %v %q, want %q", res.IsError, textOf(res), tc.wantText)
					}
					if got := el.asked(); len(got) != 1 || got[0] != "Add 2 copies?" {
						t.Fatalf("asked %q", got)
					}
				}
				if got := e.rows(t, "add"); got != tc.wantRows {
					t.Fatalf("the backend wrote %d rows, want %d", got, tc.wantRows)
				}
			})
		}
	}
}

// The user's answers reach the query as bound parameters, never as SQL.
func TestAskElicitationToSQL(t *testing.T) {
	hostile := `x'); DROP TABLE log; --`
	for _, era := range askEras {
		t.Run(era.name, func(t *testing.T) {
			e := newAskEnv(t, askConfig)
			el := &elicitor{answers: []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"reason": hostile, "urgency": "high"}}}}
			cs := e.connect(t, era, &mcp.ClientOptions{ElicitationHandler: el.handle})
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "restock", Arguments: map[string]any{"copies": 3}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", err, res)
			}
			if got := el.asked(); len(got) != 1 || got[0] != "Why restock 3 copies?" {
				t.Fatalf("asked %q", got)
			}
			db, err := sql.Open("sqlite", filepath.Join(e.dir, "shop.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var reason, urgency string
			var copies int
			if err := db.QueryRow("SELECT reason, urgency, copies FROM log WHERE tool = 'restock'").Scan(&reason, &urgency, &copies); err != nil {
				t.Fatal(err)
			}
			if reason != hostile || urgency != "high" || copies != 3 {
				t.Fatalf("row = %q %q %d", reason, urgency, copies)
			}
		})
	}
}

func TestAskMultiRoundAndPrompt(t *testing.T) {
	for _, era := range askEras {
		t.Run(era.name, func(t *testing.T) {
			e := newAskEnv(t, askConfig)
			handler := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				switch {
				case req.Params.Message == "Your name?":
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}, nil
				case req.Params.Message == "Which colour, Ann?":
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "blue"}}, nil
				case req.Params.Message == "Which topic?":
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"topic": "tides"}}, nil
				}
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			cs := e.connect(t, era, &mcp.ClientOptions{ElicitationHandler: handler})
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "two_rounds"})
			if err != nil || textOf(res) != "Ann likes blue" {
				t.Fatalf("two_rounds: %v %q", err, textOf(res))
			}
			pr, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "briefing"})
			if err != nil || len(pr.Messages) != 1 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Brief me on tides." {
				t.Fatalf("briefing: %v %v", err, pr)
			}
		})
	}
}

func TestConfirmDestructive(t *testing.T) {
	for _, era := range askEras {
		t.Run(era.name, func(t *testing.T) {
			e := newAskEnv(t, askConfig)
			el := &elicitor{answers: []*mcp.ElicitResult{{Action: "accept"}}}
			cs := e.connect(t, era, &mcp.ClientOptions{ElicitationHandler: el.handle})
			for _, name := range []string{"wipe", "wipe_unconfirmed"} {
				if res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: name}); err != nil || res.IsError {
					t.Fatalf("%s: %v %v", name, err, res)
				}
			}
			got := el.asked()
			if len(got) != 1 || !strings.HasPrefix(got[0], `Allow "wipe" to run with {}?`) {
				t.Fatalf("asked %q, want one confirmation, for wipe", got)
			}
			if e.rows(t, "wipe") != 1 || e.rows(t, "wipe_unconfirmed") != 1 {
				t.Fatal("a tool did not run")
			}
		})
	}
}

// rawModern is a 2026-07-28 client that handles input_required results
// itself, to send states of its choosing.
func rawModern(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, "2026-07-28", &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
	})
}

func TestAskRequestState(t *testing.T) {
	e := newAskEnv(t, askConfig)
	ts := httptest.NewServer(e.srv.HTTPHandler(serve.HTTPOptions{}))
	t.Cleanup(ts.Close)
	cs := rawModern(t, ts.URL)
	args := map[string]any{"copies": 2}
	first, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "add", Arguments: args})
	if err != nil || !first.NeedsInput() || first.RequestState == "" {
		t.Fatalf("first call: %v %+v", err, first)
	}
	accept := mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}
	expired, err := requeststate.NewSealer([]byte(askStateKey), time.Minute).WithClock(func() time.Time { return time.Now().Add(-time.Hour) }).
		Seal(requeststate.State{Round: 1, Bind: requeststate.BindCaller("tool", "add", map[string]any{"copies": 2.0}, "", nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, tool, state string
		args              map[string]any
		want              string
	}{
		{"tampered", "add", first.RequestState + "-TAMPERED", args, "not issued by this server or was altered"},
		{"expired", "add", expired, args, "expired"},
		{"replayed on another tool", "wipe", first.RequestState, nil, "belongs to another call"},
		{"replayed with other arguments", "add", first.RequestState, map[string]any{"copies": 50}, "belongs to another call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args, InputResponses: accept, RequestState: tc.state})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (result %+v), want a JSON-RPC error containing %q", err, res, tc.want)
			}
		})
	}
	// An answer without a required key (the SDK's clients check their
	// answers; a raw one may not) is asked again, with a fresh state.
	again, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "restock", Arguments: args,
		InputResponses: mcp.InputResponseMap{"why": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"urgency": "high"}}}})
	if err != nil || !again.NeedsInput() || again.InputRequests["why"] == nil {
		t.Fatalf("incomplete answer: %v %+v, want the question again", err, again)
	}
	if n := e.rows(t, "add") + e.rows(t, "wipe") + e.rows(t, "restock"); n != 0 {
		t.Fatalf("a refused state ran a tool (%d rows)", n)
	}
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "add", Arguments: args, InputResponses: accept, RequestState: first.RequestState})
	if err != nil || res.NeedsInput() || res.IsError || e.rows(t, "add") != 1 {
		t.Fatalf("valid retry: %v %+v", err, res)
	}
	// tools/list never asks.
	if lr, err := cs.ListTools(bounded(t), nil); err != nil || len(lr.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
}

// Replicas sharing request_state_key accept each other's states; a replica
// with another key refuses them. Three real mcpd processes.
func TestAskStateAcrossProcesses(t *testing.T) {
	config := strings.Replace(askConfig, `request_state_key   = "`+askStateKey+`"`, `request_state_key   = env("ASK_TEST_STATE_KEY")`, 1)
	start := func(key string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		createLog(t, dir)
		cmd := mcpdCommand("serve", "-c", dir, "--http", "127.0.0.1:0")
		cmd.Env = append(cmd.Env, "ASK_TEST_STATE_KEY="+key)
		return startHTTP(t, cmd)
	}
	a := start("shared-key-0123456789")
	b := start("shared-key-0123456789")
	c := start("another-key-0123456789")
	first, err := rawModern(t, a).CallTool(bounded(t), &mcp.CallToolParams{Name: "two_rounds"})
	if err != nil || !first.NeedsInput() {
		t.Fatalf("first call: %v %+v", err, first)
	}
	retry := &mcp.CallToolParams{Name: "two_rounds", RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"first": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Bo"}}}}
	res, err := rawModern(t, b).CallTool(bounded(t), retry)
	if err != nil || !res.NeedsInput() {
		t.Fatalf("same key: %v %+v", err, res)
	}
	if p, _ := res.InputRequests["second"].(*mcp.ElicitParams); p == nil || p.Message != "Which colour, Bo?" {
		b, _ := json.Marshal(res.InputRequests)
		t.Fatalf("round 2 on the other replica asked %s", b)
	}
	if _, err := rawModern(t, c).CallTool(bounded(t), retry); err == nil || !strings.Contains(err.Error(), "not issued by this server") {
		t.Fatalf("another key: err = %v, want the state refused", err)
	}
}

// mcpd call has no user to ask: a tool that asks for confirmation does not
// run unless --yes accepts it; a form cannot be answered even then.
func TestCallConfirmation(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": askConfig})
	createLog(t, dir)
	e := &askEnv{dir: dir}
	r := runCLI(t, "call", "-c", dir, "add", "copies=2")
	if r.code != 1 || !strings.Contains(r.stdout, "run it with --yes") || e.rows(t, "add") != 0 {
		t.Fatalf("without --yes: %+v, %d rows", r, e.rows(t, "add"))
	}
	if r = runCLI(t, "call", "-c", dir, "add", "copies=2", "--yes"); r.code != 0 || e.rows(t, "add") != 1 {
		t.Fatalf("with --yes: %+v, %d rows", r, e.rows(t, "add"))
	}
	r = runCLI(t, "call", "-c", dir, "restock", "copies=2", "--yes")
	if r.code != 1 || !strings.Contains(r.stdout, "mcpd call cannot give") || e.rows(t, "restock") != 0 {
		t.Fatalf("a form with --yes: %+v", r)
	}
}
