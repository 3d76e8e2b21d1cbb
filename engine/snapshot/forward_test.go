package snapshot_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// forwarder is a test adapter whose backend block `forwarder "name" {}`
// contributes a prompt, a resource and a template to callers with the
// scope docs, completes them (adapter.Completer) and reports changes of
// its resources (adapter.ResourceSubscriber).
type forwarder struct{ backend *contribBackend }

func (f *forwarder) BackendBlock() string { return "forwarder" }
func (f *forwarder) CompileTool(*adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	return nil, nil
}
func (f *forwarder) DecodeBackend(*adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	return &forwarderConfig{f: f}, nil
}

type forwarderConfig struct{ f *forwarder }

func (c *forwarderConfig) Fingerprint() string            { return "same" }
func (c *forwarderConfig) Open() (adapter.Backend, error) { return c.f.backend, nil }

func readText(_ context.Context, uri string) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "text"}}}, nil
}

func (c *forwarderConfig) ContributedResources(adapter.Backend) ([]adapter.ContributedResource, []adapter.ContributedTemplate) {
	docs := []string{"docs"}
	return []adapter.ContributedResource{{Def: &mcp.Resource{URI: "files://readme", Name: "readme"}, Scopes: docs, Read: readText}},
		[]adapter.ContributedTemplate{{Def: &mcp.ResourceTemplate{URITemplate: "files://{name}", Name: "files"}, Scopes: docs, Read: readText}}
}

func (c *forwarderConfig) ContributedPrompts(adapter.Backend) []adapter.ContributedPrompt {
	return []adapter.ContributedPrompt{{Def: &mcp.Prompt{Name: "up_team"}, Scopes: []string{"docs"},
		Get: func(context.Context, *adapter.PromptRequest) (*adapter.PromptOutput, error) {
			return &adapter.PromptOutput{Result: &mcp.GetPromptResult{}}, nil
		}}}
}

// Complete answers "ref:value" with what it was given, and fails for the
// argument broken; it insists on a deadline.
func (c *forwarderConfig) Complete(ctx context.Context, _ adapter.Backend, req *adapter.CompleteRequest) (*mcp.CompletionResultDetails, error) {
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("no deadline")
	}
	if req.Argument == "broken" {
		return nil, errors.New("the backend is down")
	}
	return &mcp.CompletionResultDetails{Values: []string{req.Ref.Name + req.Ref.URI + ":" + req.Value + req.Context["department"]}}, nil
}

func (c *forwarderConfig) SubscribeResource(context.Context, adapter.Backend, string, func(string)) (func(), error) {
	return func() {}, nil
}

const forwarderConfigText = `
forwarder "up" {}

resource "own" {
  uri  = "own://readme"
  text = "the config's own"
}

prompt "local" {
  argument "city" {
    completions = ["Paris"]
  }
  message {
    role = "user"
    text = "hi"
  }
}

toolset "narrow" {
  resources = ["files://read*", "own://*"]
}
`

// A contributed prompt or template is completed by its contributor, under
// a deadline, with the context passed on; a failure completes to nothing.
func TestCompleteContributed(t *testing.T) {
	reg := adapter.NewRegistry()
	reg.Register("forwarder", &forwarder{backend: &contribBackend{}})
	s := mustBuild(t, reg, nil, map[string]string{"tools.hcl": forwarderConfigText})
	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "up_team"}
	tests := []struct {
		name string
		req  adapter.CompleteRequest
		want []string
	}{
		{"prompt", adapter.CompleteRequest{Ref: prompt, Argument: "department", Value: "S"}, []string{"up_team:S"}},
		{"context", adapter.CompleteRequest{Ref: prompt, Argument: "name", Context: map[string]string{"department": "Sales"}}, []string{"up_team:Sales"}},
		{"template", adapter.CompleteRequest{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "files://{name}"}, Argument: "name", Value: "a"}, []string{"files://{name}:a"}},
		{"failure", adapter.CompleteRequest{Ref: prompt, Argument: "broken"}, []string{}},
		{"the config's own", adapter.CompleteRequest{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "local"}, Argument: "city", Value: "p"}, []string{"Paris"}},
	}
	for _, tc := range tests {
		got := s.Complete(context.Background(), &tc.req)
		if got.Values == nil || !slices.Equal(got.Values, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got.Values, tc.want)
		}
	}
}

// A subscription resolves as a read does: what the caller may see through
// its toolset, the contributed resource's subscriber; what it may not,
// hidden; the config's own resources and unknown URIs, nothing to
// subscribe to at a backend.
func TestSubscribeTarget(t *testing.T) {
	reg := adapter.NewRegistry()
	reg.Register("forwarder", &forwarder{backend: &contribBackend{}})
	s := mustBuild(t, reg, nil, map[string]string{"tools.hcl": forwarderConfigText})
	narrow, ok := s.Toolset("narrow")
	if !ok {
		t.Fatal("no toolset narrow")
	}
	reader := &principal.Principal{Name: "reader", Scopes: []string{"docs"}}
	outsider := &principal.Principal{Name: "outsider", Scopes: []string{"other"}}
	tests := []struct {
		name         string
		uri          string
		caller       *principal.Principal
		toolset      *snapshot.Toolset
		subscribable bool
		hidden       bool
	}{
		{"contributed resource", "files://readme", reader, nil, true, false},
		{"template instance", "files://a.txt", reader, nil, true, false},
		{"local user", "files://a.txt", nil, nil, true, false},
		{"in the toolset", "files://readme", reader, narrow, true, false},
		{"template outside the toolset", "files://a.txt", reader, narrow, false, true},
		{"without the scope", "files://readme", outsider, nil, false, true},
		{"the config's own", "own://readme", outsider, narrow, false, false},
		{"unknown", "nothing://here", reader, nil, false, false},
	}
	for _, tc := range tests {
		at, hidden := s.SubscribeTarget(&snapshot.ReadRequest{URI: tc.uri, Caller: tc.caller, Toolset: tc.toolset})
		if (at != nil) != tc.subscribable || hidden != tc.hidden {
			t.Errorf("%s: subscribable %v, hidden %v; want %v, %v", tc.name, at != nil, hidden, tc.subscribable, tc.hidden)
		}
	}
}
