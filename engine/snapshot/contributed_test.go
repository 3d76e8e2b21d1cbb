package snapshot_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// contrib is a test adapter whose backend block `contrib "name" {}`
// contributes the tools its live backend holds: the seam through which an
// MCP upstream's listed tools become mcpd's (adapter.ToolContributor).
type contrib struct{ backend *contribBackend }

func (c *contrib) BackendBlock() string { return "contrib" }
func (c *contrib) CompileTool(*adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	return nil, nil
}
func (c *contrib) DecodeBackend(*adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	return &contribConfig{c: c}, nil
}

type contribConfig struct{ c *contrib }

func (c *contribConfig) Fingerprint() string            { return "same" }
func (c *contribConfig) Open() (adapter.Backend, error) { return c.c.backend, nil }
func (c *contribConfig) ContributedTools(b adapter.Backend) []adapter.ContributedTool {
	cb := b.(*contribBackend)
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return append([]adapter.ContributedTool(nil), cb.tools...)
}

type contribBackend struct {
	mu    sync.Mutex
	tools []adapter.ContributedTool
}

func (b *contribBackend) Close() error { return nil }

type argsHandler struct{}

func (argsHandler) Vars() []string         { return nil }
func (argsHandler) Traits() adapter.Traits { return adapter.Traits{ReadsEval: true} }
func (argsHandler) Call(_ context.Context, req *adapter.Request) (*adapter.Output, error) {
	return &adapter.Output{Structured: req.Args}, nil
}

// Contributed tools are served beside the config's (which win on a name
// clash), with the contributor's schema validating their arguments and its
// scopes hiding them from callers without them; a rebuild with a changed
// contribution is a change of the tool list.
func TestContributedTools(t *testing.T) {
	be := &contribBackend{tools: []adapter.ContributedTool{
		{Name: "up_a", Description: "A", Scopes: []string{"gh"}, Handler: argsHandler{},
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}, "required": []any{"n"}}},
		{Name: "local", Description: "a contributed tool the config overrides", Handler: argsHandler{}},
		{Name: "bad name!", Handler: argsHandler{}},
	}}
	reg := adapter.NewRegistry()
	reg.Register("contrib_tool", &contrib{backend: be})
	files := map[string]string{"tools.hcl": `
contrib "up" {}

tool "local" {
  description = "The config's own."
  result {
    content "text" {
      text = "local"
    }
  }
}
`}
	s := mustBuild(t, reg, nil, files)
	names := func(v *snapshot.View) map[string]bool {
		m := map[string]bool{}
		for _, tl := range v.Tools {
			m[tl.Def.Name] = true
		}
		return m
	}
	if got := names(s.View(&principal.Principal{Scopes: []string{"gh"}})); !got["up_a"] || !got["local"] || got["bad name!"] || len(got) != 2 {
		t.Fatalf("tools seen with scope gh: %v", got)
	}
	if tl, _ := s.Tool("local"); tl.Def.Description != "The config's own." {
		t.Errorf("local is the contributed one: %q", tl.Def.Description)
	}
	// Without the scope, the contributed tool is hidden and not callable.
	if got := names(s.View(&principal.Principal{Scopes: []string{"other"}})); got["up_a"] {
		t.Errorf("up_a seen without its scope: %v", got)
	}
	if _, ok := s.ToolFor("up_a", &principal.Principal{Scopes: []string{"other"}}); ok {
		t.Error("up_a callable without its scope")
	}
	tl, _ := s.Tool("up_a")
	res, err := tl.Call(context.Background(), &snapshot.CallRequest{Args: json.RawMessage(`{"n": 3}`)})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if m, _ := res.StructuredContent.(map[string]any); m["n"] == nil {
		t.Errorf("the handler did not get the arguments: %v", res.StructuredContent)
	}
	res, err = tl.Call(context.Background(), &snapshot.CallRequest{Args: json.RawMessage(`{"n": "three"}`)})
	if err != nil || !res.IsError {
		t.Errorf("invalid arguments: want a tool error, got %v %+v", err, res)
	}

	be.mu.Lock()
	be.tools = append(be.tools, adapter.ContributedTool{Name: "up_b", Description: "B", Handler: argsHandler{}})
	be.mu.Unlock()
	next := mustBuild(t, reg, s, files)
	if c := snapshot.Compare(s, next); c.Tools.Empty() || c.Prompts.Empty() != true {
		t.Errorf("changes: %+v", c)
	}
	if same := snapshot.Compare(next, mustBuild(t, reg, next, files)); !same.Empty() {
		t.Errorf("an unchanged contribution changed the tool list: %+v", same)
	}
}

// A contributed tool whose schema validating against could be unbounded
// (a $ref cycle in its input or output schema) is dropped, its
// contributor's other tools kept; one whose references mcpd cannot follow
// is served, its arguments checked by its service only, as before.
func TestContributedToolsUnboundedSchemas(t *testing.T) {
	cyclic := map[string]any{"type": "object", "$defs": map[string]any{"a": map[string]any{"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
	be := &contribBackend{tools: []adapter.ContributedTool{
		{Name: "good", Handler: argsHandler{}},
		{Name: "cyclic", Handler: argsHandler{}, InputSchema: cyclic},
		{Name: "cyclic_output", Handler: argsHandler{}, OutputSchema: cyclic},
		{Name: "remote", Handler: argsHandler{}, InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "https://example.com/a.json"}}}},
	}}
	reg := adapter.NewRegistry()
	reg.Register("contrib_tool", &contrib{backend: be})
	s := mustBuild(t, reg, nil, map[string]string{"tools.hcl": `contrib "up" {}`})
	for name, want := range map[string]bool{"good": true, "cyclic": false, "cyclic_output": false, "remote": true} {
		if _, ok := s.Tool(name); ok != want {
			t.Errorf("tool %s served: %v, want %v", name, ok, want)
		}
	}
	tl, _ := s.Tool("remote")
	if res, err := tl.Call(context.Background(), &snapshot.CallRequest{Args: json.RawMessage(`{"a": 1}`)}); err != nil || res.IsError {
		t.Errorf("remote: %v %+v", err, res)
	}
}
