package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// The real binary with a state block: /readyz shows the shared state and
// stays 200 while Redis is down (fail-open tools keep working on local
// limits, fail-closed ones answer a tool error), /metrics follows it, the
// log says so once, and everything is back when Redis is.
func TestSharedStateOps(t *testing.T) {
	srv := sharedstatetest.NewServer(t)
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
server {
  name = "ops-state"
  state {
    redis   = %q
    timeout = "300ms"
  }
}

tool "open" {
  description = "Fails open."
  rate_limit {
    per_caller = "100/s"
  }
  result {
    content "text" {
      text = "ok"
    }
  }
}

tool "closed" {
  description = "Fails closed."
  on_state_failure = "closed"
  rate_limit {
    per_caller = "100/s"
  }
  result {
    content "text" {
      text = "ok"
    }
  }
}
`, srv.URL())})
	s := startOps(t, dir)
	ctx := bounded(t)
	cs := connectHTTP(t, s.endpoint, "2025-11-25", nil)
	callText := func(name string) (string, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	type readyz struct {
		Status string
		State  *struct {
			Up        bool
			Error     string
			Fallbacks uint64
			Refusals  uint64
		}
	}
	ready := func() (int, readyz) {
		code, body := httpGet(t, s.base+"/readyz")
		var r readyz
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("/readyz: %v: %s", err, body)
		}
		return code, r
	}
	if code, r := ready(); code != 200 || r.State == nil || !r.State.Up {
		t.Fatalf("/readyz with Redis up: %d %+v", code, r.State)
	}
	if text, isErr := callText("closed"); isErr {
		t.Fatalf("closed with Redis up: %s", text)
	}
	srv.Kill()
	wait.Until(t, "/readyz shows Redis down", func() bool {
		callText("open")
		_, r := ready()
		return r.State != nil && !r.State.Up
	})
	if text, isErr := callText("open"); isErr {
		t.Errorf("fail-open tool with Redis down: %s", text)
	}
	if text, isErr := callText("closed"); !isErr || !strings.Contains(text, "the shared state (Redis) does not answer") {
		t.Errorf("fail-closed tool with Redis down: %v %s", isErr, text)
	}
	code, r := ready()
	if code != 200 || r.Status != "ok" || r.State.Error == "" || r.State.Fallbacks == 0 || r.State.Refusals == 0 {
		t.Errorf("/readyz with Redis down: %d %+v %+v, want 200 with the error and counts", code, r, r.State)
	}
	_, scrape := httpGet(t, s.base+"/metrics")
	if v, ok := metricValue(scrape, "mcpd_shared_state_up"); !ok || v != "0" {
		t.Errorf("mcpd_shared_state_up = %q with Redis down", v)
	}
	if !strings.Contains(s.logs.String(), "shared state down") {
		t.Errorf("no log line about the shared state:\n%s", s.logs.String())
	}
	srv.Start()
	wait.Until(t, "Redis back, /readyz shows it up", func() bool { _, r := ready(); return r.State.Up })
	if text, isErr := callText("closed"); isErr {
		t.Errorf("closed after recovery: %s", text)
	}
	_, scrape = httpGet(t, s.base+"/metrics")
	if v, _ := metricValue(scrape, "mcpd_shared_state_up"); v != "1" {
		t.Errorf("mcpd_shared_state_up = %q after recovery", v)
	}
}
