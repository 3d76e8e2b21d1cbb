package schema

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Bounds on schemas and on validating against them.
//
// A schema can come from a service mcpd does not control (an upstream MCP
// server's tools/list), and a JSON Schema can make a validator recurse
// without end: "$ref" cycles that consume no input ({"$ref": "#"} at the
// root), or "properties": {"x": {"$ref": "#"}} with arguments nested as
// deep as a request allows. Go's stack overflow is not a panic a recover
// catches: one call would end the process. So every schema is checked
// where it is read (CheckBounds, which Compile and CompileOutput run
// before anything else), and validation itself is bounded:
//
//   - a schema is at most MaxSchemaDepth levels deep and has at most
//     MaxSchemaNodes subschemas;
//   - its references resolve within the schema itself;
//   - no cycle of references and in-place keywords ($ref, allOf, anyOf,
//     oneOf, not, if/then/else, dependentSchemas) leads back to a schema
//     without descending into the value;
//   - the schemas one value is checked against before descending (that
//     expansion, repeats included) number at most MaxInPlace;
//   - arguments are nested at most MaxArgumentDepth levels below the
//     arguments object, and checking one call's arguments costs at most
//     MaxValidationWork schema applications (each weighed with the
//     values its enum and const compare with, and the items uniqueItems
//     compares), counted before the validator runs. Both are tool errors
//     that tell the model what to send instead.
const (
	MaxSchemaDepth    = 128
	MaxSchemaNodes    = 10_000
	MaxInPlace        = 1_000
	MaxArgumentDepth  = 64
	MaxValidationWork = 200_000
)

// BoundsError is a schema refused by CheckBounds: validating against it
// could be unbounded. Reason is a short word for counters ("cycle",
// "depth", "size", "expansion", "reference").
type BoundsError struct {
	Reason string
	Detail string
}

func (e *BoundsError) Error() string { return e.Detail }

// Unchecked reports whether the schema is refused only because mcpd cannot
// follow its references (one outside the schema, or an embedded resource
// with its own $id): it is no danger where nothing validates against it,
// as with an upstream's tool whose service validates its own arguments.
func (e *BoundsError) Unchecked() bool { return e.Reason == "reference" }

func boundsErr(reason, format string, args ...any) *BoundsError {
	msg := fmt.Sprintf(format, args...)
	if reason == "reference" {
		msg = "invalid JSON Schema: " + msg
	}
	return &BoundsError{Reason: reason, Detail: msg}
}

// IsBoundsError reports whether err (or what it wraps) is a *BoundsError,
// and returns it.
func IsBoundsError(err error) (*BoundsError, bool) {
	var be *BoundsError
	ok := errors.As(err, &be)
	return be, ok
}

// CheckBounds checks a schema given as decoded JSON for what could make
// validating against it unbounded (see the bounds above). It is the one
// check every schema mcpd takes in goes through: the author's (params,
// input_schema, output_schema), an upstream's listed tools, imported
// documents.
func CheckBounds(s any) error {
	_, err := buildGraph(s)
	return err
}

// CheckForm is CheckBounds for an elicitation's form (requestedSchema),
// which the SDK validates an answer against without mcpd's work bound:
// MCP forms are flat objects of primitive properties, so a form also may
// not refer to anything ($ref, $dynamicRef). Without references a schema
// is a tree, and checking a value against it costs at most its size for
// each part of the value.
func CheckForm(s any) error {
	g, err := buildGraph(s)
	if err != nil {
		return err
	}
	for _, n := range g.nodes {
		for _, k := range []string{"$ref", "$dynamicRef"} {
			if _, ok := n.m[k]; ok {
				return boundsErr("reference", "a form takes no references (%s at %s): it is a flat object of primitive properties", k, showPtr(n.ptr))
			}
		}
	}
	return nil
}

// graph is a schema as the validator walks it: each subschema a node,
// with the subschemas checked against the same value (in place) and those
// checked against its items or properties.
type graph struct {
	nodes   []*gnode
	byPtr   map[string]int // JSON pointer (canonical) -> node
	anchors map[string][]int
	dynamic map[string][]int // $dynamicAnchor -> nodes
	rootID  string
}

type gnode struct {
	ptr     string
	m       map[string]any // nil for a boolean schema
	inPlace []int          // repeats count: anyOf [a, a] checks a twice
	// What applies to the items or properties of the value.
	props                             map[string]int
	patterns                          []patternNode
	addl, unevalProps, propNames      int // -1: none
	prefix                            []int
	items, addItems, contains, uneval int // -1: none
	expansion                         int // in-place expansion, repeats included (capped)
	// cost is what applying the node costs beyond its subschemas: 1, and
	// the values its enum and const compare with.
	cost   int64
	unique bool // uniqueItems: applying it compares the items
}

type patternNode struct {
	re   *regexp.Regexp // nil: not a Go regexp; counted as applying to every property
	node int
}

func buildGraph(s any) (*graph, error) {
	g := &graph{byPtr: map[string]int{}, anchors: map[string][]int{}, dynamic: map[string][]int{}}
	if m, ok := s.(map[string]any); ok {
		g.rootID, _ = m["$id"].(string)
		g.rootID = strings.TrimSuffix(g.rootID, "#")
	}
	if _, err := g.walk(s, "", 1); err != nil {
		return nil, err
	}
	if err := g.link(); err != nil {
		return nil, err
	}
	if err := g.expand(); err != nil {
		return nil, err
	}
	return g, nil
}

// walk adds the schema s at ptr (depth: its JSON nesting level) and its
// subschemas.
func (g *graph) walk(s any, ptr string, depth int) (int, error) {
	if depth > MaxSchemaDepth {
		return -1, boundsErr("depth", "the schema is nested more than %d levels deep (at %s)", MaxSchemaDepth, showPtr(ptr))
	}
	if len(g.nodes) >= MaxSchemaNodes {
		return -1, boundsErr("size", "the schema has more than %d subschemas", MaxSchemaNodes)
	}
	m, isMap := s.(map[string]any)
	if _, isBool := s.(bool); !isMap && !isBool {
		// Not a schema: jsonschema-go refuses it when resolving. Nothing
		// below it is walked by a validator.
		return -1, nil
	}
	id := len(g.nodes)
	n := &gnode{ptr: ptr, m: m, addl: -1, unevalProps: -1, propNames: -1, items: -1, addItems: -1, contains: -1, uneval: -1, cost: 1}
	g.nodes = append(g.nodes, n)
	g.byPtr[ptr] = id
	if m == nil {
		return id, nil
	}
	if sid, ok := m["$id"].(string); ok && ptr != "" {
		if !strings.HasPrefix(sid, "#") {
			return -1, boundsErr("reference", "a subschema with its own $id (%q at %s) is not accepted: references are resolved within one schema", sid, showPtr(ptr))
		}
		g.anchors[sid[1:]] = append(g.anchors[sid[1:]], id) // draft-07's anchor form
	}
	if a, ok := m["$anchor"].(string); ok {
		g.anchors[a] = append(g.anchors[a], id)
	}
	if a, ok := m["$dynamicAnchor"].(string); ok {
		g.anchors[a] = append(g.anchors[a], id)
		g.dynamic[a] = append(g.dynamic[a], id)
	}
	one := func(key string) (int, error) {
		v, ok := m[key]
		if !ok {
			return -1, nil
		}
		return g.walk(v, ptr+"/"+escapePtr(key), depth+1)
	}
	list := func(key string) ([]int, error) {
		l, ok := m[key].([]any)
		if !ok {
			return nil, nil
		}
		var out []int
		for i, v := range l {
			c, err := g.walk(v, ptr+"/"+escapePtr(key)+"/"+strconv.Itoa(i), depth+2)
			if err != nil {
				return nil, err
			}
			if c >= 0 {
				out = append(out, c)
			}
		}
		return out, nil
	}
	named := func(key string, f func(name string, c int)) error {
		mm, ok := m[key].(map[string]any)
		if !ok {
			return nil
		}
		names := make([]string, 0, len(mm))
		for k := range mm {
			names = append(names, k)
		}
		sort.Strings(names) // node numbers, hence messages, the same on every load
		for _, k := range names {
			c, err := g.walk(mm[k], ptr+"/"+escapePtr(key)+"/"+escapePtr(k), depth+2)
			if err != nil {
				return err
			}
			if c >= 0 {
				f(k, c)
			}
		}
		return nil
	}
	var err error
	for _, k := range sortedKeys(m) {
		switch k {
		case "allOf", "anyOf", "oneOf":
			var l []int
			if l, err = list(k); err == nil {
				n.inPlace = append(n.inPlace, l...)
			}
		case "not", "if", "then", "else":
			var c int
			if c, err = one(k); err == nil && c >= 0 {
				n.inPlace = append(n.inPlace, c)
			}
		case "dependentSchemas", "dependencies":
			err = named(k, func(_ string, c int) { n.inPlace = append(n.inPlace, c) })
		case "$defs", "definitions":
			err = named(k, func(string, int) {})
		case "properties":
			n.props = map[string]int{}
			err = named(k, func(name string, c int) { n.props[name] = c })
		case "patternProperties":
			err = named(k, func(p string, c int) {
				re, rerr := regexp.Compile(p)
				if rerr != nil {
					re = nil
				}
				n.patterns = append(n.patterns, patternNode{re: re, node: c})
			})
		case "additionalProperties":
			n.addl, err = one(k)
		case "unevaluatedProperties":
			n.unevalProps, err = one(k)
		case "propertyNames":
			n.propNames, err = one(k)
		case "prefixItems":
			n.prefix, err = list(k)
		case "items":
			if _, isList := m[k].([]any); isList { // draft-07's tuple form
				n.prefix, err = list(k)
			} else {
				n.items, err = one(k)
			}
		case "additionalItems":
			n.addItems, err = one(k)
		case "contains":
			n.contains, err = one(k)
		case "unevaluatedItems":
			n.uneval, err = one(k)
		case "contentSchema":
			_, err = one(k)
		case "enum", "const":
			n.cost += int64(jsonSize(m[k]))
			if limit := MaxSchemaDepth - depth; jsonDepth(m[k], limit) > limit {
				err = boundsErr("depth", "the schema is nested more than %d levels deep (at %s)", MaxSchemaDepth, showPtr(ptr+"/"+escapePtr(k)))
			}
		case "uniqueItems":
			n.unique, _ = m[k].(bool)
		default:
			// A value that is not a schema (default, examples...): only
			// its depth matters.
			if limit := MaxSchemaDepth - depth; jsonDepth(m[k], limit) > limit {
				err = boundsErr("depth", "the schema is nested more than %d levels deep (at %s)", MaxSchemaDepth, showPtr(ptr+"/"+escapePtr(k)))
			}
		}
		if err != nil {
			return -1, err
		}
	}
	return id, nil
}

// link resolves every $ref and $dynamicRef into an in-place edge.
func (g *graph) link() error {
	for _, n := range g.nodes {
		if n.m == nil {
			continue
		}
		if ref, ok := n.m["$ref"].(string); ok {
			t, err := g.resolve(ref, n.ptr)
			if err != nil {
				return err
			}
			n.inPlace = append(n.inPlace, t)
		}
		if ref, ok := n.m["$dynamicRef"].(string); ok {
			// Where a dynamic reference lands depends on the schemas
			// being applied: count every schema it could land on.
			t, err := g.resolve(ref, n.ptr)
			if err != nil {
				return err
			}
			n.inPlace = append(n.inPlace, t)
			if i := strings.IndexByte(ref, '#'); i >= 0 {
				for _, d := range g.dynamic[ref[i+1:]] {
					if d != t {
						n.inPlace = append(n.inPlace, d)
					}
				}
			}
		}
	}
	return nil
}

// resolve finds the node a reference written at ptr names: a JSON
// pointer or an anchor, within this schema.
func (g *graph) resolve(ref, ptr string) (int, error) {
	base, frag, _ := strings.Cut(ref, "#")
	if base != "" && base != g.rootID {
		return -1, boundsErr("reference", "the reference %q (at %s) points outside the schema: only references within it (#...) are accepted", ref, showPtr(ptr))
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return -1, boundsErr("reference", "the reference %q (at %s) is not a valid URI fragment", ref, showPtr(ptr))
	}
	if frag == "" || strings.HasPrefix(frag, "/") {
		canon := ""
		if frag != "" {
			toks := strings.Split(frag[1:], "/")
			for i, t := range toks {
				toks[i] = escapePtr(strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
			}
			canon = "/" + strings.Join(toks, "/")
		}
		if t, ok := g.byPtr[canon]; ok {
			return t, nil
		}
		return -1, boundsErr("reference", "the reference %q (at %s) does not name a subschema of this schema", ref, showPtr(ptr))
	}
	switch ts := g.anchors[frag]; len(ts) {
	case 1:
		return ts[0], nil
	case 0:
		return -1, boundsErr("reference", "the reference %q (at %s) names no anchor of this schema", ref, showPtr(ptr))
	}
	return -1, boundsErr("reference", "the reference %q (at %s) names an anchor defined more than once", ref, showPtr(ptr))
}

// expand computes each node's in-place expansion and refuses cycles of
// in-place edges: those are checked against the same value again and
// again, without end.
func (g *graph) expand() error {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.nodes))
	var stack []int
	var visit func(id int) error
	visit = func(id int) error {
		color[id] = grey
		stack = append(stack, id)
		n := g.nodes[id]
		e := 1
		for _, c := range n.inPlace {
			switch color[c] {
			case grey:
				i := len(stack) - 1
				for stack[i] != c {
					i--
				}
				var path []string
				for _, s := range stack[i:] {
					path = append(path, showPtr(g.nodes[s].ptr))
				}
				path = append(path, showPtr(g.nodes[c].ptr))
				return boundsErr("cycle", "the schema refers to itself without descending into the value (%s): validating against it would never end", strings.Join(path, " → "))
			case white:
				if err := visit(c); err != nil {
					return err
				}
			}
			e += g.nodes[c].expansion
			if e > MaxInPlace {
				e = MaxInPlace + 1
			}
		}
		if e > MaxInPlace {
			return boundsErr("expansion", "the schema at %s applies more than %d subschemas to one value (through $ref, allOf, anyOf, oneOf...)", showPtr(n.ptr), MaxInPlace)
		}
		n.expansion = e
		stack = stack[:len(stack)-1]
		color[id] = black
		return nil
	}
	for id := range g.nodes {
		if color[id] == white {
			if err := visit(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// tooDeep returns the path of a value of x nested more than
// MaxArgumentDepth levels below x, or "".
func tooDeep(x any) (string, bool) {
	return deepPath(x, 0)
}

func deepPath(x any, depth int) (string, bool) {
	switch v := x.(type) {
	case map[string]any:
		if depth >= MaxArgumentDepth && len(v) > 0 {
			return "", true
		}
		for k, e := range v {
			if p, deep := deepPath(e, depth+1); deep {
				if p == "" {
					return k, true
				}
				if p[0] == '[' {
					return k + p, true
				}
				return k + "." + p, true
			}
		}
	case []any:
		if depth >= MaxArgumentDepth && len(v) > 0 {
			return "", true
		}
		for i, e := range v {
			if p, deep := deepPath(e, depth+1); deep {
				if p != "" && p[0] != '[' {
					p = "." + p
				}
				return "[" + strconv.Itoa(i) + "]" + p, true
			}
		}
	}
	return "", false
}

// depthError is the tool error for arguments nested too deep.
func depthError(path string) error {
	if path == "" {
		return fmt.Errorf("the arguments are nested more than %d levels deep; send flatter arguments", MaxArgumentDepth)
	}
	return fmt.Errorf("%s is nested more than %d levels deep below the arguments; send flatter arguments (at most %d levels of objects and arrays)", what(path), MaxArgumentDepth, MaxArgumentDepth)
}

// errArgsTooMuchWork is ErrTooMuchWork for a call's arguments.
var errArgsTooMuchWork = fmt.Errorf("the arguments are too large to check against this tool's schema (more than %d schema checks): send fewer or smaller values", MaxValidationWork)

// work counts the schema applications checking x against the root
// costs, the way jsonschema-go applies them (counting both branches of
// if/then/else and every schema a dynamic reference could land on), and
// fails once they pass MaxValidationWork. The count is made before the
// validator runs, so that a schema whose checks multiply with the depth
// of the value (anyOf of two branches that both recurse) is refused in
// time proportional to the bound, never run.
func (g *graph) work(x any) error {
	budget := int64(MaxValidationWork)
	return g.apply(x, map[int]int64{0: 1}, &budget)
}

func (g *graph) apply(x any, set map[int]int64, budget *int64) error {
	type item struct {
		id int
		c  int64
	}
	var applied []item
	var stack []item
	for id, c := range set {
		stack = append(stack, item{id, c})
	}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := g.nodes[it.id]
		cost := n.cost
		if a, ok := x.([]any); ok && n.unique {
			cost += int64(len(a))
		}
		*budget -= it.c * cost
		if *budget < 0 {
			return ErrTooMuchWork
		}
		applied = append(applied, it)
		for _, c := range n.inPlace {
			stack = append(stack, item{c, it.c})
		}
	}
	add := func(next map[int]int64, id int, c int64) {
		if id >= 0 {
			next[id] = min(next[id]+c, MaxValidationWork+1)
		}
	}
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			next := map[int]int64{}
			for _, it := range applied {
				n := g.nodes[it.id]
				matched := false
				if p, ok := n.props[k]; ok {
					add(next, p, it.c)
					matched = true
				}
				for _, p := range n.patterns {
					if p.re == nil || p.re.MatchString(k) {
						add(next, p.node, it.c)
						matched = true
					}
				}
				if !matched {
					add(next, n.addl, it.c)
				}
				add(next, n.unevalProps, it.c)
				if n.propNames >= 0 {
					// The name is a string: nothing below it.
					*budget -= it.c * int64(g.nodes[n.propNames].expansion)
					if *budget < 0 {
						return ErrTooMuchWork
					}
				}
			}
			if len(next) > 0 {
				if err := g.apply(e, next, budget); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, e := range v {
			next := map[int]int64{}
			for _, it := range applied {
				n := g.nodes[it.id]
				if i < len(n.prefix) {
					add(next, n.prefix[i], it.c)
				} else {
					add(next, n.addItems, it.c)
				}
				add(next, n.items, it.c)
				add(next, n.contains, it.c)
				add(next, n.uneval, it.c)
			}
			if len(next) > 0 {
				if err := g.apply(e, next, budget); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Bounded is a jsonschema-go schema with the bounds above: Validate
// counts the work its checks cost before the validator runs. (That count
// bounds the validator's recursion too: it never goes deeper than the
// schemas it applies.)
type Bounded struct {
	g   *graph
	res *jsonschema.Resolved
}

// ErrTooMuchWork is Bounded.Validate's error for a value whose checks
// would cost more than MaxValidationWork schema applications.
var ErrTooMuchWork = fmt.Errorf("the value is too large to check against the schema (more than %d schema checks)", MaxValidationWork)

// Validate checks x against the schema: a JSON value as encoding/json
// decodes it.
func (b *Bounded) Validate(x any) error {
	if err := b.g.work(x); err != nil {
		return err
	}
	return b.res.Validate(x)
}

// CompileOutput resolves an output schema (any JSON Schema that
// jsonschema-go resolves), after CheckBounds.
func CompileOutput(s map[string]any) (*Bounded, error) {
	g, err := buildGraph(s)
	if err != nil {
		return nil, err
	}
	res, err := resolveJS(s)
	if err != nil {
		return nil, err
	}
	return &Bounded{g: g, res: res}, nil
}

// jsonDepth is the nesting level of x (1 for a scalar), counted up to
// limit+1 at most.
func jsonDepth(x any, limit int) int {
	if limit <= 0 {
		return 1
	}
	d := 0
	switch v := x.(type) {
	case map[string]any:
		for _, e := range v {
			d = max(d, jsonDepth(e, limit-1))
			if d >= limit {
				break
			}
		}
	case []any:
		for _, e := range v {
			d = max(d, jsonDepth(e, limit-1))
			if d >= limit {
				break
			}
		}
	}
	return d + 1
}

// jsonSize is the number of values in x, counted up to
// MaxValidationWork+1 at most.
func jsonSize(x any) int {
	n := 1
	switch v := x.(type) {
	case map[string]any:
		for _, e := range v {
			if n += jsonSize(e); n > MaxValidationWork {
				return n
			}
		}
	case []any:
		for _, e := range v {
			if n += jsonSize(e); n > MaxValidationWork {
				return n
			}
		}
	}
	return n
}

func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func showPtr(ptr string) string { return "#" + ptr }

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
