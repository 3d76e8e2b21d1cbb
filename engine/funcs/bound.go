package funcs

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/mcpd/mcpd/engine/sizes"
)

// MaxBuiltBytes bounds the text one call of format, join, replace or
// regex_replace may build. These run on every tool call with the client's
// arguments (`format("%${args.width}s", "")`, `join(args.sep, args.list)`,
// `replace(args.s, "", args.t)`), their output grows as a product of their
// arguments' sizes, and Go cannot recover from running out of memory; so
// the size is worked out, and refused, before the text is built.
const MaxBuiltBytes = sizes.MaxBuilt

// bounded is fn that first asks cost what a call would build and fails
// past MaxBuiltBytes. cost sees only known arguments.
func bounded(name string, fn function.Function, cost func(args []cty.Value) int) function.Function {
	return function.New(&function.Spec{
		Description: fn.Description(),
		Params:      fn.Params(),
		VarParam:    fn.VarParam(),
		Type:        fn.ReturnTypeForValues,
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			for _, a := range args {
				if !a.IsWhollyKnown() || a.IsNull() {
					return fn.Call(args)
				}
			}
			if n := cost(args); n < 0 || n > MaxBuiltBytes {
				return cty.NilVal, fmt.Errorf("%s would build %s, over the limit of %s that one call may build (MaxBuiltBytes)", name, sizes.Text(n), sizes.Text(MaxBuiltBytes))
			}
			return fn.Call(args)
		},
	})
}

// valueSize estimates the text v makes when formatted.
func valueSize(v cty.Value) int {
	if !v.IsKnown() || v.IsNull() {
		return 4
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return len(v.AsString())
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		n := 2
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			n = sizes.Add(n, sizes.Add(valueSize(k), sizes.Add(valueSize(e), 4)))
		}
		return n
	}
	return 32
}

// formatCost is the format string's length, its values' sizes, and every
// width and precision it asks for (`%1000000000s`, `%.1000000000f`).
func formatCost(args []cty.Value) int {
	f := args[0].AsString()
	n := len(f)
	for _, v := range args[1:] {
		n = sizes.Add(n, valueSize(v))
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		for i < len(f) && strings.IndexByte("-+# 0", f[i]) >= 0 {
			i++
		}
		for i < len(f) && (f[i] == '[' || f[i] == ']' || f[i] == '.' || (f[i] >= '0' && f[i] <= '9')) {
			if f[i] >= '0' && f[i] <= '9' {
				num := 0
				for i < len(f) && f[i] >= '0' && f[i] <= '9' {
					num = sizes.Add(sizes.Mul(num, 10), int(f[i]-'0'))
					i++
				}
				n = sizes.Add(n, num)
				continue
			}
			i++
		}
	}
	return n
}

// joinCost is the elements' sizes and a separator between each two.
func joinCost(args []cty.Value) int {
	sep := len(args[0].AsString())
	n, count := 0, 0
	for _, l := range args[1:] {
		for it := l.ElementIterator(); it.Next(); {
			_, e := it.Element()
			n = sizes.Add(n, valueSize(e))
			count++
		}
	}
	return sizes.Add(n, sizes.Mul(count, sep))
}

// replaceCost is the text with every match of the substring (replace) or
// pattern (regex_replace) replaced.
func replaceCost(regex bool) func(args []cty.Value) int {
	return func(args []cty.Value) int {
		s, sub, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
		if !regex {
			count := strings.Count(s, sub)
			if sub == "" {
				count = utf8.RuneCountInString(s) + 1
			}
			return sizes.Add(len(s), sizes.Mul(count, len(repl)))
		}
		re, err := regexp.Compile(sub)
		if err != nil {
			return 0 // the function reports it
		}
		// At most one match per position: no need to find them when the
		// worst case fits.
		per := len(repl)
		if refs := strings.Count(repl, "$"); refs > 0 {
			per = sizes.Add(per, sizes.Mul(refs, len(s)))
		}
		if worst := sizes.Add(len(s), sizes.Mul(len(s)+1, per)); worst >= 0 && worst <= MaxBuiltBytes {
			return worst
		}
		matches := re.FindAllStringIndex(s, -1)
		longest := 0
		for _, m := range matches {
			longest = max(longest, m[1]-m[0])
		}
		per = len(repl)
		if refs := strings.Count(repl, "$"); refs > 0 {
			per = sizes.Add(per, sizes.Mul(refs, longest))
		}
		return sizes.Add(len(s), sizes.Mul(len(matches), per))
	}
}
