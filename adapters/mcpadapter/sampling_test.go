package mcpadapter

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// samplingClient answers every sampling question it is asked.
type samplingClient struct{ asked []mcp.InputRequest }

func (s *samplingClient) Capabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}
}

func (s *samplingClient) Ask(_ context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	s.asked = append(s.asked, req)
	return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
}

// A 2026-07-28 upstream's sampling question, as the SDK decodes it from an
// input_required result (*mcp.CreateMessageWithToolsParams), is relayed to
// the client as a plain sampling request; one with tools is refused.
// Found by the conformance suite through the gateway (tools-call-sampling).
func TestAnswerInputsSampling(t *testing.T) {
	decode := func(t *testing.T, raw string) mcp.InputRequestMap {
		t.Helper()
		var m mcp.InputRequestMap
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	u := testUpstream("up")
	c := &samplingClient{}
	ctx, forget := u.relay.withRelay(context.Background(), &relayCall{client: c})
	defer forget()

	reqs := decode(t, `{"llm":{"method":"sampling/createMessage","params":{"maxTokens":100,"messages":[{"role":"user","content":{"type":"text","text":"Say hello."}}]}}}`)
	if _, ok := reqs["llm"].(*mcp.CreateMessageWithToolsParams); !ok {
		t.Fatalf("the SDK decoded %T; the test's premise changed", reqs["llm"])
	}
	out, err := u.relay.answerInputs(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := out["llm"].(*mcp.CreateMessageResult); !ok || r.Model != "m" {
		t.Fatalf("answer %#v", out["llm"])
	}
	if len(c.asked) != 1 {
		t.Fatalf("asked %d times", len(c.asked))
	}
	p, ok := c.asked[0].(*mcp.CreateMessageParams)
	if !ok || p.MaxTokens != 100 || len(p.Messages) != 1 || p.Messages[0].Role != "user" {
		t.Fatalf("asked %#v", c.asked[0])
	}
	if tc, ok := p.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Say hello." {
		t.Fatalf("message content %#v", p.Messages[0].Content)
	}

	withTools := decode(t, `{"llm":{"method":"sampling/createMessage","params":{"maxTokens":10,"messages":[],"tools":[{"name":"x","inputSchema":{"type":"object"}}]}}}`)
	if _, err := u.relay.answerInputs(ctx, withTools); err == nil || !strings.Contains(err.Error(), "with tools") {
		t.Fatalf("sampling with tools: %v", err)
	}
	if len(c.asked) != 1 {
		t.Fatalf("the client was asked a question with tools")
	}
}
