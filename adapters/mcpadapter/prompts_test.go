package mcpadapter_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's prompt that asks its client for input is relayed as a
// tool call's questions are: to a 2026-07-28 client of the gateway by
// input_required rounds, to a 2025-11-25 client within its prompts/get.
// Real parts only: mcpd serves the prompt (with an ask block) and is
// spoken to by the gateway on either protocol: on 2026-07-28 it answers
// input_required, on 2025-11-25 it elicits while the get waits.

const upstreamPrompt = `
prompt "brief" {
  description = "A brief; asks for its topic first."
  argument "audience" { required = true }
  ask "topic" {
    elicit = "What is the brief about?"
    field "topic" { type = "string" }
  }
  message {
    role = "user"
    text = "Write a brief about ${inputs.topic.topic} for ${args.audience}."
  }
}
`

// promptGateway exposes the prompts of the mcpd at url three times: m_
// on 2026-07-28, l_ on 2025-11-25, and b_ on 2025-11-25 held for a short
// answer_timeout only.
func promptGateway(url string) string {
	return fmt.Sprintf(`
server {
  request_state_key = "0123456789abcdef0123456789abcdef"
}

mcp_server "up" {
  url              = %[1]q
  protocol_version = "2026-07-28"
  expose {
    prefix  = "m_"
    prompts = true
  }
}

mcp_server "old" {
  url              = %[1]q
  protocol_version = "2025-11-25"
  expose {
    prefix  = "l_"
    prompts = true
  }
}

mcp_server "old_brief" {
  url              = %[1]q
  protocol_version = "2025-11-25"
  answer_timeout   = "300ms"
  expose {
    prefix  = "b_"
    prompts = true
  }
}
`, url)
}

// listed waits until the gateway at url serves the prompts names.
func listed(t *testing.T, url string, names ...string) {
	t.Helper()
	cs := connect(t, url, modern, nil, false)
	ctx := bounded(t)
	for {
		res, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		var got []string
		for _, p := range res.Prompts {
			got = append(got, p.Name)
		}
		missing := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(got, n) })
		if len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway lists %q, not %q", got, missing)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func promptText(res *mcp.GetPromptResult) string {
	if res == nil || len(res.Messages) != 1 {
		return fmt.Sprintf("%#v", res)
	}
	if tc, ok := res.Messages[0].Content.(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%#v", res.Messages[0].Content)
}

func TestPromptAsksThroughGateway(t *testing.T) {
	gw := serveConfig(t, promptGateway(serveConfig(t, upstreamPrompt)))
	listed(t, gw, "m_brief", "l_brief", "b_brief")
	args := map[string]string{"audience": "engineers"}
	const want = "Write a brief about Go for engineers."

	// Every client era with every upstream era: the question reaches the
	// client (by rounds, or within the get), and its answer the upstream.
	for _, tc := range []struct {
		client, prompt string
	}{
		{modern, "m_brief"}, // the upstream's input_required, as mcpd's own
		{modern, "l_brief"}, // the upstream's get held until the retry
		{legacy, "m_brief"}, // the upstream's input_required, asked within the get
		{legacy, "l_brief"}, // the upstream's request, relayed within the get
	} {
		t.Run(tc.client+" client, "+tc.prompt, func(t *testing.T) {
			a := &answering{reply: accept(map[string]any{"topic": "Go"})}
			cs := connect(t, gw, tc.client, &mcp.ClientOptions{ElicitationHandler: a.elicit}, false)
			res, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: tc.prompt, Arguments: args})
			if err != nil || promptText(res) != want {
				t.Fatalf("prompts/get %s: %v %s", tc.prompt, err, promptText(res))
			}
			if q := a.questions(); len(q) != 1 || q[0] != "What is the brief about?" {
				t.Errorf("the client was asked %q", q)
			}
		})
	}

	// A client that did not declare elicitation is refused with the
	// protocol's -32021, in either era, as by mcpd's own prompts: its
	// capabilities go to the upstream with the get, which refuses to ask.
	for _, tc := range []struct{ client, prompt string }{
		{modern, "m_brief"}, {modern, "l_brief"}, {legacy, "m_brief"}, {legacy, "l_brief"},
	} {
		t.Run(tc.client+" client without elicitation, "+tc.prompt, func(t *testing.T) {
			cs := connect(t, gw, tc.client, nil, false)
			res, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: tc.prompt, Arguments: args})
			if rpcCode(err) != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(err.Error(), "did not declare") {
				t.Fatalf("prompts/get %s: %v (code %d) %s, want -32021", tc.prompt, err, rpcCode(err), promptText(res))
			}
			if je := (*jsonrpc.Error)(nil); errors.As(err, &je) && !strings.Contains(string(je.Data), `"elicitation"`) {
				t.Errorf("-32021 data %s does not name elicitation", je.Data)
			}
		})
	}
}

// A 2026-07-28 client's retry is bound as for a tool: to the prompt, its
// arguments and the caller, signed, and (for a held get) to the instance
// that holds it, for answer_timeout.
func TestPromptRoundsBound(t *testing.T) {
	gw := serveConfig(t, promptGateway(serveConfig(t, upstreamPrompt)))
	listed(t, gw, "m_brief", "l_brief", "b_brief")
	args := map[string]string{"audience": "engineers"}
	answer := func(key, topic string) mcp.InputResponseMap {
		return mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"topic": topic}}}
	}

	for _, tc := range []struct {
		prompt, key string // key: of the question, the upstream's ask (2026-07-28) or the held request's
	}{
		{"m_brief", "topic"},
		{"l_brief", "upstream"},
	} {
		t.Run(tc.prompt, func(t *testing.T) {
			cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
			ctx := bounded(t)
			res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.prompt, Arguments: args})
			if err != nil || !res.NeedsInput() {
				t.Fatalf("prompts/get: %v %s, want input_required", err, promptText(res))
			}
			if q, ok := res.InputRequests[tc.key].(*mcp.ElicitParams); !ok || len(res.InputRequests) != 1 || q.Message != "What is the brief about?" {
				t.Fatalf("input requests: %#v", res.InputRequests)
			}
			state := res.RequestState
			tampered := "x" + state[1:]
			if state[0] == 'x' {
				tampered = "y" + state[1:]
			}
			for _, bad := range []struct {
				name string
				args map[string]string
				st   string
				want string
			}{
				{"other arguments", map[string]string{"audience": "managers"}, state, "another call"},
				{"tampered", args, tampered, "requestState"},
				{"the upstream's own, bare", args, "bare-upstream-state", "requestState"},
			} {
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.prompt, Arguments: bad.args, InputResponses: answer(tc.key, "Rust"), RequestState: bad.st})
				if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), bad.want) {
					t.Errorf("%s: %v, want invalid params with %q", bad.name, err, bad.want)
				}
			}
			res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: tc.prompt, Arguments: args, InputResponses: answer(tc.key, "Go"), RequestState: state})
			if err != nil || promptText(res) != "Write a brief about Go for engineers." {
				t.Fatalf("retry: %v %s", err, promptText(res))
			}
		})
	}

	t.Run("held get expired", func(t *testing.T) {
		cs := connect(t, gw, modern, &mcp.ClientOptions{ElicitationHandler: (&answering{}).elicit}, true)
		res, err := cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "b_brief", Arguments: args})
		if err != nil || !res.NeedsInput() {
			t.Fatalf("prompts/get: %v, want input_required", err)
		}
		// Past answer_timeout (300ms): the client sees nothing when the
		// hold expires, and a retry before would take the hold.
		time.Sleep(500 * time.Millisecond)
		_, err = cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "b_brief", Arguments: args, InputResponses: answer("upstream", "Go"), RequestState: res.RequestState})
		if want := "upstream old_brief's prompt brief is no longer waiting for this answer"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "get the prompt again") {
			t.Errorf("late retry: %v, want %q", err, want)
		}
	})
}
