// Package schema turns a tool's params into a JSON Schema (draft 2020-12) and
// validates call arguments against it. Schemas are compiled once at load
// into a tree of checks, so a call pays for a walk over its arguments and
// nothing else. Error messages name the argument and the rule it broke, in
// words a model can act on.
//
// The compiled validator covers the keywords params produce and the common
// ones hand-written schemas use. A schema with keywords outside that set
// ($ref, anyOf, oneOf, allOf, not, if/then/else, ...) is validated by
// github.com/google/jsonschema-go instead, the SDK's own validator, within
// the bounds of bounds.go: every schema is checked for what could make
// validating against it unbounded before it is compiled.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpd/mcpd/engine/suggest"
)

// Validator checks one tool's arguments. It is immutable and safe for
// concurrent use.
type Validator struct {
	root     *node
	fallback *Bounded       // set when the schema needs the full validator
	defaults map[string]any // top-level defaults, for the fallback path
}

// node is one compiled (sub)schema.
type node struct {
	types     map[string]bool // empty: any type
	enum      []any
	constVal  *any
	min, max  *float64
	exMin     *float64
	exMax     *float64
	intBounds *[4]*int64 // min, max, exMin, exMax written as integers: exact for int64 arguments
	multOf    *float64
	minLen    int
	maxLen    int // -1: unbounded
	pattern   *regexp.Regexp
	format    string
	items     *node
	minItems  int
	maxItems  int // -1: unbounded
	unique    bool
	props     map[string]*node
	propOrder []string
	required  []string
	addl      *node // additional properties schema; nil with noAddl false: allowed
	noAddl    bool
	defaults  map[string]any
	// secret is set under "writeOnly": true (a sensitive param): its
	// messages name the rule broken but never the value.
	secret bool
}

// known are the keywords the compiled validator implements. Annotations
// (description, title, examples, ...) are accepted and ignored.
var known = map[string]bool{
	"type": true, "enum": true, "const": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "format": true,
	"items": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"properties": true, "required": true, "additionalProperties": true,
	"default": true, "description": true, "title": true, "examples": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true,
	"readOnly": true, "writeOnly": true, "contentMediaType": true, "contentEncoding": true,
}

// Compile compiles a JSON Schema given as decoded JSON. The root must be an
// object schema, as MCP requires of input schemas.
func Compile(s map[string]any) (*Validator, error) {
	if t, _ := s["type"].(string); t != "object" {
		return nil, fmt.Errorf(`the root of an input schema must have "type": "object"`)
	}
	g, err := buildGraph(s)
	if err != nil {
		return nil, err
	}
	if needsFallback(s) {
		res, err := resolveJS(s)
		if err != nil {
			return nil, err
		}
		defaults := map[string]any{}
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				if pm, ok := p.(map[string]any); ok {
					if d, ok := pm["default"]; ok {
						defaults[name] = d
					}
				}
			}
		}
		return &Validator{fallback: &Bounded{g: g, res: res}, defaults: defaults}, nil
	}
	n, err := compileNode(s, "")
	if err != nil {
		return nil, err
	}
	return &Validator{root: n}, nil
}

// resolveJS resolves s with jsonschema-go, the SDK's own validator.
func resolveJS(s map[string]any) (*jsonschema.Resolved, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(raw, &js); err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	res, err := js.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("invalid JSON Schema: %w", err)
	}
	return res, nil
}

func needsFallback(v any) bool {
	switch s := v.(type) {
	case map[string]any:
		for k, sub := range s {
			if !known[k] {
				return true
			}
			switch k {
			case "properties":
				if props, ok := sub.(map[string]any); ok {
					for _, p := range props {
						if needsFallback(p) {
							return true
						}
					}
				}
			case "items", "additionalProperties":
				if needsFallback(sub) {
					return true
				}
			}
		}
	case bool:
		return false
	}
	return false
}

func compileNode(v any, path string) (*node, error) {
	n := &node{maxLen: -1, maxItems: -1}
	if b, ok := v.(bool); ok {
		if !b {
			return nil, fmt.Errorf("%s: the schema false accepts nothing", where(path))
		}
		return n, nil
	}
	s, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: a schema must be an object, got %s", where(path), jsonTypeName(v))
	}
	var err error
	switch t := s["type"].(type) {
	case nil:
	case string:
		n.types = map[string]bool{t: true}
	case []any:
		n.types = map[string]bool{}
		for _, e := range t {
			es, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: type must be a string or a list of strings", where(path))
			}
			n.types[es] = true
		}
	default:
		return nil, fmt.Errorf("%s: type must be a string or a list of strings", where(path))
	}
	for t := range n.types {
		switch t {
		case "string", "integer", "number", "boolean", "array", "object", "null":
		default:
			return nil, fmt.Errorf("%s: unknown type %q", where(path), t)
		}
	}
	if e, ok := s["enum"]; ok {
		list, ok := e.([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("%s: enum must be a non-empty list", where(path))
		}
		n.enum = list
	}
	if c, ok := s["const"]; ok {
		n.constVal = &c
	}
	for _, f := range []struct {
		key string
		dst **float64
	}{{"minimum", &n.min}, {"maximum", &n.max}, {"exclusiveMinimum", &n.exMin}, {"exclusiveMaximum", &n.exMax}, {"multipleOf", &n.multOf}} {
		if *f.dst, err = numberKey(s, f.key, path); err != nil {
			return nil, err
		}
	}
	for i, key := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if b, ok := s[key].(int64); ok {
			if n.intBounds == nil {
				n.intBounds = new([4]*int64)
			}
			n.intBounds[i] = &b
		}
	}
	if n.multOf != nil && *n.multOf <= 0 {
		return nil, fmt.Errorf("%s: multipleOf must be greater than 0", where(path))
	}
	if n.minLen, err = countKey(s, "minLength", path, 0); err != nil {
		return nil, err
	}
	if n.maxLen, err = countKey(s, "maxLength", path, -1); err != nil {
		return nil, err
	}
	if p, ok := s["pattern"]; ok {
		ps, ok := p.(string)
		if !ok {
			return nil, fmt.Errorf("%s: pattern must be a string", where(path))
		}
		if n.pattern, err = compilePattern(ps); err != nil {
			return nil, fmt.Errorf("%s: invalid pattern %q: %v", where(path), ps, err)
		}
	}
	if f, ok := s["format"].(string); ok {
		n.format = f
	}
	if it, ok := s["items"]; ok {
		if n.items, err = compileNode(it, path+"[]"); err != nil {
			return nil, err
		}
	}
	if n.minItems, err = countKey(s, "minItems", path, 0); err != nil {
		return nil, err
	}
	if n.maxItems, err = countKey(s, "maxItems", path, -1); err != nil {
		return nil, err
	}
	n.unique, _ = s["uniqueItems"].(bool)
	if p, ok := s["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: properties must be an object", where(path))
		}
		n.props = make(map[string]*node, len(props))
		for name, ps := range props {
			if n.props[name], err = compileNode(ps, join(path, name)); err != nil {
				return nil, err
			}
			if pm, ok := ps.(map[string]any); ok {
				if d, ok := pm["default"]; ok {
					if n.defaults == nil {
						n.defaults = map[string]any{}
					}
					if err := n.props[name].check(d, join(path, name)); err != nil {
						return nil, fmt.Errorf("the default of %s does not satisfy its own schema: %v", join(path, name), err)
					}
					n.defaults[name] = d
				}
			}
			n.propOrder = append(n.propOrder, name)
		}
		sort.Strings(n.propOrder)
	}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: required must be a list of names", where(path))
		}
		for _, e := range list {
			name, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s: required must be a list of names", where(path))
			}
			n.required = append(n.required, name)
		}
	}
	switch a := s["additionalProperties"].(type) {
	case nil:
	case bool:
		n.noAddl = !a
	default:
		if n.addl, err = compileNode(a, join(path, "*")); err != nil {
			return nil, err
		}
	}
	if wo, _ := s["writeOnly"].(bool); wo {
		n.markSecret()
	}
	return n, nil
}

// patterns caches compiled patterns. Loading compiles a param's pattern
// three times (to check it, to check the param's default against its rules,
// and for the validator), and configs often repeat a pattern across tools. A
// *regexp.Regexp is safe for concurrent use. The cache is emptied when it
// reaches maxPatterns, so that reloads cannot grow it without bound.
var patterns struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

const maxPatterns = 4096

func compilePattern(p string) (*regexp.Regexp, error) {
	patterns.Lock()
	re, ok := patterns.m[p]
	patterns.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	patterns.Lock()
	if patterns.m == nil || len(patterns.m) >= maxPatterns {
		patterns.m = map[string]*regexp.Regexp{}
	}
	patterns.m[p] = re
	patterns.Unlock()
	return re, nil
}

func numberKey(s map[string]any, key, path string) (*float64, error) {
	v, ok := s[key]
	if !ok {
		return nil, nil
	}
	f, ok := toFloat(v)
	if !ok {
		return nil, fmt.Errorf("%s: %s must be a number", where(path), key)
	}
	return &f, nil
}

func countKey(s map[string]any, key, path string, def int) (int, error) {
	v, ok := s[key]
	if !ok {
		return def, nil
	}
	f, ok := toFloat(v)
	if !ok || f < 0 || f != math.Trunc(f) {
		return 0, fmt.Errorf("%s: %s must be a whole number ≥ 0", where(path), key)
	}
	return int(f), nil
}

// Validate decodes the raw arguments of a call, applies defaults and checks
// them. Absent or null arguments count as an empty object.
func (v *Validator) Validate(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(raw) > 0 && string(raw) != "null" {
		x, err := decodeJSON(raw)
		if err != nil {
			if re, ok := err.(*RangeError); ok {
				return nil, re
			}
			return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
		}
		m, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("arguments must be a JSON object, got %s", jsonTypeName(x))
		}
		args = m
	}
	return args, v.ValidateArgs(args)
}

// ValidateArgs applies defaults to args in place and checks them.
// Arguments nested more than MaxArgumentDepth levels deep are refused
// whatever the schema (see bounds.go).
func (v *Validator) ValidateArgs(args map[string]any) error {
	if p, deep := tooDeep(args); deep {
		return depthError(p)
	}
	if v.fallback != nil {
		for k, d := range v.defaults {
			if _, ok := args[k]; !ok {
				args[k] = d
			}
		}
		if err := v.fallback.Validate(args); err != nil {
			if errors.Is(err, ErrTooMuchWork) {
				return errArgsTooMuchWork
			}
			return err
		}
		return nil
	}
	return v.root.check(args, "")
}

// check validates x against n; path is where x sits, for messages.
func (n *node) check(x any, path string) error {
	if n.secret {
		return hideValue(n.checkValue(x, path), x, path)
	}
	return n.checkValue(x, path)
}

// notShown replaces a sensitive value in a message.
const notShown = "a value not shown (the param is sensitive)"

// hideValue rewrites the error of a sensitive value so that it says which
// rule was broken without the value: messages put the value last, after
// ", got " or, for formats, after ": ". Anything else that still holds
// the value gets a message with no detail at all.
func hideValue(err error, x any, path string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, notShown) {
		return err // an inner sensitive node's message, already rewritten
	}
	if i := strings.Index(msg, ", got "); i >= 0 {
		msg = msg[:i] + ", got " + notShown
	} else if p := what(path) + " must be "; strings.HasPrefix(msg, p) {
		if i := strings.Index(msg[len(p):], ": "); i >= 0 {
			msg = msg[:len(p)+i]
		}
	}
	if leaks(msg, x) {
		msg = what(path) + " is not valid; its value is not shown (the param is sensitive)"
	}
	return errors.New(msg)
}

// leaks reports whether msg holds a string (of 3 bytes or more) or an
// object key found in x.
func leaks(msg string, x any) bool {
	switch v := x.(type) {
	case string:
		return len(v) >= 3 && strings.Contains(msg, v)
	case []any:
		for _, e := range v {
			if leaks(msg, e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if leaks(msg, k) || leaks(msg, e) {
				return true
			}
		}
	}
	return false
}

// markSecret marks n and everything below it sensitive.
func (n *node) markSecret() {
	if n == nil || n.secret {
		return
	}
	n.secret = true
	n.items.markSecret()
	n.addl.markSecret()
	for _, p := range n.props {
		p.markSecret()
	}
}

func (n *node) checkValue(x any, path string) error {
	if len(n.types) > 0 && !n.typeOK(x) {
		return fmt.Errorf("%s must be %s, got %s", what(path), typeList(n.types), describe(x))
	}
	if n.constVal != nil && !equal(x, *n.constVal) {
		return fmt.Errorf("%s must be %s", what(path), show(*n.constVal))
	}
	if n.enum != nil {
		found := false
		for _, e := range n.enum {
			if equal(x, e) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s must be one of %s, got %s", what(path), showList(n.enum), show(x))
		}
	}
	switch val := x.(type) {
	case int64:
		return n.checkInt(val, path)
	case float64:
		if n.types["integer"] && !n.types["number"] && (val < -(1<<63) || val >= 1<<63) {
			return fmt.Errorf("%s is out of range: an integer must be between %d and %d, got %s", what(path), int64(math.MinInt64), int64(math.MaxInt64), num(val))
		}
		return n.checkNumber(val, path)
	case string:
		return n.checkString(val, path)
	case []any:
		return n.checkArray(val, path)
	case map[string]any:
		return n.checkObject(val, path)
	}
	return nil
}

func (n *node) typeOK(x any) bool {
	switch v := x.(type) {
	case nil:
		return n.types["null"]
	case bool:
		return n.types["boolean"]
	case string:
		return n.types["string"]
	case int64:
		return n.types["number"] || n.types["integer"]
	case float64:
		return n.types["number"] || (n.types["integer"] && v == math.Trunc(v) && !math.IsInf(v, 0))
	case []any:
		return n.types["array"]
	case map[string]any:
		return n.types["object"]
	}
	return false
}

func (n *node) checkNumber(v float64, path string) error {
	switch {
	case n.min != nil && v < *n.min:
		return fmt.Errorf("%s must be at least %s, got %s", what(path), num(*n.min), num(v))
	case n.max != nil && v > *n.max:
		return fmt.Errorf("%s must be at most %s, got %s", what(path), num(*n.max), num(v))
	case n.exMin != nil && v <= *n.exMin:
		return fmt.Errorf("%s must be greater than %s, got %s", what(path), num(*n.exMin), num(v))
	case n.exMax != nil && v >= *n.exMax:
		return fmt.Errorf("%s must be less than %s, got %s", what(path), num(*n.exMax), num(v))
	case n.multOf != nil:
		if q := v / *n.multOf; math.Abs(q-math.Round(q)) > 1e-9 {
			return fmt.Errorf("%s must be a multiple of %s, got %s", what(path), num(*n.multOf), num(v))
		}
	}
	return nil
}

// checkInt is checkNumber for integers, compared exactly: float64 bounds
// are converted to int64 when they are whole, so that a maximum of
// 9007199254740992 refuses 9007199254740993.
func (n *node) checkInt(v int64, path string) error {
	switch {
	case n.min != nil && n.cmpBound(v, 0, *n.min) < 0:
		return fmt.Errorf("%s must be at least %s, got %d", what(path), n.bound(0, *n.min), v)
	case n.max != nil && n.cmpBound(v, 1, *n.max) > 0:
		return fmt.Errorf("%s must be at most %s, got %d", what(path), n.bound(1, *n.max), v)
	case n.exMin != nil && n.cmpBound(v, 2, *n.exMin) <= 0:
		return fmt.Errorf("%s must be greater than %s, got %d", what(path), n.bound(2, *n.exMin), v)
	case n.exMax != nil && n.cmpBound(v, 3, *n.exMax) >= 0:
		return fmt.Errorf("%s must be less than %s, got %d", what(path), n.bound(3, *n.exMax), v)
	case n.multOf != nil:
		m := *n.multOf
		if m == math.Trunc(m) && m < 1<<63 {
			if v%int64(m) != 0 {
				return fmt.Errorf("%s must be a multiple of %s, got %d", what(path), num(m), v)
			}
			return nil
		}
		return n.checkNumber(float64(v), path)
	}
	return nil
}

// cmpBound compares v with bound i (see intBounds), exactly.
func (n *node) cmpBound(v int64, i int, f float64) int {
	if n.intBounds != nil && n.intBounds[i] != nil {
		b := *n.intBounds[i]
		switch {
		case v < b:
			return -1
		case v > b:
			return 1
		}
		return 0
	}
	return cmpIntFloat(v, f)
}

func (n *node) bound(i int, f float64) string {
	if n.intBounds != nil && n.intBounds[i] != nil {
		return strconv.FormatInt(*n.intBounds[i], 10)
	}
	return num(f)
}

// cmpIntFloat compares an int64 with a float64 exactly: -1, 0 or 1.
func cmpIntFloat(i int64, f float64) int {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= 1<<63:
		return -1
	case f < -(1 << 63):
		return 1
	}
	t := math.Trunc(f)
	ti := int64(t) // exact: t is whole and in range
	switch {
	case i < ti:
		return -1
	case i > ti:
		return 1
	case f > t:
		return -1
	case f < t:
		return 1
	}
	return 0
}

func (n *node) checkString(v string, path string) error {
	if n.minLen > 0 || n.maxLen >= 0 {
		l := utf8.RuneCountInString(v)
		if l < n.minLen {
			return fmt.Errorf("%s must be at least %d characters long, got %d", what(path), n.minLen, l)
		}
		if n.maxLen >= 0 && l > n.maxLen {
			return fmt.Errorf("%s must be at most %d characters long, got %d", what(path), n.maxLen, l)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(v) {
		return fmt.Errorf("%s must match the pattern %s, got %s", what(path), n.pattern.String(), show(v))
	}
	if n.format != "" {
		if err := checkFormat(n.format, v); err != nil {
			return fmt.Errorf("%s must be %s: %v", what(path), formatName(n.format), err)
		}
	}
	return nil
}

func (n *node) checkArray(v []any, path string) error {
	if len(v) < n.minItems {
		return fmt.Errorf("%s must have at least %d items, got %d", what(path), n.minItems, len(v))
	}
	if n.maxItems >= 0 && len(v) > n.maxItems {
		return fmt.Errorf("%s must have at most %d items, got %d", what(path), n.maxItems, len(v))
	}
	if n.items != nil {
		for i, e := range v {
			if err := n.items.check(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	if n.unique {
		for i := range v {
			for j := i + 1; j < len(v); j++ {
				if equal(v[i], v[j]) {
					return fmt.Errorf("%s must not repeat items: items %d and %d are equal", what(path), i, j)
				}
			}
		}
	}
	return nil
}

func (n *node) checkObject(v map[string]any, path string) error {
	for name, d := range n.defaults {
		if _, ok := v[name]; !ok {
			v[name] = deepCopy(d)
		}
	}
	// Every problem is reported, not only the first: a model that wrote
	// txt= for text must hear about both the unknown txt and the missing
	// text, or it fixes one and fails again.
	var problems []string
	if n.noAddl || n.addl != nil {
		var extra []string
		for name := range v {
			if _, ok := n.props[name]; !ok {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		for _, name := range extra {
			if n.noAddl {
				problems = append(problems, n.unknownProperty(name, path))
				continue
			}
			if err := n.addl.check(v[name], join(path, name)); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	var missing []string
	for _, r := range n.required {
		if _, ok := v[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		if path == "" {
			problems = append(problems, fmt.Sprintf("missing required argument%s %s", plural(len(missing)), quoteList(missing)))
		} else {
			problems = append(problems, fmt.Sprintf("%s is missing required propert%s %s", what(path), pluralY(len(missing)), quoteList(missing)))
		}
	}
	// Properties in a fixed order, so that the message is the same on
	// every call.
	for _, name := range n.propOrder {
		if x, ok := v[name]; ok {
			if err := n.props[name].check(x, join(path, name)); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	switch len(problems) {
	case 0:
		return nil
	case 1:
		return errors.New(problems[0])
	}
	return errors.New(strings.Join(problems, "; and "))
}

// unknownProperty is the message for a property the schema does not allow,
// naming the closest allowed one when it looks like a misspelling.
func (n *node) unknownProperty(name, path string) string {
	dym := ""
	if s := suggest.Closest(name, n.propOrder); s != "" {
		dym = fmt.Sprintf(" (did you mean %q?)", s)
	}
	if path == "" {
		return fmt.Sprintf("unknown argument %q%s; this tool takes %s", name, dym, quoteListOr(n.propOrder))
	}
	return fmt.Sprintf("%s has an unknown property %q%s; allowed: %s", what(path), name, dym, quoteListOr(n.propOrder))
}

func deepCopy(x any) any {
	switch v := x.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = deepCopy(e)
		}
		return s
	}
	return x
}

func equal(a, b any) bool {
	switch av := a.(type) {
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !equal(av[i], bv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, e := range av {
			if !equal(e, bv[k]) {
				return false
			}
		}
		return true
	}
	if ai, ok := a.(int64); ok {
		if bi, ok := b.(int64); ok {
			return ai == bi
		}
		if bf, ok := b.(float64); ok {
			return cmpIntFloat(ai, bf) == 0 && !math.IsNaN(bf)
		}
	}
	if bi, ok := b.(int64); ok {
		if af, ok := a.(float64); ok {
			return cmpIntFloat(bi, af) == 0 && !math.IsNaN(af)
		}
	}
	af, aNum := toFloat(a)
	bf, bNum := toFloat(b)
	if aNum || bNum {
		return aNum && bNum && af == bf
	}
	return a == b
}

func toFloat(x any) (float64, bool) {
	switch v := x.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func where(path string) string {
	if path == "" {
		return "schema"
	}
	return "schema of " + path
}

func what(path string) string {
	if path == "" {
		return "the arguments"
	}
	return "argument " + strconv.Quote(path)
}

func describe(x any) string {
	if x == nil {
		return "null"
	}
	return jsonTypeName(x) + " " + show(x)
}

func jsonTypeName(x any) string {
	switch v := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", x)
}

// show renders a value for a message, shortened so that a huge argument
// does not flood the model's context.
func show(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func showList(list []any) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = show(e)
	}
	return strings.Join(parts, ", ")
}

// num prints a number for a message: whole numbers in full up to 1e21
// (9007199254740992, not 9.007199254740992e+15).
func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return new(big.Float).SetFloat64(f).Text('f', 0)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func typeList(types map[string]bool) string {
	var names []string
	for t := range types {
		names = append(names, t)
	}
	sort.Strings(names)
	for i, t := range names {
		names[i] = article(t)
	}
	return strings.Join(names, " or ")
}

func article(t string) string {
	switch t {
	case "integer", "array", "object":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func quoteListOr(names []string) string {
	if len(names) == 0 {
		return "no arguments"
	}
	return quoteList(names)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}
