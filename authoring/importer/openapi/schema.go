package openapi

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/getkin/kin-openapi/openapi3"
)

// direction says which side of the API a schema describes: readOnly
// properties are left out of requests and writeOnly ones out of responses,
// as OpenAPI defines them.
type direction int

const (
	request direction = iota
	response
)

// maxDepth bounds how deep nested schemas are expanded: recursive schemas
// (a tree of nodes) are cut there, and what lies below is left open ({}).
const maxDepth = 12

// schemaConv turns OpenAPI schemas, with their $refs resolved by the
// loader, into self-contained JSON Schema 2020-12 objects (JSON Schema
// keywords, camelCase) that mcpd's params and output_schema accept.
type schemaConv struct {
	is31  bool
	dir   direction
	where string // for the report
	cut   []string
	drops []string
}

// convert returns the JSON Schema of ref, or nil for "anything".
func (c *schemaConv) convert(ref *openapi3.SchemaRef) map[string]any {
	return c.conv(ref, nil, 0)
}

func (c *schemaConv) conv(ref *openapi3.SchemaRef, stack []*openapi3.Schema, depth int) map[string]any {
	if ref == nil || ref.Value == nil {
		return map[string]any{}
	}
	s := ref.Value
	for _, p := range stack {
		if p == s {
			c.cut = append(c.cut, refName(ref))
			return map[string]any{}
		}
	}
	if depth > maxDepth {
		c.cut = append(c.cut, refName(ref))
		return map[string]any{}
	}
	if s.Always != nil {
		if *s.Always {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	}
	stack = append(stack, s)
	out := map[string]any{}
	if len(s.AllOf) > 0 {
		// allOf is how OpenAPI documents write inheritance (Pet = NewPet +
		// id): merged into one schema when the parts are objects, which
		// keeps the result readable and within what params express.
		if merged, ok := c.mergeAllOf(s, stack, depth); ok {
			out = merged
		} else {
			out["allOf"] = c.list(s.AllOf, stack, depth)
		}
	}
	types := s.Type.Slice()
	if len(types) == 0 {
		switch {
		case len(s.Properties) > 0 || s.AdditionalProperties.Schema != nil:
			types = []string{"object"}
		case s.Items != nil:
			types = []string{"array"}
		}
	}
	if s.Nullable && !c.is31 && len(types) > 0 && !contains(types, "null") {
		types = append(append([]string(nil), types...), "null")
	}
	switch len(types) {
	case 0:
	case 1:
		out["type"] = types[0]
	default:
		l := make([]any, len(types))
		for i, t := range types {
			l[i] = t
		}
		out["type"] = l
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if len(s.Enum) > 0 {
		enum := cloneList(s.Enum)
		if contains(types, "null") && !containsNil(enum) {
			// A nullable enum: JSON Schema checks null against the enum
			// too, where OpenAPI 3.0's nullable let it through.
			enum = append(enum, nil)
		}
		out["enum"] = enum
	}
	if s.Const != nil {
		out["const"] = s.Const
	}
	if s.Min != nil {
		if s.ExclusiveMin.IsTrue() {
			out["exclusiveMinimum"] = *s.Min
		} else {
			out["minimum"] = *s.Min
		}
	}
	if s.ExclusiveMin.Value != nil {
		out["exclusiveMinimum"] = *s.ExclusiveMin.Value
	}
	if s.Max != nil {
		if s.ExclusiveMax.IsTrue() {
			out["exclusiveMaximum"] = *s.Max
		} else {
			out["maximum"] = *s.Max
		}
	}
	if s.ExclusiveMax.Value != nil {
		out["exclusiveMaximum"] = *s.ExclusiveMax.Value
	}
	if s.MultipleOf != nil {
		out["multipleOf"] = *s.MultipleOf
	}
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Pattern != "" {
		// OpenAPI patterns are ECMA-262 regular expressions; mcpd compiles
		// Go's RE2, which lacks lookarounds and backreferences. A pattern
		// RE2 refuses is dropped (the value is then not checked by it).
		if p := re2Pattern(s.Pattern); p != "" {
			out["pattern"] = p
		} else {
			c.drops = append(c.drops, fmt.Sprintf("pattern %q (not an RE2 regular expression)", s.Pattern))
		}
	}
	if s.MinItems > 0 {
		out["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	if s.UniqueItems {
		out["uniqueItems"] = true
	}
	if s.Items != nil {
		out["items"] = c.conv(s.Items, stack, depth+1)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			if p.Value != nil && ((c.dir == request && p.Value.ReadOnly) || (c.dir == response && p.Value.WriteOnly)) {
				continue
			}
			props[name] = c.conv(p, stack, depth+1)
		}
		if prev, ok := out["properties"].(map[string]any); ok {
			for k, v := range props {
				prev[k] = v
			}
			props = prev
		}
		out["properties"] = props
	}
	if req := c.required(s, out); len(req) > 0 {
		out["required"] = req
	}
	if s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has {
		out["additionalProperties"] = false
	} else if s.AdditionalProperties.Schema != nil {
		out["additionalProperties"] = c.conv(s.AdditionalProperties.Schema, stack, depth+1)
	}
	if len(s.OneOf) > 0 {
		out["oneOf"] = c.list(s.OneOf, stack, depth)
	}
	if len(s.AnyOf) > 0 {
		out["anyOf"] = c.list(s.AnyOf, stack, depth)
	}
	if s.Not != nil {
		out["not"] = c.conv(s.Not, stack, depth+1)
	}
	if s.Default != nil && defaultFits(s.Default, out) {
		out["default"] = s.Default
	} else if s.Default != nil {
		c.drops = append(c.drops, fmt.Sprintf("default %v (it breaks the schema's own rules)", s.Default))
	}
	if s.WriteOnly && c.dir == request {
		out["writeOnly"] = true
	}
	return out
}

// required lists the schema's required properties that are kept.
func (c *schemaConv) required(s *openapi3.Schema, out map[string]any) []any {
	props, _ := out["properties"].(map[string]any)
	var req []any
	seen := map[string]bool{}
	if prev, ok := out["required"].([]any); ok {
		for _, r := range prev {
			seen[r.(string)] = true
			req = append(req, r)
		}
	}
	for _, r := range s.Required {
		if _, ok := props[r]; (ok || props == nil) && !seen[r] {
			seen[r] = true
			req = append(req, r)
		}
	}
	return req
}

func (c *schemaConv) list(refs openapi3.SchemaRefs, stack []*openapi3.Schema, depth int) []any {
	out := make([]any, 0, len(refs))
	for _, r := range refs {
		out = append(out, c.conv(r, stack, depth+1))
	}
	return out
}

// mergeAllOf merges allOf parts that are plain objects (properties,
// required, description) into one; it reports false when a part uses
// something else, and allOf is then kept as it is.
func (c *schemaConv) mergeAllOf(s *openapi3.Schema, stack []*openapi3.Schema, depth int) (map[string]any, bool) {
	props := map[string]any{}
	var req []any
	seen := map[string]bool{}
	desc := ""
	for _, part := range s.AllOf {
		m := c.conv(part, stack, depth+1)
		for k := range m {
			switch k {
			case "type", "properties", "required", "description", "additionalProperties":
			default:
				return nil, false
			}
		}
		if t, ok := m["type"]; ok && t != "object" {
			return nil, false
		}
		if p, ok := m["properties"].(map[string]any); ok {
			for k, v := range p {
				props[k] = v
			}
		}
		if r, ok := m["required"].([]any); ok {
			for _, n := range r {
				if !seen[n.(string)] {
					seen[n.(string)] = true
					req = append(req, n)
				}
			}
		}
		if d, ok := m["description"].(string); ok && desc == "" {
			desc = d
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		out["required"] = req
	}
	if desc != "" {
		out["description"] = desc
	}
	return out, true
}

// defaultFits reports whether a default satisfies its schema's enum and
// type: mcpd checks every default at load, and documents do get them
// wrong.
func defaultFits(v any, s map[string]any) bool {
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if reflect.DeepEqual(e, v) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	}
	if len(types) == 0 {
		return true
	}
	for _, t := range types {
		if valueIs(v, t) {
			return true
		}
	}
	return false
}

func valueIs(v any, t string) bool {
	switch t {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "number":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func refName(ref *openapi3.SchemaRef) string {
	if ref.Ref != "" {
		return ref.Ref
	}
	return "an inline schema"
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func cloneList(l []any) []any { return append([]any(nil), l...) }

// ecmaEscape is an ECMA-262 \uXXXX escape, which RE2 writes \x{XXXX}.
var ecmaEscape = regexp.MustCompile(`(^|[^\\])((?:\\\\)*)\\u([0-9A-Fa-f]{4})`)

// re2Pattern returns an OpenAPI (ECMA-262) pattern as an RE2 one, or ""
// when RE2 cannot express it.
func re2Pattern(p string) string {
	if _, err := regexp.Compile(p); err == nil {
		return p
	}
	// Applied twice: a match consumes the character before the escape,
	// which may end the previous escape.
	q := ecmaEscape.ReplaceAllString(p, `${1}${2}\x{$3}`)
	q = ecmaEscape.ReplaceAllString(q, `${1}${2}\x{$3}`)
	if _, err := regexp.Compile(q); err == nil {
		return q
	}
	return ""
}

func containsNil(l []any) bool {
	for _, x := range l {
		if x == nil {
			return true
		}
	}
	return false
}
