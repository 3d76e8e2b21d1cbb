package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/suggest"
)

// Toolset is one compiled toolset: the snapshot's items its patterns
// select, with the scopes a caller needs to use it at all. Membership is
// decided once, against the snapshot's own lists, so a toolset works alike
// over every tool, whichever adapter (or upstream server) provides it.
type Toolset struct {
	Name, Description string
	// Scopes are required to use the toolset, on top of each item's own.
	Scopes []string

	tools, prompts       map[string]bool // by name
	resources, templates map[string]bool // by URI, by URI template
	access               *access         // the members, and the views of them

	fpOnce sync.Once
	fp     [3]string
}

// Toolset returns the toolset named name.
func (s *Snapshot) Toolset(name string) (*Toolset, bool) {
	for _, ts := range s.Toolsets {
		if ts.Name == name {
			return ts, true
		}
	}
	return nil, false
}

// ToolsetNames are the names of the declared toolsets, in declaration
// order.
func (s *Snapshot) ToolsetNames() []string {
	out := make([]string, len(s.Toolsets))
	for i, ts := range s.Toolsets {
		out[i] = ts.Name
	}
	return out
}

// All is what the toolset holds, whatever the caller's scopes.
func (ts *Toolset) All() *View { return ts.access.all }

// View is what p may see of the toolset: its members without those whose
// scopes p lacks. It does not check the toolset's own scopes (Allows).
func (ts *Toolset) View(p *principal.Principal) *View { return ts.access.view(p) }

// Allows reports whether p holds the toolset's scopes. The local user
// (nil) does.
func (ts *Toolset) Allows(p *principal.Principal) bool { return p.HasScopes(ts.Scopes) }

// HasTool reports whether the tool named name is a member. A nil toolset
// (everything) holds every tool.
func (ts *Toolset) HasTool(name string) bool { return ts == nil || ts.tools[name] }

// HasPrompt reports whether the prompt named name is a member; a nil
// toolset holds every prompt.
func (ts *Toolset) HasPrompt(name string) bool { return ts == nil || ts.prompts[name] }

// HasResource reports whether the static resource at uri is a member; a
// nil toolset holds every resource.
func (ts *Toolset) HasResource(uri string) bool { return ts == nil || ts.resources[uri] }

// HasTemplate reports whether the template with this URI template is a
// member; a nil toolset holds every template.
func (ts *Toolset) HasTemplate(uriTemplate string) bool {
	return ts == nil || ts.templates[uriTemplate]
}

// Fingerprints identify what the toolset shows, per kind of list (tools,
// prompts, resources with templates), with its scopes: when one differs
// between two snapshots, the clients of the toolset saw that list change.
func (ts *Toolset) Fingerprints() [3]string {
	ts.fpOnce.Do(func() { ts.fp = fingerprints(ts.access.all, ts.Scopes) })
	return ts.fp
}

// Fingerprints are Toolset.Fingerprints of everything the snapshot serves.
func (s *Snapshot) Fingerprints() [3]string {
	s.fpOnce.Do(func() { s.fp = fingerprints(s.access.all, nil) })
	return s.fp
}

// fingerprints hashes each list's definitions in order: a client sees the
// order, as Compare counts it.
func fingerprints(v *View, scopes []string) [3]string {
	hash := func(write func(add func(name string, def any))) string {
		h := sha256.New()
		fmt.Fprintf(h, "scopes %q\n", scopes)
		write(func(name string, def any) {
			b, _ := json.Marshal(def)
			fmt.Fprintf(h, "%q %s\n", name, b)
		})
		return hex.EncodeToString(h.Sum(nil)[:16])
	}
	return [3]string{
		hash(func(add func(string, any)) {
			for _, t := range v.Tools {
				add(t.Def.Name, t.Def)
			}
		}),
		hash(func(add func(string, any)) {
			for _, p := range v.Prompts {
				add(p.Def.Name, p.Def)
			}
		}),
		hash(func(add func(string, any)) {
			for _, r := range v.Resources {
				add(r.Def.URI, r.Def)
			}
			for _, t := range v.Templates {
				add(t.Def.URITemplate, t.Def)
			}
		}),
	}
}

// compileToolsets decides the members of each toolset against the
// snapshot's compiled items. An exact name that names nothing is an error
// (with a did-you-mean); a pattern that matches nothing is a warning: it
// may match a tool a later edit adds.
func (s *Snapshot) compileToolsets(cfg *config.Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	toolNames := make([]string, len(s.Tools))
	for i, t := range s.Tools {
		toolNames[i] = t.Def.Name
	}
	promptNames := make([]string, len(s.Prompts))
	for i, p := range s.Prompts {
		promptNames[i] = p.Def.Name
	}
	var resKeys []string
	for _, r := range s.Resources {
		resKeys = append(resKeys, r.Def.Name, r.Def.URI)
	}
	for _, t := range s.Templates {
		resKeys = append(resKeys, t.Def.Name, t.Def.URITemplate)
	}
	for _, tc := range cfg.Toolsets {
		ts := &Toolset{Name: tc.Name, Description: tc.Description, Scopes: normScopes(tc.Scopes),
			tools: map[string]bool{}, prompts: map[string]bool{}, resources: map[string]bool{}, templates: map[string]bool{}}
		var d hcl.Diagnostics
		var all View
		all.Tools, d = selectItems(tc.Name, "tool", tc.Tools, s.Tools, toolNames, func(t *Tool) []string { return []string{t.Def.Name} })
		diags = append(diags, d...)
		all.Prompts, d = selectItems(tc.Name, "prompt", tc.Prompts, s.Prompts, promptNames, func(p *Prompt) []string { return []string{p.Def.Name} })
		diags = append(diags, d...)
		// Resources and templates share one list: an entry names either,
		// by name or by URI; it is unknown only when it names neither.
		type res struct {
			r *Resource
			t *Template
		}
		items := make([]res, 0, len(s.Resources)+len(s.Templates))
		for _, r := range s.Resources {
			items = append(items, res{r: r})
		}
		for _, t := range s.Templates {
			items = append(items, res{t: t})
		}
		picked, d := selectItems(tc.Name, "resource", tc.Resources, items, resKeys, func(x res) []string {
			if x.r != nil {
				return []string{x.r.Def.Name, x.r.Def.URI}
			}
			return []string{x.t.Def.Name, x.t.Def.URITemplate}
		})
		diags = append(diags, d...)
		for _, x := range picked {
			if x.r != nil {
				all.Resources = append(all.Resources, x.r)
			} else {
				all.Templates = append(all.Templates, x.t)
			}
		}
		for _, t := range all.Tools {
			ts.tools[t.Def.Name] = true
		}
		for _, p := range all.Prompts {
			ts.prompts[p.Def.Name] = true
		}
		for _, r := range all.Resources {
			ts.resources[r.Def.URI] = true
		}
		for _, t := range all.Templates {
			ts.templates[t.Def.URITemplate] = true
		}
		if all.Tools == nil {
			all.Tools = []*Tool{}
		}
		ts.access = newAccess(&all)
		s.Toolsets = append(s.Toolsets, ts)
	}
	diags = append(diags, s.defaultToolset(cfg)...)
	return diags
}

// selectItems returns the items (in declaration order) that some included
// entry matches and no excluded one does. keys are the names an item
// answers to; known are every item's keys, for did-you-mean.
func selectItems[T any](toolset, kind string, pats []config.Pattern, items []T, known []string, keys func(T) []string) ([]T, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	matched := make([]bool, len(pats))
	var out []T
	for _, it := range items {
		in, out1 := false, false
		for i, p := range pats {
			if !slices.ContainsFunc(keys(it), p.Match) {
				continue
			}
			matched[i] = true
			if p.Exclude() {
				out1 = true
			} else {
				in = true
			}
		}
		if in && !out1 {
			out = append(out, it)
		}
	}
	for i, p := range pats {
		if matched[i] {
			continue
		}
		rng := p.Range
		if !p.Wild() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Unknown %s in toolset", kind),
				Detail:   fmt.Sprintf("toolset %q: no %s is named %q.%s", toolset, kind, p.Glob(), suggest.DidYouMean(p.Glob(), known)),
				Subject:  &rng,
			})
			continue
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Pattern matches nothing",
			Detail:   fmt.Sprintf("toolset %q: no %s matches %q (yet).", toolset, kind, p.Glob()),
			Subject:  &rng,
		})
	}
	return out, diags
}

// defaultToolset checks server.default_toolset, which names the toolset
// /mcp and stdio without --toolset serve.
func (s *Snapshot) defaultToolset(cfg *config.Config) hcl.Diagnostics {
	if cfg.Server == nil || cfg.Server.DefaultToolset == nil {
		return nil
	}
	attr := cfg.Server.DefaultToolset
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() {
		return diags
	}
	if v.IsNull() || !v.IsKnown() || !v.Type().Equals(cty.String) {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid default_toolset",
			Detail: "default_toolset must be the name of a toolset block, as a string.", Subject: attr.Expr.Range().Ptr()}}
	}
	name := v.AsString()
	if _, ok := s.Toolset(name); !ok {
		declared := s.ToolsetNames()
		list := "none"
		if len(declared) > 0 {
			list = strings.Join(declared, ", ")
		}
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown toolset",
			Detail:  fmt.Sprintf("default_toolset: no toolset is named %q.%s Declared toolsets: %s.", name, suggest.DidYouMean(name, declared), list),
			Subject: attr.Expr.Range().Ptr()}}
	}
	s.Server.DefaultToolset = name
	return nil
}

// Completable reports whether ref names one of the toolset's prompts or
// templates. A nil toolset allows every reference.
func (ts *Toolset) Completable(ref *mcp.CompleteReference) bool {
	if ts == nil || ref == nil {
		return true
	}
	switch ref.Type {
	case "ref/prompt":
		return ts.prompts[ref.Name]
	case "ref/resource":
		return ts.templates[ref.URI]
	}
	return false
}

// ServesURI reports whether ts (nil: everything) shows what answers uri in
// s: a static resource, or a template that binds it.
func (s *Snapshot) ServesURI(ts *Toolset, uri string) bool {
	if _, ok := s.resources[uri]; ok && ts.HasResource(uri) {
		return true
	}
	for _, t := range s.Templates {
		if _, ok, _ := t.Bind(uri); ok && ts.HasTemplate(t.Def.URITemplate) {
			return true
		}
	}
	return false
}
