package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter/mcptest"
	"github.com/mcpd/mcpd/internal/wait"
)

// Requests of an upstream to its client (elicitation, sampling) are relayed
// to the mcpd client that made the call when it declared the capability
// (2025-11-25), and refused as a tool error otherwise; a 2026-07-28 client
// is asked by input_required rounds while mcpd holds the upstream's call.

const relayConfig = `
tool "ask_user" {
  description = "Ask the user for their details (the upstream elicits)."
  mcp {
    server = "everything"
    tool   = "trigger-elicitation-request"
  }
}

tool "ask_user_briefly" {
  description = "As ask_user, with a timeout the user misses."
  timeout     = "2s"
  mcp {
    server = "everything"
    tool   = "trigger-elicitation-request"
  }
}

tool "echo" {
  description = "Echoes a message (the upstream asks nothing)."
  param "message" {
    type = "string"
  }
  mcp {
    server = "everything"
  }
}

tool "sample" {
  description = "Ask the client's model (the upstream samples)."
  param "prompt" {
    type = "string"
  }
  mcp {
    server = "everything"
    tool   = "trigger-sampling-request"
  }
}
`

// relayClient records what the upstream asked it through mcpd.
type relayClient struct {
	mu       sync.Mutex
	elicited []string
	sampled  []string
}

func (r *relayClient) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.elicited = append(r.elicited, req.Params.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
}

func (r *relayClient) sample(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var text string
	for _, m := range req.Params.Messages {
		if tc, ok := m.Content.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	r.sampled = append(r.sampled, text)
	return &mcp.CreateMessageResult{Model: "relay-test-model", Role: "assistant", Content: &mcp.TextContent{Text: "the sampled answer 7311"}}, nil
}

func (r *relayClient) counts() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.elicited), len(r.sampled)
}

func TestGatewayRelayEverything(t *testing.T) {
	node, script := mcptest.Everything(t)
	dir := configDir(t, map[string]string{"tools.hcl": stdioServer(node, script) + relayConfig})
	connect := func(t *testing.T, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
		cmd := mcpdCommand("serve", "--stdio", "-c", dir)
		logs := &lockedBuffer{}
		cmd.Stderr = logs
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("mcpd log:\n%s", logs.String())
			}
		})
		return connectVersion(t, &mcp.CommandTransport{Command: cmd}, version, opts)
	}

	t.Run("2025-11-25 relayed", func(t *testing.T) {
		rc := &relayClient{}
		cs := connect(t, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: rc.elicit, CreateMessageHandler: rc.sample})
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("ask_user: %v %q", err, textOf(res))
		}
		// The answer reached the upstream, which echoes what it got.
		if text := textOf(res); !strings.Contains(text, "Name: Ada Lovelace") || !strings.Contains(text, "Agreed to terms: true") {
			t.Errorf("ask_user result: %q", text)
		}
		res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "what is 7311?"}})
		if err != nil || res.IsError {
			t.Fatalf("sample: %v %q", err, textOf(res))
		}
		if text := textOf(res); !strings.Contains(text, "the sampled answer 7311") || !strings.Contains(text, "relay-test-model") {
			t.Errorf("sample result: %q", text)
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if len(rc.elicited) != 1 || !strings.Contains(rc.elicited[0], "Please provide inputs") {
			t.Errorf("elicitations the client saw: %q", rc.elicited)
		}
		if len(rc.sampled) != 1 || !strings.Contains(rc.sampled[0], "what is 7311?") {
			t.Errorf("sampling requests the client saw: %q", rc.sampled)
		}
	})

	t.Run("2025-11-25 without the capability", func(t *testing.T) {
		cs := connect(t, "2025-11-25", nil)
		for _, tc := range []struct{ tool, capability string }{
			{"ask_user", "elicitation"},
			{"sample", "sampling"},
		} {
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"prompt": "x"}})
			if tc.tool == "ask_user" {
				res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			}
			want := fmt.Sprintf("did not declare the %s capability", tc.capability)
			if err != nil || !res.IsError || !strings.Contains(textOf(res), want) {
				t.Errorf("%s: %v, isError %v, %q; want a tool error with %q", tc.tool, err, res != nil && res.IsError, textOf(res), want)
			}
		}
	})

	t.Run("2025-11-25 timeout ends the question", func(t *testing.T) {
		ended := make(chan error, 1)
		cs := connect(t, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			<-ctx.Done() // the user never answers
			ended <- ctx.Err()
			return nil, ctx.Err()
		}})
		// The 2 s count from the call, connecting to the upstream included:
		// the upstream is connected first, so that its question is asked
		// within them however long node takes to start.
		if res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "up?"}}); err != nil || res.IsError {
			t.Fatalf("echo: %v %q", err, textOf(res))
		}
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_user_briefly", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "timed out") {
			t.Errorf("ask_user_briefly: %v %q", err, textOf(res))
		}
		select {
		case <-ended: // mcpd cancelled the question it relayed
		case <-bounded(t).Done():
			t.Error("the relayed elicitation was not cancelled after the call timed out")
		}
	})

	t.Run("2026-07-28 asked by input_required rounds", func(t *testing.T) {
		// mcpd holds the upstream's call while the client answers; the
		// SDK's client answers input_required with its handlers.
		rc := &relayClient{}
		cs := connect(t, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: rc.elicit, CreateMessageHandler: rc.sample})
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "Name: Ada Lovelace") {
			t.Errorf("ask_user: %v %q", err, textOf(res))
		}
		res, err = cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "what is 7311?"}})
		if err != nil || res.IsError || !strings.Contains(textOf(res), "the sampled answer 7311") {
			t.Errorf("sample: %v %q", err, textOf(res))
		}
		if e, s := rc.counts(); e != 1 || s != 1 {
			t.Errorf("the client was asked %d, %d times", e, s)
		}
	})

	t.Run("2026-07-28 without the capability", func(t *testing.T) {
		cs := connect(t, "2026-07-28", nil)
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "ask_user", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "did not declare the elicitation capability") {
			t.Errorf("ask_user: %v %q", err, textOf(res))
		}
	})
}

// mcpd itself as the upstream, on both eras: its ask blocks put an
// elicitation and a roots/list to its client, the gateway, which relays
// them to its own client.
func TestGatewayRelayMCPDUpstream(t *testing.T) {
	upDir := configDir(t, map[string]string{"tools.hcl": `
tool "greet" {
  description = "Greets the user by name, with the client's roots."
  ask "user_name" {
    elicit = "What is your name?"
    field "name" { type = "string" }
  }
  ask "client_roots" { roots = true }
  result {
    content "text" {
      text = "Hello, ${inputs.user_name.name}! Roots: ${join(", ", [for r in inputs.client_roots : r.uri])}"
    }
  }
}
`})
	upURL := startHTTP(t, mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", upDir))
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("upstream "+era, func(t *testing.T) {
			gwDir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
mcp_server "up" {
  url              = %q
  protocol_version = %q
  expose {
    prefix = "up_"
  }
}
`, upURL, era)})
			gwURL := startHTTP(t, mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", gwDir))

			var mu sync.Mutex
			var asked []string
			client := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
			}}
			cs := connectVersionRoots(t, gwURL, client, &mcp.Root{URI: "file:///work/project", Name: "project"})
			wait.Until(t, "the upstream's tools", func() bool { return toolNames(t, cs)["up_greet"] })
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_greet", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Fatalf("up_greet: %v %q", err, textOf(res))
			}
			if text := textOf(res); text != "Hello, Grace! Roots: file:///work/project" {
				t.Errorf("up_greet: %q", text)
			}
			mu.Lock()
			if len(asked) != 1 || asked[0] != "What is your name?" {
				t.Errorf("the client was asked %q", asked)
			}
			mu.Unlock()

			// A client without the capabilities: its capabilities go with
			// the call, so the upstream's tool refuses to run (it would have
			// to ask), as a tool error saying why.
			bare := connectVersion(t, &mcp.StreamableClientTransport{Endpoint: gwURL, MaxRetries: -1}, "2025-11-25", &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
			res, err = bare.CallTool(bounded(t), &mcp.CallToolParams{Name: "up_greet", Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(textOf(res), "did not declare") {
				t.Errorf("up_greet without capabilities: %v %q", err, textOf(res))
			}
		})
	}
}

// connectVersionRoots connects a 2025-11-25 HTTP client that has roots.
func connectVersionRoots(t *testing.T, url string, opts *mcp.ClientOptions, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "relay-test", Version: "1"}, opts)
	c.AddRoots(roots...)
	cs, err := c.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
