package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askBindConfig has two API keys and a confirmed tool with a caller-bound
// param; TENANT is alice's tenant attribute.
const askBindConfig = `
server {
  request_state_key = "bind-test-key-0123456789"
}

auth {
  api_key "alice" {
    value      = "alice-key"
    attributes = { tenant = "TENANT" }
  }
  api_key "bob" {
    value      = "bob-key"
    attributes = { tenant = "t1" }
  }
}

database "shop" {
  driver = "sqlite"
  dsn    = "file:shop.db"
}

tool "add" {
  description = "Adds copies for the caller's tenant after the user confirms."
  confirm     = "Add ${args.copies} copies?"
  param "copies" {
    type = "integer"
  }
  param "tenant" {
    type        = "string"
    from_caller = "claims.tenant"
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO log (tool, reason, copies) VALUES ('add', :tenant, :copies)"
  }
}
`

// A requestState carries the confirmation of one caller: replayed by
// another principal, or by the same one once what is bound from it has
// changed, it is refused and the tool does not run. Real mcpd processes
// with API keys, over HTTP, in the 2026-07-28 era.
func TestAskStateBoundToCaller(t *testing.T) {
	start := func(tenant string) (endpoint, dir string) {
		dir = t.TempDir()
		cfg := strings.Replace(askBindConfig, "TENANT", tenant, 1)
		if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		createLog(t, dir)
		return startHTTP(t, mcpdCommand("serve", "-c", dir, "--http", "127.0.0.1:0")), dir
	}
	first, dir1 := start("t1")
	moved, dir2 := start("t2") // alice's tenant attribute changed
	as := func(endpoint, key string) *mcp.ClientSession {
		hc := &http.Client{Transport: keyTransport{"Authorization", "Bearer " + key, http.DefaultTransport}}
		return connectVersion(t, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: hc}, "2026-07-28", &mcp.ClientOptions{
			MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
		})
	}
	rows := func() int {
		return (&askEnv{dir: dir1}).rows(t, "add") + (&askEnv{dir: dir2}).rows(t, "add")
	}
	args := map[string]any{"copies": 2}
	alice := as(first, "alice-key")
	asked, err := alice.CallTool(bounded(t), &mcp.CallToolParams{Name: "add", Arguments: args})
	if err != nil || !asked.NeedsInput() || asked.RequestState == "" {
		t.Fatalf("first call: %v %+v", err, asked)
	}
	retry := &mcp.CallToolParams{Name: "add", Arguments: args, RequestState: asked.RequestState,
		InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}}
	for _, tc := range []struct {
		name string
		cs   *mcp.ClientSession
	}{
		{"another principal", as(first, "bob-key")},
		{"the same principal with another caller-bound value", as(moved, "alice-key")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.cs.CallTool(bounded(t), retry)
			if err == nil || !strings.Contains(err.Error(), "belongs to another call") {
				t.Fatalf("err = %v (result %+v), want the state refused", err, res)
			}
			if n := rows(); n != 0 {
				t.Fatalf("the tool ran on a replayed state (%d rows)", n)
			}
		})
	}
	res, err := alice.CallTool(bounded(t), retry)
	if err != nil || res.NeedsInput() || res.IsError || rows() != 1 {
		t.Fatalf("the caller's own retry: %v %+v, %d rows", err, res, rows())
	}
}

// A form answer that does not fit the form is asked again in a 2025-11-25
// session, as it is on 2026-07-28 (TestAskRequestState): the go-sdk client
// refuses to send its user's invalid answer, and the server asks anew.
func TestAskInvalidAnswerAskedAgain(t *testing.T) {
	for _, era := range askEras {
		if era.version != "2025-11-25" {
			continue
		}
		t.Run(era.name, func(t *testing.T) {
			e := newAskEnv(t, askConfig)
			el := &elicitor{answers: []*mcp.ElicitResult{
				{Action: "accept", Content: map[string]any{"reason": "low stock", "urgency": "urgent"}}, // not an enum value
				{Action: "accept", Content: map[string]any{"reason": "low stock", "urgency": "high"}},
			}}
			cs := e.connect(t, era, &mcp.ClientOptions{ElicitationHandler: el.handle})
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "restock", Arguments: map[string]any{"copies": 3}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %q", err, textOf(res))
			}
			if got := el.asked(); len(got) != 2 {
				t.Fatalf("asked %q, want the question twice", got)
			}
			if n := e.rows(t, "restock"); n != 1 {
				t.Fatalf("the backend wrote %d rows, want 1", n)
			}
		})
	}
}
