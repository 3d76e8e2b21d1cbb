// Package adaptertest compiles and calls one adapter block outside the
// engine, so that each adapter's tests exercise it against real backends
// without an MCP server in between.
package adaptertest

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// Config is a small config of backend blocks and one adapter block, as in
// a tool: for example `database "main" { ... }` and `sql { ... }`.
type Config struct {
	Src    string            // HCL source: backend blocks and exactly one block of the adapter's type
	Dir    string            // directory file() resolves against; "" for the test's cwd
	Params map[string]string // declared params: name → JSON type
	Auth   *adapter.AuthInfo // what the server's auth verifies (nil: no auth block)
	// VarsUnread compiles the block as for a tool without a result or
	// logs block (ToolBlock.ReadsVars false), whose Output.Vars an
	// adapter may leave out; by default it is compiled as for one with
	// them, so that tests can check the variables.
	VarsUnread bool
}

// Compile decodes the backend blocks (if the adapter owns any) and the
// adapter block of c with a, returning the handler and all diagnostics. The
// backends it opened are closed when the test ends.
func Compile(t testing.TB, a adapter.Adapter, block string, c Config) (adapter.Handler, hcl.Diagnostics) {
	t.Helper()
	file, diags := hclsyntax.ParseConfig([]byte(c.Src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parsing test config: %s", diags.Error())
	}
	dir := c.Dir
	if dir == "" {
		dir = "."
	}
	scope := &adapter.Scope{Dir: dir, Functions: funcs.Table(dir), Params: c.Params, Auth: c.Auth}
	if scope.Params == nil {
		scope.Params = map[string]string{}
	}
	schema := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: block}}}
	ba, isBackend := a.(adapter.BackendAdapter)
	if isBackend {
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: ba.BackendBlock(), LabelNames: []string{"name"}})
	}
	content, diags := file.Body.Content(schema)
	if diags.HasErrors() {
		t.Fatalf("test config: %s", diags.Error())
	}
	live := map[string]adapter.Backend{}
	var all hcl.Diagnostics
	var toolBlock *hcl.Block
	for _, b := range content.Blocks {
		if b.Type == block {
			toolBlock = b
			continue
		}
		cfg, d := ba.DecodeBackend(&adapter.BackendBlock{Name: b.Labels[0], Body: b.Body, Range: b.DefRange, Scope: &adapter.Scope{Dir: dir, Functions: scope.Functions, Auth: c.Auth}})
		all = append(all, d...)
		if d.HasErrors() {
			continue
		}
		be, err := cfg.Open()
		if err != nil {
			t.Fatalf("opening backend %q: %v", b.Labels[0], err)
		}
		t.Cleanup(func() { be.Close() })
		live[b.Labels[0]] = be
	}
	if toolBlock == nil {
		t.Fatalf("test config has no %q block", block)
	}
	h, d := a.CompileTool(&adapter.ToolBlock{
		Tool:      "test_tool",
		Type:      block,
		Body:      toolBlock.Body,
		Range:     toolBlock.DefRange,
		Scope:     scope,
		ReadsVars: !c.VarsUnread,
		Backend: func(blockType, name string) (adapter.Backend, bool) {
			if !isBackend || blockType != ba.BackendBlock() {
				return nil, false
			}
			be, ok := live[name]
			return be, ok
		},
	})
	return h, append(all, d...)
}

// MustCompile is Compile that fails the test on any error diagnostic.
func MustCompile(t testing.TB, a adapter.Adapter, block string, c Config) adapter.Handler {
	t.Helper()
	h, diags := Compile(t, a, block, c)
	if diags.HasErrors() {
		t.Fatalf("compiling: %s", diags.Error())
	}
	return h
}

// Call runs h with args as the engine would: args already validated, every
// declared param present in `args` (null when absent). A lease ctx carries
// (resultbuf.With) is lent to the call, as the engine lends the fast
// path's.
func Call(ctx context.Context, h adapter.Handler, params map[string]string, args map[string]any) (*adapter.Output, error) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: params}
	if args == nil {
		args = map[string]any{}
	}
	return h.Call(ctx, &adapter.Request{
		Tool:     "test_tool",
		Args:     args,
		Eval:     scope.CallContext(args),
		Progress: func(float64, float64, string) {},
		Buffers:  resultbuf.From(ctx), // as the engine lends them
	})
}

// DiagContains reports whether some error diagnostic's summary or detail
// contains want, and returns the diagnostics' text for a failure message.
func DiagContains(diags hcl.Diagnostics, want string) (bool, string) {
	for _, d := range diags {
		if strings.Contains(d.Summary+": "+d.Detail, want) {
			return true, diags.Error()
		}
	}
	return false, diags.Error()
}
