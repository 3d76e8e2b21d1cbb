package shape

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/mcpd/mcpd/engine/sizes"
)

// The limits of one evaluation of one expression. A result expression runs
// on every call with the client's arguments, and Go cannot recover from
// running out of memory: `repeat(args.s, args.n)` asking for a terabyte
// ends the process for every client. So everything an expression builds is
// paid for from a budget before it is allocated, and the call fails with a
// tool error naming the limit instead.
const (
	// MaxBuiltBytes bounds the bytes of text and arrays that the built-in
	// functions and `+` build in one evaluation, all calls together.
	MaxBuiltBytes = sizes.MaxBuilt
	// MaxIterations bounds the iterations of map, filter, reduce and the
	// other predicate built-ins in one evaluation, nested loops counted in
	// full: `map(args.a, map(args.a, #))` is len(a)² of them.
	MaxIterations = 1_000_000
	// MaxResultBytes bounds the (estimated JSON) size of an expression's
	// value. An array of a million references to one large argument costs
	// little to build but a terabyte to encode.
	MaxResultBytes = 64 << 20
)

// budgetVar is the variable through which an evaluation's budget reaches
// the metered functions: the compile step adds it as their first argument.
// Names starting with `$mcpd` are reserved: compile rejects an expression
// that writes one itself.
const budgetVar = "$mcpd_budget"

// elemBytes is what one element of an array or map costs (an interface
// value), so that arrays and text share one budget.
const elemBytes = 16

// budget is the state of one evaluation.
type budget struct {
	built      int
	iterations int
}

func (b *budget) spend(fn string, n int) error {
	if n < 0 || n > MaxBuiltBytes-b.built {
		return fmt.Errorf("%s would build %s, over the limit of %s that one expression may build (MaxBuiltBytes)", fn, sizes.Text(n), sizes.Text(MaxBuiltBytes))
	}
	b.built += n
	return nil
}

// costs says, for every built-in that allocates in proportion to its
// arguments, what a call will build, from its arguments, before it runs.
// The loop built-ins (map, filter, ...) are bounded by MaxIterations
// instead; the others (len, abs, indexOf, trim, ...) allocate nothing
// that grows with their arguments.
var costs = map[string]func(args []any) int{
	"repeat": func(a []any) int {
		s, _ := a[0].(string)
		return sizes.Mul(len(s), runtime.ToInt(a[1]))
	},
	"replace": func(a []any) int {
		s, _ := a[0].(string)
		old, _ := a[1].(string)
		repl, _ := a[2].(string)
		n := strings.Count(s, old)
		if len(a) == 4 {
			if m := runtime.ToInt(a[3]); m >= 0 && m < n {
				n = m
			}
		}
		return len(s) + sizes.Mul(n, len(repl))
	},
	"join": func(a []any) int {
		glue := ""
		if len(a) == 2 {
			glue, _ = a[1].(string)
		}
		n := 0
		switch l := a[0].(type) {
		case []any:
			for _, e := range l {
				s, _ := e.(string)
				n += len(s)
			}
			return n + sizes.Mul(len(l), len(glue))
		case []string:
			for _, s := range l {
				n += len(s)
			}
			return n + sizes.Mul(len(l), len(glue))
		}
		return 0
	},
	"string":     func(a []any) int { return size(a[0], MaxBuiltBytes+1) },
	"toJSON":     func(a []any) int { return size(a[0], MaxBuiltBytes+1) },
	"flatten":    func(a []any) int { return sizes.Mul(leaves(a[0], MaxBuiltBytes/elemBytes+1), elemBytes) },
	"concat":     func(a []any) int { return sumLens(a) },
	"upper":      strLen,
	"lower":      strLen,
	"toBase64":   func(a []any) int { return sizes.Mul(strLen(a), 2) },
	"fromBase64": strLen,
	"fromJSON":   func(a []any) int { return sizes.Mul(strLen(a), elemBytes) },
	"split":      splitCost,
	"splitAfter": splitCost,
	"keys":       firstLen,
	"values":     firstLen,
	"toPairs":    func(a []any) int { return sizes.Mul(firstLen(a), 3) },
	"fromPairs":  firstLen,
	"reverse":    firstLen,
	"uniq":       firstLen,
	"sort":       firstLen,
	"median":     firstLen,
	"take":       firstLen,
}

func strLen(a []any) int {
	s, _ := a[0].(string)
	return len(s)
}

func splitCost(a []any) int {
	s, _ := a[0].(string)
	sep, _ := a[1].(string)
	n := strings.Count(s, sep) + 1
	if len(a) == 3 {
		if m := runtime.ToInt(a[2]); m >= 0 && m < n {
			n = m
		}
	}
	if sep == "" {
		n = utf8.RuneCountInString(s)
	}
	return len(s) + sizes.Mul(n, elemBytes)
}

func lenOf(v any) int {
	switch v := v.(type) {
	case []any:
		return len(v)
	case map[string]any:
		return len(v)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map || rv.Kind() == reflect.Array {
		return rv.Len()
	}
	return 0
}

func firstLen(a []any) int { return sizes.Mul(lenOf(a[0]), elemBytes) }

func sumLens(a []any) int {
	n := 0
	for _, v := range a {
		n += lenOf(v)
		if n > MaxBuiltBytes {
			break
		}
	}
	return sizes.Mul(n, elemBytes)
}

// leaves counts the elements flatten makes of v, stopping past limit.
func leaves(v any, limit int) int {
	var l []any
	switch v := v.(type) {
	case []any:
		l = v
	case string, float64, int, bool, nil, map[string]any:
		return 1
	default:
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return 1
		}
		if k := rv.Type().Elem().Kind(); k != reflect.Interface && k != reflect.Slice && k != reflect.Array {
			return rv.Len()
		}
		for i := range rv.Len() {
			l = append(l, rv.Index(i).Interface())
			if len(l) > limit {
				return len(l)
			}
		}
	}
	n := 0
	for _, e := range l {
		n += leaves(e, limit-n)
		if n > limit {
			return n
		}
	}
	return n
}

// size estimates the JSON size of v, stopping as soon as it passes limit,
// so that it costs at most limit/elemBytes steps whatever v shares.
func size(v any, limit int) int {
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			n += len(v) + 2
		case []any:
			for _, e := range v {
				n += 1
				if n > limit || !walk(e) {
					return false
				}
			}
			n += 2
		case map[string]any:
			for k, e := range v {
				n += len(k) + 4
				if n > limit || !walk(e) {
					return false
				}
			}
			n += 2
		case []string:
			for _, e := range v {
				n += len(e) + 3
				if n > limit {
					return false
				}
			}
		default:
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array:
				for i := 0; i < rv.Len(); i++ {
					n++
					if n > limit || !walk(rv.Index(i).Interface()) {
						return false
					}
				}
			case reflect.Map:
				it := rv.MapRange()
				for it.Next() {
					n += 4
					if n > limit || !walk(it.Key().Interface()) || !walk(it.Value().Interface()) {
						return false
					}
				}
			default:
				n += 8
			}
		}
		return n <= limit
	}
	walk(v)
	return n
}

// meteredFunctions is the table of functions that replace expr's
// allocating built-ins (and `+` and loop bodies, see meter): each pays for
// its result from the evaluation's budget and then calls the built-in.
func meteredFunctions() conf.FunctionsTable {
	t := conf.FunctionsTable{}
	for name, cost := range costs {
		orig := builtin.Builtins[builtin.Index[name]]
		call := callOf(orig)
		t[name] = &builtin.Function{
			Name: name,
			Func: func(args ...any) (any, error) {
				b, _ := args[0].(*budget)
				args = args[1:]
				if b == nil {
					return nil, fmt.Errorf("%s: no budget", name)
				}
				if err := b.spend(name, cost(args)); err != nil {
					return nil, err
				}
				return call(args)
			},
			Types:    withBudget(orig.Types),
			Validate: validateWithBudget(orig),
		}
	}
	t[addFn] = &builtin.Function{
		Name: addFn,
		Func: func(args ...any) (any, error) {
			b, _ := args[0].(*budget)
			x, y := args[1], args[2]
			if xs, ok := x.(string); ok {
				if ys, ok := y.(string); ok {
					if err := b.spend("+", len(xs)+len(ys)); err != nil {
						return nil, err
					}
				}
			}
			return runtime.Add(x, y), nil
		},
		Validate: validateAdd,
	}
	t[tickFn] = &builtin.Function{
		Name: tickFn,
		Func: func(args ...any) (any, error) {
			b, _ := args[0].(*budget)
			b.iterations++
			if b.iterations > MaxIterations {
				return nil, fmt.Errorf("the expression's loops ran more than %d iterations, the limit for one expression (MaxIterations)", MaxIterations)
			}
			return args[1], nil
		},
		Validate: func(args []reflect.Type) (reflect.Type, error) {
			if len(args) != 2 {
				return nil, fmt.Errorf("tick takes one value")
			}
			return args[1], nil
		},
	}
	return t
}

var (
	anyType      = reflect.TypeOf((*any)(nil)).Elem()
	timeType     = reflect.TypeOf(time.Time{})
	durationType = reflect.TypeOf(time.Duration(0))
)

// validateAdd keeps the load-time check of `+` that rewriting it into a
// call would lose: operands whose types are known must be ones `+` adds.
func validateAdd(args []reflect.Type) (reflect.Type, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("+ takes two operands")
	}
	x, y := args[1], args[2]
	if x == anyType || y == anyType || x.Kind() == reflect.Interface || y.Kind() == reflect.Interface {
		return anyType, nil
	}
	isInt := func(t reflect.Type) bool {
		return t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64 && t != durationType
	}
	isNum := func(t reflect.Type) bool {
		return isInt(t) || t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64
	}
	switch {
	case x.Kind() == reflect.String && y.Kind() == reflect.String:
		return reflect.TypeOf(""), nil
	case isInt(x) && isInt(y):
		return reflect.TypeOf(0), nil
	case isNum(x) && isNum(y):
		return reflect.TypeOf(0.0), nil
	case x == timeType && y == durationType, x == durationType && y == timeType:
		return timeType, nil
	case x == durationType && y == durationType:
		return durationType, nil
	}
	return nil, fmt.Errorf("invalid operation: + (mismatched types %v and %v)", x, y)
}

func callOf(f *builtin.Function) func([]any) (any, error) {
	switch {
	case f.Func != nil:
		return func(a []any) (any, error) { return f.Func(a...) }
	case f.Safe != nil:
		return func(a []any) (any, error) {
			out, _, err := f.Safe(a...)
			return out, err
		}
	case f.Fast != nil:
		return func(a []any) (any, error) {
			if len(a) != 1 {
				return nil, fmt.Errorf("%s takes one argument", f.Name)
			}
			return f.Fast(a[0]), nil
		}
	}
	panic("builtin " + f.Name + " has no implementation")
}

// withBudget is types with the budget as a leading parameter, so that the
// checker still checks a call's arguments at load time.
func withBudget(types []reflect.Type) []reflect.Type {
	out := make([]reflect.Type, 0, len(types))
	for _, t := range types {
		in := []reflect.Type{anyType}
		for i := range t.NumIn() {
			in = append(in, t.In(i))
		}
		var outs []reflect.Type
		for i := range t.NumOut() {
			outs = append(outs, t.Out(i))
		}
		out = append(out, reflect.FuncOf(in, outs, t.IsVariadic()))
	}
	return out
}

func validateWithBudget(f *builtin.Function) func([]reflect.Type) (reflect.Type, error) {
	if f.Validate == nil {
		return nil
	}
	return func(args []reflect.Type) (reflect.Type, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("%s: no budget", f.Name)
		}
		return f.Validate(args[1:])
	}
}

// Names of the functions meter inserts; like budgetVar they start with `$`
// so that they do not take a name a config could use.
const (
	addFn  = "$mcpd_add"
	tickFn = "$mcpd_tick"
)

// meter rewrites a parsed expression so that everything that can grow
// with the arguments pays from the budget: calls of the built-ins in costs
// get the budget as first argument, `a + b` becomes $mcpd_add(budget, a,
// b), and the body of every predicate (map, filter, all, reduce, ...)
// becomes $mcpd_tick(budget, body). It records whether it changed
// anything, so that expressions which cannot grow run as they are.
type meter struct {
	changed bool
	err     error
}

func budgetIdent() ast.Node { return &ast.IdentifierNode{Value: budgetVar} }

func (g *meter) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if strings.HasPrefix(n.Value, "$mcpd") && g.err == nil {
			g.err = fmt.Errorf("%s is reserved", n.Value)
		}
	case *ast.BuiltinNode:
		// `::repeat(...)` names the built-in past any override.
		if _, ok := costs[n.Name]; ok {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: n.Name}, Arguments: append([]ast.Node{budgetIdent()}, n.Arguments...)})
			g.changed = true
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			return
		}
		if _, ok := costs[id.Value]; ok {
			n.Arguments = append([]ast.Node{budgetIdent()}, n.Arguments...)
			g.changed = true
		}
	case *ast.BinaryNode:
		if n.Operator == "+" {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: addFn}, Arguments: []ast.Node{budgetIdent(), n.Left, n.Right}})
			g.changed = true
		}
	case *ast.PredicateNode:
		body := n.Node
		n.Node = &ast.CallNode{Callee: &ast.IdentifierNode{Value: tickFn}, Arguments: []ast.Node{budgetIdent(), body}}
		n.Node.SetLocation(body.Location())
		g.changed = true
	}
}
