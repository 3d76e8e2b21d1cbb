package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Toolset is one `toolset "name" { ... }` block: a named subset of the
// config's tools, resources (static ones and templates) and prompts, served
// on its own HTTP path (/mcp/<name>) and selectable for stdio (--toolset).
// Which items it holds is decided against the compiled snapshot (see
// snapshot's toolset.go), which knows every item, wherever it comes from.
type Toolset struct {
	Name        string         `hcl:"name,label"`
	NameRange   hcl.Range      `hcl:"name,label_range"`
	Description string         `hcl:"description,optional"`
	ToolsAttr   *hcl.Attribute `hcl:"tools,optional"`
	ResAttr     *hcl.Attribute `hcl:"resources,optional"`
	PromptsAttr *hcl.Attribute `hcl:"prompts,optional"`
	// Scopes are required to use the toolset at all, on top of each
	// item's own scopes.
	Scopes    []string  `hcl:"scopes,optional"`
	DeclRange hcl.Range `hcl:",def_range"`

	// Tools, Resources and Prompts are the decoded lists, each entry with
	// its own range. Resources match static resources and templates, by
	// name or by URI (template).
	Tools, Resources, Prompts []Pattern
}

// Pattern is one entry of a toolset's list: an exact name, or a glob where
// `*` stands for any run of characters and `?` for one. A leading `!`
// excludes what the rest matches, whatever the other entries include.
type Pattern struct {
	Text  string
	Range hcl.Range
}

// Exclude reports whether p is an exclusion (`!glob`).
func (p Pattern) Exclude() bool { return strings.HasPrefix(p.Text, "!") }

// Glob is p without its `!`.
func (p Pattern) Glob() string { return strings.TrimPrefix(p.Text, "!") }

// Wild reports whether p matches more than one name.
func (p Pattern) Wild() bool { return strings.ContainsAny(p.Glob(), "*?") }

// Match reports whether name matches p's glob (ignoring `!`).
func (p Pattern) Match(name string) bool { return globMatch(p.Glob(), name) }

// globMatch matches name against a glob of `*` (any run, `/` and `:`
// included: URIs are matched too) and `?` (one byte); everything else
// matches itself.
func globMatch(glob, name string) bool {
	// The classic two-pointer match with one backtrack point: linear in
	// practice, no recursion.
	gi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(name) {
		switch {
		case gi < len(glob) && (glob[gi] == '?' || glob[gi] == name[ni]):
			gi++
			ni++
		case gi < len(glob) && glob[gi] == '*':
			star, mark = gi, ni
			gi++
		case star >= 0:
			gi = star + 1
			mark++
			ni = mark
		default:
			return false
		}
	}
	for gi < len(glob) && glob[gi] == '*' {
		gi++
	}
	return gi == len(glob)
}

// decodeToolset decodes the lists of a toolset block, each entry with its
// range, and checks the toolset's name and entries.
func decodeToolset(ts *Toolset, ectx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if !validIdent(ts.Name) {
		diags = append(diags, nameError(ts.NameRange, "toolset", ts.Name))
	}
	var d hcl.Diagnostics
	ts.Tools, d = patternList(ts.ToolsAttr, ectx)
	diags = append(diags, d...)
	ts.Resources, d = patternList(ts.ResAttr, ectx)
	diags = append(diags, d...)
	ts.Prompts, d = patternList(ts.PromptsAttr, ectx)
	diags = append(diags, d...)
	if ts.ToolsAttr == nil && ts.ResAttr == nil && ts.PromptsAttr == nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Empty toolset",
			Detail:   fmt.Sprintf("toolset %q selects nothing: give it tools, resources or prompts (names or patterns such as \"search_*\").", ts.Name),
			Subject:  &ts.DeclRange,
		})
	}
	return diags
}

// patternList decodes a list of strings, keeping each element's range
// (an element that is not a literal gets the range of its expression).
func patternList(attr *hcl.Attribute, ectx *hcl.EvalContext) ([]Pattern, hcl.Diagnostics) {
	if attr == nil {
		return nil, nil
	}
	exprs, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid list",
			Detail:   fmt.Sprintf("%s must be a list of names or patterns, such as [\"search_*\", \"get_ticket\"].", attr.Name),
			Subject:  attr.Expr.Range().Ptr(),
		}}
	}
	out := make([]Pattern, 0, len(exprs))
	for _, e := range exprs {
		v, d := e.Value(ectx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		rng := e.Range()
		if v.IsNull() || !v.Type().Equals(cty.String) || !v.IsKnown() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid pattern",
				Detail:   fmt.Sprintf("each entry of %s must be a string: a name or a pattern with * and ?.", attr.Name),
				Subject:  &rng,
			})
			continue
		}
		p := Pattern{Text: v.AsString(), Range: rng}
		if strings.TrimSpace(p.Glob()) == "" || p.Glob() != strings.TrimSpace(p.Glob()) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid pattern",
				Detail:   fmt.Sprintf("%q is not a name or a pattern: an entry must not be empty or have spaces around it.", p.Text),
				Subject:  &rng,
			})
			continue
		}
		out = append(out, p)
	}
	return out, diags
}
