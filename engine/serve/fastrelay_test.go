package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// relayHandler is the fake's mode "relay": a handler that relays its
// client's requests (as adapters/mcpadapter's does), which answers what it was
// given to ask its client with.
type relayHandler struct{ *fakeHandler }

func (relayHandler) Traits() adapter.Traits {
	return adapter.Traits{ReadsEval: true, RelaysClientRequests: true}
}

func (relayHandler) Call(_ context.Context, req *adapter.Request) (*adapter.Output, error) {
	out := map[string]any{"args": req.Args, "client": req.Client != nil, "rounds": req.Rounds != nil}
	if req.Client != nil {
		caps, err := json.Marshal(req.Client.Capabilities())
		if err != nil {
			return nil, err
		}
		out["caps"] = string(caps)
	}
	return &adapter.Output{Structured: out}, nil
}

// relayConfig has a tool that relays its client's requests, one with an
// ask block of its own besides, and a plain one.
const relayConfig = `
tool "relaying" {
  param "q" {
    type     = "string"
    required = false
  }
  fake {
    mode = "relay"
  }
}
tool "relaying_and_asking" {
  ask "ok" {
    elicit = "Go on?"
    field "go" {
      type = "boolean"
    }
  }
  fake {
    mode = "relay"
  }
}
tool "plain" {
  fake {
    mode = "echo"
  }
}
`

// TestLegacyFastPathRelaying checks which calls of a tool that relays
// its client's requests the 2025-11-25 fast path takes (fastrelay.go):
// those of a client that declared nothing it could be asked, and not those
// of a client that can be asked, nor those of a tool with an ask block.
// The answers are the SDK's on both paths.
func TestLegacyFastPathRelaying(t *testing.T) {
	cur := newEnvConfig(t, relayConfig).cur
	for _, tc := range []struct {
		name, caps string
		tool       string
		fast       bool
	}{
		{"no capabilities", `{}`, "relaying", true},
		{"experimental only", `{"experimental":{"x":{}}}`, "relaying", true},
		{"elicitation", `{"elicitation":{}}`, "relaying", false},
		{"sampling", `{"sampling":{}}`, "relaying", false},
		{"roots", `{"roots":{}}`, "relaying", false},
		{"roots listChanged", `{"roots":{"listChanged":true}}`, "relaying", false},
		{"an ask block", `{}`, "relaying_and_asking", false},
		{"plain tool, elicitation", `{"elicitation":{}}`, "plain", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &legacyPair{diffPair: newDiffPair(t, cur, true)}
			fast := p.fast
			p.fastSID = openLegacyWith(t, p.fast, p.token, tc.caps)
			p.sdkSID = openLegacyWith(t, p.sdk, p.token, tc.caps)
			wait.Until(t, "the session is ready for the fast path", func() bool { return serve.LegacyReady(fast, p.fastSID) })
			p.takeEvents()
			served := func() int {
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.served["legacy tools/call"]
			}
			before := served()
			p.compare(t, wireRequest{name: "call", header: legacyHeader(), body: legacyCall("3", tc.tool, `{"q":"x"}`)})
			if got := served() > before; got != tc.fast {
				t.Errorf("served on the fast path: %v, want %v", got, tc.fast)
			}
		})
	}
}

// openLegacyWith is openLegacy for a client declaring caps.
func openLegacyWith(t testing.TB, h http.Handler, token, caps string) string {
	t.Helper()
	hdr := legacyHeader()
	hdr.Del("Mcp-Session-Id")
	hdr.Del("Mcp-Protocol-Version")
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	a := serveOnce(h, wireRequest{header: hdr, body: `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + legacyVersion + `","capabilities":` + caps + `,"clientInfo":{"name":"diff","version":"1"}}}`})
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %v %s", a.status, a.header, a.body)
	}
	hdr.Set("Mcp-Session-Id", sid)
	hdr.Set("Mcp-Protocol-Version", legacyVersion)
	if a := serveOnce(h, wireRequest{header: hdr, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); a.status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %s", a.status, a.body)
	}
	return sid
}
