package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// askingPrompts is a test adapter whose backend block `asking "name" {}`
// contributes one prompt, up_brief, whose get is get: the seam through
// which an MCP upstream's prompts that ask for input reach the engine.
type askingPrompts struct {
	get func(ctx context.Context, req *adapter.PromptRequest) (*adapter.PromptOutput, error)
}

func (a *askingPrompts) BackendBlock() string { return "asking" }
func (a *askingPrompts) CompileTool(*adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	return nil, nil
}
func (a *askingPrompts) DecodeBackend(*adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	return a, nil
}
func (a *askingPrompts) Fingerprint() string            { return "asking" }
func (a *askingPrompts) Open() (adapter.Backend, error) { return a, nil }
func (a *askingPrompts) Close() error                   { return nil }
func (a *askingPrompts) ContributedPrompts(adapter.Backend) []adapter.ContributedPrompt {
	return []adapter.ContributedPrompt{{Def: &mcp.Prompt{Name: "up_brief"}, Get: a.get}}
}

var topicQuestion = mcp.InputRequestMap{"topic": &mcp.ElicitParams{Message: "Topic?", RequestedSchema: map[string]any{"type": "object"}}}

// brief asks for a topic (keeping "asked" as its state), and renders the
// brief once it has the answer: by the retry's Rounds, or from Client.
func brief(_ context.Context, req *adapter.PromptRequest) (*adapter.PromptOutput, error) {
	var answer mcp.InputResponse
	switch {
	case req.Client != nil:
		var err error
		if answer, err = req.Client.Ask(context.Background(), topicQuestion["topic"]); err != nil {
			return nil, err
		}
	case req.Rounds != nil && req.Rounds.State == "asked":
		answer = req.Rounds.Responses["topic"]
	default:
		return &adapter.PromptOutput{InputRequired: &adapter.InputRequired{Requests: topicQuestion, State: "asked"}}, nil
	}
	r, ok := answer.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("no answer: %#v", answer)
	}
	return &adapter.PromptOutput{Result: &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("a brief about %v for %s", r.Content["topic"], req.Args["audience"])}},
	}}}, nil
}

// A contributed prompt's backend asks the client as a tool's adapter
// does: within the get for a client with an Answerer, by input_required
// rounds otherwise, with the engine's requestState bound to the prompt,
// its arguments and the caller; a question the client cannot answer is
// the protocol's MissingCapabilityError.
func TestContributedPromptAsks(t *testing.T) {
	sealer := requeststate.NewSealer([]byte("0123456789abcdef0123456789abcdef"), time.Minute)
	elicit := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	ada := &principal.Principal{Name: "ada", Method: "api_key"}
	args := map[string]string{"audience": "engineers"}
	accept := func(topic string) mcp.InputResponseMap {
		return mcp.InputResponseMap{"topic": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"topic": topic}}}
	}
	answerer := ask.AnswerFunc(func(_ context.Context, q mcp.InputRequestMap) (mcp.InputResponseMap, error) {
		out := mcp.InputResponseMap{}
		for k := range q {
			out[k] = accept("Go")["topic"]
		}
		return out, nil
	})
	get := func(t *testing.T, backend func(context.Context, *adapter.PromptRequest) (*adapter.PromptOutput, error), req *snapshot.GetRequest) (*mcp.GetPromptResult, error) {
		reg := adapter.NewRegistry()
		reg.Register("asking_tool", &askingPrompts{get: backend})
		s := mustBuild(t, reg, nil, map[string]string{"tools.hcl": `asking "up" {}`})
		p, ok := s.PromptFor("up_brief", req.Caller)
		if !ok {
			t.Fatal("up_brief is not served")
		}
		return p.Get(context.Background(), req)
	}
	// first is the state of a first get by rounds, as ada.
	first, err := get(t, brief, &snapshot.GetRequest{Args: args, Caller: ada, Answers: ask.Answers{Caps: elicit, Sealer: sealer}})
	if err != nil || first.InputRequests["topic"] == nil || first.RequestState == "" || first.RequestState == "asked" {
		t.Fatalf("first get: %v %+v, want input_required with a sealed state", err, first)
	}

	for _, tc := range []struct {
		name    string
		backend func(context.Context, *adapter.PromptRequest) (*adapter.PromptOutput, error)
		req     snapshot.GetRequest
		brief   string // the brief rendered, or
		err     string // a substring of the error
		// typed: the error is a *StateError ("state") or a
		// *MissingCapabilityError naming elicitation ("capability").
		typed string
	}{
		{name: "retry with the answer", req: snapshot.GetRequest{Args: args, Caller: ada,
			Answers: ask.Answers{Caps: elicit, Sealer: sealer, Responses: accept("Go"), State: first.RequestState}},
			brief: "a brief about Go for engineers"},
		{name: "retry with other arguments", req: snapshot.GetRequest{Args: map[string]string{"audience": "managers"}, Caller: ada,
			Answers: ask.Answers{Caps: elicit, Sealer: sealer, Responses: accept("Go"), State: first.RequestState}},
			err: "another call", typed: "state"},
		{name: "retry by another caller", req: snapshot.GetRequest{Args: args, Caller: &principal.Principal{Name: "eve", Method: "api_key"},
			Answers: ask.Answers{Caps: elicit, Sealer: sealer, Responses: accept("Go"), State: first.RequestState}},
			err: "another call", typed: "state"},
		{name: "the backend's own state, bare", req: snapshot.GetRequest{Args: args, Caller: ada,
			Answers: ask.Answers{Caps: elicit, Sealer: sealer, Responses: accept("Go"), State: "asked"}},
			err: "invalid requestState", typed: "state"},
		{name: "asked within the get", req: snapshot.GetRequest{Args: args, Caller: ada,
			Answers: ask.Answers{Caps: elicit, Sealer: sealer, Answerer: answerer}},
			brief: "a brief about Go for engineers"},
		{name: "missing capability", backend: func(context.Context, *adapter.PromptRequest) (*adapter.PromptOutput, error) {
			return nil, &adapter.MissingCapabilityError{Message: "upstream up cannot ask: no elicitation", Capabilities: []string{"elicitation"}}
		}, req: snapshot.GetRequest{Args: args, Answers: ask.Answers{Sealer: sealer}},
			err: "no elicitation", typed: "capability"},
		{name: "rounds asked of a client that has none", backend: func(context.Context, *adapter.PromptRequest) (*adapter.PromptOutput, error) {
			return &adapter.PromptOutput{InputRequired: &adapter.InputRequired{Requests: topicQuestion, State: "asked"}}, nil
		}, req: snapshot.GetRequest{Args: args, Answers: ask.Answers{Caps: elicit, Answerer: answerer}},
			err: "cannot be asked for in this call"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend := tc.backend
			if backend == nil {
				backend = brief
			}
			res, err := get(t, backend, &tc.req)
			if tc.brief != "" {
				if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != tc.brief {
					t.Fatalf("get: %v %+v, want %q", err, res, tc.brief)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			var se *ask.StateError
			var me *ask.MissingCapabilityError
			switch tc.typed {
			case "state":
				if !errors.As(err, &se) {
					t.Errorf("err is a %T, want a *StateError", err)
				}
			case "capability":
				if !errors.As(err, &me) || me.What != "prompt up_brief" || strings.Join(me.Capabilities, ",") != "elicitation" {
					t.Errorf("err = %#v, want a *MissingCapabilityError of prompt up_brief naming elicitation", err)
				}
			}
		})
	}
}
