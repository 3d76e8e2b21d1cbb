package snapshot

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/ident"
	"github.com/mcpd/mcpd/engine/limits"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/engine/schema"
)

// Tools a backend contributes at run time (adapter.ToolContributor), such
// as an MCP upstream's listed tools: compiled like declared tools, from
// what the backend reports instead of from the config, and rebuilt with
// the whole snapshot whenever the backend reports a change
// (adapter.Watcher, see engine/reload).

type contributor struct {
	key  string // the backend's "type name"
	conf adapter.BackendConfig
}

func isContributor(c adapter.BackendConfig) bool {
	_, t := c.(adapter.ToolContributor)
	_, r := c.(adapter.ResourceContributor)
	_, p := c.(adapter.PromptContributor)
	return t || r || p
}

// addContributed adds what the backends contribute now, after the config's
// own tools, resources and prompts, which win over contributed ones of the
// same name (or URI).
func (s *Snapshot) addContributed(prev *Snapshot, sl serverLimits, pins *pinGate) {
	s.hideRefused(pins)
	for _, kt := range s.contributedTools() {
		ct := kt.ContributedTool
		if _, declared := s.tools[ct.Name]; declared {
			continue
		}
		pinned := ct.Name
		if ct.Declared != nil {
			pinned = ct.Declared.Name
		}
		if pins.hides(kt.key, lock.KindTool, pinned) {
			continue
		}
		t := compileContributed(ct, sl)
		if t == nil {
			continue
		}
		if prev != nil {
			if old, ok := prev.tools[t.Def.Name]; ok {
				limits.Carry(t.limits, old.limits)
			}
		}
		s.Tools = append(s.Tools, t)
		s.tools[t.Def.Name] = t
	}
	lim, _ := compileLimits(&config.Tool{}, sl)
	templates := map[string]bool{}
	for _, t := range s.Templates {
		templates[t.Def.URITemplate] = true
	}
	for _, c := range s.contributors {
		lb, ok := s.backends[c.key]
		if !ok {
			continue
		}
		from := &contribution{conf: c.conf, backend: lb.backend, limits: lim}
		if rc, ok := c.conf.(adapter.ResourceContributor); ok {
			resources, tmpls := rc.ContributedResources(lb.backend)
			for _, cr := range resources {
				if _, dup := s.resources[cr.Def.URI]; dup || cr.Read == nil || pins.hides(c.key, lock.KindResource, cr.Def.URI) {
					continue
				}
				r := &Resource{Def: cr.Def, src: &source{name: cr.Def.Name, remote: cr.Read, limits: lim, adapterType: "contributed"}, scopes: normScopes(cr.Scopes), from: from}
				s.Resources = append(s.Resources, r)
				s.resources[r.Def.URI] = r
			}
			for _, ct := range tmpls {
				if templates[ct.Def.URITemplate] || ct.Read == nil || pins.hides(c.key, lock.KindTemplate, ct.Def.URITemplate) {
					continue
				}
				t := contributedTemplate(ct, lim)
				if t == nil {
					continue
				}
				templates[ct.Def.URITemplate] = true
				t.from = from
				s.Templates = append(s.Templates, t)
			}
		}
		if pc, ok := c.conf.(adapter.PromptContributor); ok {
			for _, cp := range pc.ContributedPrompts(lb.backend) {
				if _, dup := s.prompts[cp.Def.Name]; dup || cp.Get == nil || !ident.ToolName(cp.Def.Name) {
					continue
				}
				if declared := cp.Declared; declared != nil && pins.hides(c.key, lock.KindPrompt, declared.Name) ||
					declared == nil && pins.hides(c.key, lock.KindPrompt, cp.Def.Name) {
					continue
				}
				get := cp.Get
				p := &Prompt{Def: cp.Def, scope: &adapter.Scope{}, completions: map[string][]string{}, scopes: normScopes(cp.Scopes), from: from,
					remote: func(ctx context.Context, req *adapter.PromptRequest) (*adapter.PromptOutput, error) {
						ctx, cancel := lim.WithTimeout(ctx)
						defer cancel()
						return get(ctx, req)
					}}
				s.Prompts = append(s.Prompts, p)
				s.prompts[p.Def.Name] = p
			}
		}
	}
}

// contributedTemplate compiles a contributed template: its variables get
// the default path rules of a declared one (one segment, no dot segments).
func contributedTemplate(ct adapter.ContributedTemplate, lim *limits.Limits) *Template {
	tmpl, err := uritemplate.New(ct.Def.URITemplate)
	if err != nil {
		slog.Warn("contributed resource template skipped", "template", ct.Def.URITemplate, "err", err)
		return nil
	}
	ops := templateOperators(ct.Def.URITemplate)
	vars := map[string]varRule{}
	for _, name := range tmpl.Varnames() {
		vars[name] = varRule{op: ops[name]}
	}
	validator, _ := schema.Compile(map[string]any{"type": "object"})
	return &Template{Def: ct.Def, tmpl: tmpl, vars: vars, validator: validator, completions: map[string][]string{},
		src: &source{name: ct.Def.Name, remote: ct.Read, limits: lim, adapterType: "contributed"}, scopes: normScopes(ct.Scopes)}
}

// contributedTools asks every contributor what its live backend
// contributes, in declaration order; a name contributed twice keeps its
// first.
func (s *Snapshot) contributedTools() []keyedTool {
	var out []keyedTool
	seen := map[string]string{}
	for _, c := range s.contributors {
		lb, ok := s.backends[c.key]
		if !ok {
			continue
		}
		tc, ok := c.conf.(adapter.ToolContributor)
		if !ok {
			continue
		}
		for _, ct := range tc.ContributedTools(lb.backend) {
			if first, dup := seen[ct.Name]; dup {
				slog.Warn("tool contributed twice; keeping the first", "tool", ct.Name, "first", first, "second", c.key)
				continue
			}
			seen[ct.Name] = c.key
			out = append(out, keyedTool{ct, c.key})
		}
	}
	return out
}

// keyedTool is a contributed tool and its contributor's key.
type keyedTool struct {
	adapter.ContributedTool
	key string
}

// compileContributed compiles one contributed tool. Its schemas come from
// a service mcpd does not control: an input schema mcpd's validator cannot
// compile is served as it is and only checked to be an object (the
// service validates its own arguments); an output schema that does not
// resolve is dropped. A tool without a usable name or handler is skipped,
// and so is one with a schema validating against which could be unbounded
// (schema.CheckBounds: a $ref cycle, say): that schema would reach
// clients, which validate too. A schema refused only because mcpd cannot
// follow its references is served unvalidated, as an uncompilable one is.
// (The MCP adapter drops such tools when it lists them, and counts them;
// this is the rule for every contributor.)
func compileContributed(ct adapter.ContributedTool, sl serverLimits) *Tool {
	if ct.Handler == nil || !ident.ToolName(ct.Name) {
		slog.Warn("contributed tool skipped: invalid name or no handler", "tool", ct.Name)
		return nil
	}
	in := ct.InputSchema
	if in == nil {
		in = map[string]any{"type": "object"}
	}
	for _, s := range []map[string]any{in, ct.OutputSchema} {
		if s == nil {
			continue
		}
		if be, refused := schema.IsBoundsError(schema.CheckBounds(s)); refused && !be.Unchecked() {
			slog.Warn("contributed tool dropped: its schema is refused", "tool", ct.Name, "err", be)
			return nil
		}
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
		traits:      ct.Handler.Traits(),
		adapterType: "contributed",
	}
	if t.traits.ReadsEval {
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
