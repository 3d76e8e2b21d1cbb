package snapshot

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/schema"
)

// Compiling the ask blocks of a tool or prompt: questions for the user,
// answered before the tool runs (or the prompt renders), in rounds. "Ask"
// means these blocks only. The state machine that asks them, in both
// protocol eras, is engine/ask's Asker.Resolve.

func compileAsks(kind, name string, decls []*config.Ask, base *adapter.Scope) (*ask.Asker, hcl.Diagnostics) {
	if len(decls) == 0 {
		return nil, nil
	}
	var diags hcl.Diagnostics
	a := &ask.Asker{Kind: kind, Name: name}
	seen := map[string]*config.Ask{}
	for _, d := range decls {
		if prev, ok := seen[d.Name]; ok {
			rng := d.NameRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate ask",
				Detail:  fmt.Sprintf("ask %q is already declared at %s; answers are inputs.<name>, so names must be unique.", d.Name, prev.NameRange),
				Subject: &rng})
			continue
		}
		seen[d.Name] = d
	}
	// The rounds first: a message may use the inputs of earlier rounds.
	rounds := map[string]int{}
	for _, d := range decls {
		r := 1
		if d.Round != nil {
			v, dd := schema.StaticValue(d.Round, base.EvalContext())
			diags = append(diags, dd...)
			f, ok := v.(float64)
			if !dd.HasErrors() && (!ok || f < 1 || f != math.Trunc(f) || f > 100) {
				diags = append(diags, attrDiag(d.Round, "round must be a whole number from 1 to 100"))
			} else if ok {
				r = int(f)
			}
		}
		rounds[d.Name] = r
		if r > a.Rounds {
			a.Rounds = r
		}
	}
	all := map[string]string{}
	for _, d := range decls {
		all[d.Name] = kindOf(d).String()
	}
	a.Scope = scopeWithInputs(base, all)
	for _, d := range decls {
		if seen[d.Name] != d {
			continue
		}
		earlier := map[string]string{}
		for n, r := range rounds {
			if r < rounds[d.Name] {
				earlier[n] = all[n]
			}
		}
		spec, dd := compileAsk(d, rounds[d.Name], scopeWithInputs(base, earlier))
		diags = append(diags, dd...)
		if spec != nil {
			a.Asks = append(a.Asks, spec)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return a, diags
}

func scopeWithInputs(base *adapter.Scope, inputs map[string]string) *adapter.Scope {
	cp := *base
	cp.Inputs = inputs
	return &cp
}

func kindOf(d *config.Ask) ask.Kind {
	switch {
	case d.Elicit != nil:
		return ask.KindElicit
	case d.Sample != nil:
		return ask.KindSample
	case d.Roots != nil:
		return ask.KindRoots
	}
	return ask.KindConfirm
}

func compileAsk(d *config.Ask, round int, scope *adapter.Scope) (*ask.Spec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	rng := d.DeclRange
	n := 0
	for _, a := range []*hcl.Attribute{d.Confirm, d.Elicit, d.Sample, d.Roots} {
		if a != nil {
			n++
		}
	}
	if n != 1 {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid ask",
			Detail:  fmt.Sprintf("ask %q must set exactly one of confirm, elicit, sample or roots (it sets %d).", d.Name, n),
			Subject: &rng}}
	}
	s := &ask.Spec{Name: d.Name, Round: round, Kind: kindOf(d), Optional: d.Optional}
	if s.Optional && s.Kind == ask.KindConfirm {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Optional confirmation",
			Detail: "a confirmation cannot be optional: the tool would run unconfirmed for clients that cannot ask. Remove optional, or the ask.", Subject: &rng})
	}
	if len(d.Fields) > 0 && s.Kind != ask.KindElicit {
		r := d.Fields[0].DeclRange
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "field without elicit", Detail: "field blocks describe an elicitation form; only an ask with elicit takes them.", Subject: &r})
	}
	for _, a := range []*hcl.Attribute{d.MaxTokens, d.SystemPrompt} {
		if a != nil && s.Kind != ask.KindSample {
			diags = append(diags, attrDiag(a, a.Name+" only applies to an ask with sample"))
		}
	}
	switch s.Kind {
	case ask.KindRoots:
		v, dd := schema.StaticValue(d.Roots, scope.EvalContext())
		diags = append(diags, dd...)
		if b, ok := v.(bool); !dd.HasErrors() && (!ok || !b) {
			diags = append(diags, attrDiag(d.Roots, "roots = true asks for the client's roots; remove the ask otherwise"))
		}
	case ask.KindConfirm:
		s.Message = templateMessage(d.Confirm.Expr)
		diags = append(diags, scope.Check(d.Confirm.Expr)...)
		s.Requested = map[string]any{"type": "object", "properties": map[string]any{}}
	case ask.KindSample:
		s.Message = templateMessage(d.Sample.Expr)
		diags = append(diags, scope.Check(d.Sample.Expr)...)
		s.MaxTokens = 1000
		if d.MaxTokens != nil {
			v, dd := schema.StaticValue(d.MaxTokens, scope.EvalContext())
			diags = append(diags, dd...)
			f, ok := v.(float64)
			if !dd.HasErrors() && (!ok || f < 1 || f != math.Trunc(f)) {
				diags = append(diags, attrDiag(d.MaxTokens, "max_tokens must be a positive whole number"))
			}
			s.MaxTokens = int64(f)
		}
		if d.SystemPrompt != nil {
			diags = append(diags, scope.Check(d.SystemPrompt.Expr)...)
			s.System = d.SystemPrompt.Expr
		}
	case ask.KindElicit:
		s.Message = templateMessage(d.Elicit.Expr)
		diags = append(diags, scope.Check(d.Elicit.Expr)...)
		for _, f := range d.Fields {
			if f.Type == "" {
				r := f.DeclRange
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Field without a type", Detail: fmt.Sprintf("field %q needs a type: string, number, integer, boolean or array (of enum values).", f.Name), Subject: &r})
			}
			s.Fields = append(s.Fields, f.Name)
		}
		if len(d.Fields) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Elicitation without fields", Detail: "an elicit ask needs at least one field block; to ask for a yes or no, use confirm.", Subject: &rng})
		}
		if diags.HasErrors() {
			return nil, diags
		}
		form, dd := schema.FromParams(d.Fields, scope.EvalContext())
		diags = append(diags, dd...)
		diags = append(diags, applyEnumTitles(form, d.Fields, scope.EvalContext())...)
		if diags.HasErrors() {
			return nil, diags
		}
		// Elicitation forms are flat objects; clients do not expect
		// additionalProperties, and unknown answers are dropped anyway.
		delete(form, "additionalProperties")
		v, err := schema.Compile(form)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid elicitation form", Detail: err.Error(), Subject: &rng})
			return nil, diags
		}
		s.Requested, s.Validator = form, v
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return s, diags
}

func templateMessage(expr hcl.Expression) func(*hcl.EvalContext, map[string]any) (string, error) {
	return func(ectx *hcl.EvalContext, _ map[string]any) (string, error) {
		return adapter.EvalString(expr, ectx)
	}
}

// applyEnumTitles rewrites the properties of params that set enum_titles
// (a oneOf of const/title; for an array, an anyOf in its items) or
// enum_names (kept as the legacy enumNames keyword).
func applyEnumTitles(s map[string]any, params []*config.Param, ectx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	props, _ := s["properties"].(map[string]any)
	for _, p := range params {
		prop, ok := props[p.Name].(map[string]any)
		if !ok {
			continue
		}
		if p.EnumNames != nil {
			v, d := schema.StaticValue(p.EnumNames, ectx)
			diags = append(diags, d...)
			if names, ok := stringList(v); ok {
				prop["enumNames"] = anyList(names)
			} else if !d.HasErrors() {
				diags = append(diags, attrDiag(p.EnumNames, "enum_names must be a list of strings"))
			}
		}
		if p.EnumTitles == nil {
			continue
		}
		v, d := schema.StaticValue(p.EnumTitles, ectx)
		diags = append(diags, d...)
		titles, ok := stringList(v)
		if !ok {
			if !d.HasErrors() {
				diags = append(diags, attrDiag(p.EnumTitles, "enum_titles must be a list of strings"))
			}
			continue
		}
		target, key := prop, "oneOf"
		if items, ok := prop["items"].(map[string]any); ok && p.Type == "array" {
			target, key = items, "anyOf"
		}
		values, _ := target["enum"].([]any)
		if len(values) != len(titles) {
			diags = append(diags, attrDiag(p.EnumTitles, fmt.Sprintf("enum_titles needs one title per enum value (%d values, %d titles); for an array the values are items.enum", len(values), len(titles))))
			continue
		}
		opts := make([]any, len(values))
		for i, v := range values {
			opts[i] = map[string]any{"const": v, "title": titles[i]}
		}
		delete(target, "enum")
		target[key] = opts
	}
	return diags
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// confirmAsk is the implicit confirmation of a tool with `confirm = true`
// (or a message) or of a destructive tool under server.confirm_destructive.
func confirmAsk(tc *config.Tool, scope *adapter.Scope, sensitive map[string]bool) (*ask.Spec, hcl.Diagnostics) {
	s := &ask.Spec{Name: "confirm", Round: 1, Kind: ask.KindConfirm, Requested: map[string]any{"type": "object", "properties": map[string]any{}}}
	if tc.Confirm != nil && !adapter.IsStatic(tc.Confirm.Expr) || isStringAttr(tc.Confirm, scope) {
		diags := scopeWithInputs(scope, map[string]string{}).Check(tc.Confirm.Expr)
		s.Message = templateMessage(tc.Confirm.Expr)
		return s, diags
	}
	title := tc.Title
	if title == "" && tc.Annotations != nil {
		title = tc.Annotations.Title
	}
	if title == "" {
		title = tc.Name
	}
	desc := tc.Description
	s.Message = func(_ *hcl.EvalContext, args map[string]any) (string, error) {
		shown := args
		if len(sensitive) > 0 {
			// Sensitive arguments stay out of what the client shows.
			shown = make(map[string]any, len(args))
			for k, v := range args {
				if sensitive[k] {
					v = "(hidden)"
				}
				shown[k] = v
			}
		}
		b, err := json.Marshal(shown)
		if err != nil {
			return "", err
		}
		msg := fmt.Sprintf("Allow %q to run with %s?", title, b)
		if desc != "" {
			msg += " It " + lowerFirst(desc)
		}
		return msg, nil
	}
	return s, nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func isStringAttr(a *hcl.Attribute, scope *adapter.Scope) bool {
	if a == nil {
		return false
	}
	v, d := a.Expr.Value(scope.EvalContext())
	return !d.HasErrors() && v.Type() == cty.String
}

// toolConfirm works out whether a tool confirms implicitly: its confirm
// attribute (true, false or a message) wins over confirm_destructive.
func toolConfirm(tc *config.Tool, scope *adapter.Scope, confirmDestructive bool) (bool, hcl.Diagnostics) {
	if tc.Confirm == nil {
		return confirmDestructive && tc.Annotations != nil && tc.Annotations.Destructive != nil && *tc.Annotations.Destructive, nil
	}
	if !adapter.IsStatic(tc.Confirm.Expr) {
		return true, nil
	}
	v, d := tc.Confirm.Expr.Value(scope.EvalContext())
	if d.HasErrors() {
		return false, d
	}
	switch {
	case v.IsNull():
		return false, hcl.Diagnostics{attrDiag(tc.Confirm, "confirm is true, false or a message")}
	case v.Type() == cty.Bool:
		return v.True(), nil
	case v.Type() == cty.String:
		return true, nil
	}
	return false, hcl.Diagnostics{attrDiag(tc.Confirm, "confirm is true, false or a message")}
}

// compileToolAsks compiles a tool's ask blocks and its implicit
// confirmation (confirm attribute, server.confirm_destructive).
func compileToolAsks(tc *config.Tool, scope *adapter.Scope, confirmDestructive bool, sensitive map[string]bool) (*ask.Asker, hcl.Diagnostics) {
	on, diags := toolConfirm(tc, scope, confirmDestructive)
	for _, d := range tc.Asks {
		if d.Confirm != nil {
			on = false // the tool already asks for a confirmation
		}
		if d.Name == "confirm" && on {
			rng := d.NameRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate ask",
				Detail: "the tool's implicit confirmation is inputs.confirm; rename this ask.", Subject: &rng})
		}
	}
	a, d := compileAsks("tool", tc.Name, tc.Asks, scope)
	diags = append(diags, d...)
	if !on || diags.HasErrors() {
		return a, diags
	}
	c, d := confirmAsk(tc, scope, sensitive)
	diags = append(diags, d...)
	if a == nil {
		a = &ask.Asker{Kind: "tool", Name: tc.Name, Rounds: 1, Scope: scopeWithInputs(scope, map[string]string{})}
	}
	a.Asks = append([]*ask.Spec{c}, a.Asks...)
	a.Scope.Inputs["confirm"] = "confirm"
	return a, diags
}

// NeedsSharedStateKey reports whether replicas serving s over HTTP must
// share server.request_state_key: a tool or prompt asks its client for
// input (2026-07-28 requestState round trips, which may reach another
// replica), and no key is set (each process signs with a random one).
func (s *Snapshot) NeedsSharedStateKey() bool {
	if s.Server.StateSealer != nil {
		return false
	}
	for _, t := range s.Tools {
		if t.asks != nil {
			return true
		}
	}
	for _, p := range s.Prompts {
		if p.asks != nil {
			return true
		}
	}
	return false
}

// minStateKey is the shortest request_state_key accepted: shorter keys
// can be guessed, and a guessed key lets a client forge answers.
const minStateKey = 16

func stateSealer(sv *config.Server, info *ServerInfo) hcl.Diagnostics {
	if sv == nil || sv.RequestStateKey == "" {
		return nil
	}
	if len(sv.RequestStateKey) < minStateKey {
		rng := sv.DeclRange
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "request_state_key too short",
			Detail:  fmt.Sprintf("request_state_key must be at least %d bytes; generate one with `openssl rand -base64 32`.", minStateKey),
			Subject: &rng}}
	}
	info.StateSealer = requeststate.NewSealer([]byte(sv.RequestStateKey), requeststate.DefaultTTL)
	return nil
}
