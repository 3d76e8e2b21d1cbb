package schema

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
)

// FromParams builds a tool's input schema from its param blocks. Every value
// is checked where it is written: a bad pattern, a default that breaks its
// own param's rules or an enum of the wrong type is a diagnostic on that
// attribute. Unknown arguments are refused (additionalProperties: false), so
// a model that misspells a param hears about it instead of being ignored.
func FromParams(params []*config.Param, ectx *hcl.EvalContext) (map[string]any, hcl.Diagnostics) {
	props := map[string]any{}
	required := []any{}
	var diags hcl.Diagnostics
	for _, p := range params {
		if p.FromCaller != nil {
			// Bound from the caller (see CallerParams): not the model's to
			// see or set.
			continue
		}
		s, d := paramSchema(p, ectx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		props[p.Name] = s
		req := p.Default == nil
		if p.Required != nil {
			req = *p.Required
		}
		if req && p.Default != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Required param with a default",
				Detail:   fmt.Sprintf("param %q has a default, so it cannot be required; drop one of them.", p.Name),
				Subject:  &p.Default.Range,
			})
		}
		if req {
			required = append(required, p.Name)
		}
	}
	out := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, diags
}

func paramSchema(p *config.Param, ectx *hcl.EvalContext) (map[string]any, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	s := map[string]any{}
	if p.Nullable {
		s["type"] = []any{p.Type, "null"}
	} else {
		s["type"] = p.Type
	}
	if p.Title != "" {
		s["title"] = p.Title
	}
	if p.Description != "" {
		s["description"] = p.Description
	}
	if p.Format != "" {
		s["format"] = p.Format
	}
	if p.UniqueItems {
		s["uniqueItems"] = true
	}
	if p.Sensitive != nil {
		// No JSON Schema keyword says "secret"; writeOnly ("sent, never
		// returned", as OpenAPI marks passwords) is the closest, and it is
		// what the validator and the snapshot read back.
		v, d := exactValue(p.Sensitive, ectx)
		diags = append(diags, d...)
		if b, ok := v.(bool); ok && b {
			s["writeOnly"] = true
		} else if !ok && !d.HasErrors() {
			diags = append(diags, attrError(p.Sensitive, "Invalid sensitive", "sensitive must be true or false"))
		}
	}
	attrs := []struct {
		attr *hcl.Attribute
		key  string
	}{
		{p.Enum, "enum"}, {p.Minimum, "minimum"}, {p.Maximum, "maximum"},
		{p.ExclusiveMinimum, "exclusiveMinimum"}, {p.ExclusiveMaximum, "exclusiveMaximum"},
		{p.MinLength, "minLength"}, {p.MaxLength, "maxLength"}, {p.Pattern, "pattern"},
		{p.MinItems, "minItems"}, {p.MaxItems, "maxItems"}, {p.Items, "items"},
		{p.Properties, "properties"}, {p.Examples, "examples"},
	}
	for _, a := range attrs {
		if a.attr == nil {
			continue
		}
		v, d := exactValue(a.attr, ectx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		switch a.key {
		case "items":
			v = keywords(v)
		case "properties":
			v = properties(v)
		case "pattern":
			ps, ok := v.(string)
			if !ok {
				diags = append(diags, attrError(a.attr, "Invalid pattern", "pattern must be a string"))
				continue
			}
			if _, err := compilePattern(ps); err != nil {
				diags = append(diags, attrError(a.attr, "Invalid pattern", fmt.Sprintf("param %q: %v", p.Name, err)))
				continue
			}
		}
		s[a.key] = v
	}
	if diags.HasErrors() {
		return nil, diags
	}
	// The same diagnostic as the config's own check of a tool's params
	// (the loader counts them as one mistake); an ask's fields are only
	// checked here.
	if d := config.ParamTypeError(p); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	// Compile the param's own schema to check it, and its default against it.
	n, err := compileNode(s, p.Name)
	if err != nil {
		rng := p.DeclRange
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid param", Detail: err.Error(), Subject: &rng}}
	}
	if n.enum != nil {
		for _, e := range n.enum {
			probe := *n
			probe.enum = nil
			if err := probe.check(e, p.Name); err != nil {
				diags = append(diags, attrError(p.Enum, "Invalid enum value", err.Error()))
			}
		}
	}
	if p.Default != nil {
		d, dd := exactValue(p.Default, ectx)
		diags = append(diags, dd...)
		if !dd.HasErrors() {
			if err := n.check(d, p.Name); err != nil {
				diags = append(diags, attrError(p.Default, "Invalid default", "the default does not satisfy the param's own rules: "+err.Error()))
			} else {
				s["default"] = d
			}
		}
	}
	return s, diags
}

// StaticValue evaluates an attribute that must be known at load time and
// returns it as a JSON-style Go value. Whole numbers come back as float64,
// as JSON decoding would give them.
func StaticValue(a *hcl.Attribute, ectx *hcl.EvalContext) (any, hcl.Diagnostics) {
	v, diags := a.Expr.Value(ectx)
	if diags.HasErrors() {
		return nil, diags
	}
	g, err := adapter.ToGo(v)
	if err != nil {
		return nil, hcl.Diagnostics{attrError(a, "Invalid value", err.Error())}
	}
	return normalize(g), nil
}

// exactValue is StaticValue keeping whole numbers that fit as int64, so
// that an enum or a default of 9007199254740993 stays that number (the
// validator compares int64 and float64 exactly).
func exactValue(a *hcl.Attribute, ectx *hcl.EvalContext) (any, hcl.Diagnostics) {
	v, diags := a.Expr.Value(ectx)
	if diags.HasErrors() {
		return nil, diags
	}
	g, err := adapter.ToGo(v)
	if err != nil {
		return nil, hcl.Diagnostics{attrError(a, "Invalid value", err.Error())}
	}
	return g, nil
}

// JSONValue evaluates an attribute holding JSON: either a string of JSON
// (jsonencode(...) or a heredoc) or an HCL object. Whole numbers that fit
// are int64, as in arguments.
func JSONValue(a *hcl.Attribute, ectx *hcl.EvalContext) (map[string]any, hcl.Diagnostics) {
	v, diags := exactValue(a, ectx)
	if diags.HasErrors() {
		return nil, diags
	}
	if s, ok := v.(string); ok {
		// decodeJSON keeps numbers exact, as arguments are: an enum of
		// 9007199254740993 must not become ...992.
		x, err := decodeJSON([]byte(s))
		if err != nil {
			return nil, hcl.Diagnostics{attrError(a, "Invalid JSON", err.Error())}
		}
		v = x
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, hcl.Diagnostics{attrError(a, "Invalid schema", "a JSON Schema must be an object")}
	}
	return m, nil
}

// normalize makes numbers float64, as JSON decoding does, so that values from
// HCL and values from a client compare equal.
func normalize(x any) any {
	switch v := x.(type) {
	case int64:
		return float64(v)
	case []any:
		for i := range v {
			v[i] = normalize(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = normalize(v[k])
		}
	}
	return x
}

// keywords converts a schema written in HCL's snake_case (min_length) to
// JSON Schema's camelCase (minLength), recursing into nested schemas but not
// into property names.
func keywords(x any) any {
	m, ok := x.(map[string]any)
	if !ok {
		return x
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		key := camel(k)
		switch key {
		case "items", "additionalProperties":
			v = keywords(v)
		case "properties":
			v = properties(v)
		}
		out[key] = v
	}
	return out
}

func properties(x any) any {
	m, ok := x.(map[string]any)
	if !ok {
		return x
	}
	out := make(map[string]any, len(m))
	for name, v := range m {
		out[name] = keywords(v)
	}
	return out
}

func camel(s string) string {
	if !strings.Contains(s, "_") || strings.HasPrefix(s, "$") {
		return s
	}
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

func attrError(a *hcl.Attribute, summary, detail string) *hcl.Diagnostic {
	rng := a.Expr.Range()
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}
}
