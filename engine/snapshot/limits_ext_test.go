// Timeouts and caller bounds through Tool.Call: where a timeout comes from
// (tool, server, client) is decided when snapshot compiles the tool;
// engine/limits tests admission directly.

package snapshot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/principal"
)

// The timeout a call gets: the tool's, else the server's default_timeout,
// else max_timeout; the client's own cancellation is not reported as a
// timeout.
func TestToolTimeoutSources(t *testing.T) {
	blocker := func(extra string) string {
		return "tool \"b\" {\n  description = \"blocks\"\n" + extra + "  fake {\n    mode = \"block\"\n  }\n}\n"
	}
	tests := []struct {
		name, config, want string
	}{
		{"tool timeout", blocker("  timeout = \"50ms\"\n"), "tool b timed out after 50ms; narrow the request"},
		{"server default", "server {\n  default_timeout = \"60ms\"\n}\n" + blocker(""), "tool b timed out after 60ms"},
		{"cap as default", "server {\n  max_timeout = \"70ms\"\n}\n" + blocker(""), "tool b timed out after 70ms"},
		{"tool under the cap", "server {\n  max_timeout = \"1m\"\n  default_timeout = \"30s\"\n}\n" + blocker("  timeout = \"40ms\"\n"), "tool b timed out after 40ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			s, _ := build(t, f.register(), nil, map[string]string{"tools.hcl": tc.config})
			// A bound so that a missing timeout fails instead of hanging.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res := call(tool(t, s, "b"), ctx, nil, nil)
			if got := render(res); !res.IsError || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want an error with %q", got, tc.want)
			}
		})
	}
	t.Run("client cancels", func(t *testing.T) {
		f := newFake()
		s, _ := build(t, f.register(), nil, map[string]string{"tools.hcl": blocker("  timeout = \"10s\"\n")})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		res := call(tool(t, s, "b"), ctx, nil, nil)
		if got := render(res); !res.IsError || strings.Contains(got, "timed out") || !strings.Contains(got, "cancelled") {
			t.Errorf("got %q, want a cancellation", got)
		}
	})
}

// A caller-bound integer param takes a numeric claim as an integer, and the
// local user (no principal in ctx) is refused.
func TestCallerBoundInteger(t *testing.T) {
	f := newFake()
	s, _ := build(t, f.register(), nil, map[string]string{"tools.hcl": `
tool "whoami" {
  description = "Echoes."
  param "uid" {
    type        = "integer"
    minimum     = 1
    from_caller = "claims.user.id"
  }
  param "who" {
    type        = "string"
    from_caller = "name"
  }
  fake {
    mode = "echo"
  }
}
`})
	tl := tool(t, s, "whoami")
	p := &principal.Principal{Name: "ann", Method: "oauth", Claims: map[string]any{"user": map[string]any{"id": float64(42)}}}
	res := call(tl, principal.NewContext(context.Background(), p), nil, nil)
	echo, _ := res.StructuredContent.(map[string]any)["echo"].(map[string]any)
	if res.IsError || echo["uid"] != int64(42) || echo["who"] != "ann" {
		t.Errorf("got %s %#v", render(res), res.StructuredContent)
	}
	p.Claims = map[string]any{"user": map[string]any{"id": float64(0)}}
	res = call(tl, principal.NewContext(context.Background(), p), nil, nil)
	if got := render(res); !res.IsError || !strings.Contains(got, "claim user.id does not fit param uid") {
		t.Errorf("claim 0: %q", got)
	}
	res = call(tl, context.Background(), nil, nil)
	if got := render(res); !res.IsError || !strings.Contains(got, "needs an authenticated caller with claim user.id") {
		t.Errorf("local user: %q", got)
	}
}
