package snapshot

import (
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/schema"
)

// Tools a backend contributes at run time (adapter.ToolContributor), such
// as an MCP upstream's listed tools: compiled like declared tools, from
// what the backend reports instead of from the config, and rebuilt with
// the whole snapshot whenever the backend reports a change
// (adapter.Watcher, see engine/reload).

type contributor struct {
	key  string // the backend's "type name"
	conf adapter.ToolContributor
}

// contributedTools asks every contributor what its live backend
// contributes, in declaration order; a name contributed twice keeps its
// first.
func (s *Snapshot) contributedTools() []adapter.ContributedTool {
	var out []adapter.ContributedTool
	seen := map[string]string{}
	for _, c := range s.contributors {
		lb, ok := s.backends[c.key]
		if !ok {
			continue
		}
		for _, ct := range c.conf.ContributedTools(lb.backend) {
			if first, dup := seen[ct.Name]; dup {
				slog.Warn("tool contributed twice; keeping the first", "tool", ct.Name, "first", first, "second", c.key)
				continue
			}
			seen[ct.Name] = c.key
			out = append(out, ct)
		}
	}
	return out
}

// compileContributed compiles one contributed tool. Its schemas come from
// a service mcpd does not control: an input schema mcpd's validator cannot
// compile is served as it is and only checked to be an object (the
// service validates its own arguments); an output schema that does not
// resolve is dropped. A tool without a usable name or handler is skipped.
func compileContributed(ct adapter.ContributedTool, sl serverLimits) *Tool {
	if ct.Handler == nil || !validToolName(ct.Name) {
		slog.Warn("contributed tool skipped: invalid name or no handler", "tool", ct.Name)
		return nil
	}
	in := ct.InputSchema
	if in == nil {
		in = map[string]any{"type": "object"}
	}
	validator, err := schema.Compile(in)
	if err != nil {
		slog.Debug("contributed tool's input schema is checked by its service only", "tool", ct.Name, "err", err)
		validator, _ = schema.Compile(map[string]any{"type": "object"})
	}
	lim, _ := compileLimits(&config.Tool{Name: ct.Name}, sl)
	t := &Tool{
		validator:   validator,
		scope:       &adapter.Scope{Params: paramTypes(in)},
		InputSchema: in,
		scopes:      normScopes(ct.Scopes),
		sensitive:   sensitiveArgs(in),
		limits:      lim,
		handler:     ct.Handler,
		adapterType: "contributed",
	}
	if er, ok := ct.Handler.(adapter.EvalReporter); !ok || er.ReadsEval() {
		t.needsEval = true
	}
	t.Def = &mcp.Tool{Name: ct.Name, Title: ct.Title, Description: ct.Description, InputSchema: rawJSON(in), Annotations: ct.Annotations}
	if ct.OutputSchema != nil {
		if out, err := resolveOutput(ct.OutputSchema); err == nil {
			t.output = out
			t.Def.OutputSchema = rawJSON(ct.OutputSchema)
		}
	}
	return t
}

// validToolName: 1–128 of [A-Za-z0-9_.-], as MCP requires.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
