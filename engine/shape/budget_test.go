package shape

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
)

// Expressions whose output grows as a product of their arguments' sizes
// fail with an error naming the limit, before they allocate: before the
// budget, the first of these asked Go for a terabyte and the runtime
// ended the process.
func TestBudgetStopsProducts(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	list := make([]any, 10000)
	for i := range list {
		list[i] = float64(i)
	}
	env := map[string]any{"args": map[string]any{"s": big, "n": 1_000_000.0, "list": list, "short": "ab"}}
	doubling := "let a0 = args.s;"
	for i := range 40 {
		doubling += fmt.Sprintf(" let a%d = a%d + a%d;", i+1, i, i)
	}
	doubling += " len(a40)"
	concat := "let r = 1..500000; concat(r" + strings.Repeat(", r", 200) + ")"
	tests := []struct{ name, src, limit string }{
		{"repeat of arguments", `repeat(args.s, args.n)`, "MaxBuiltBytes"},
		{"repeat of constants", `repeat(repeat("x", 1000000), 1000000)`, "MaxBuiltBytes"},
		{"repeat past the override", `::repeat(args.s, args.n)`, "MaxBuiltBytes"},
		{"repeat in a pipe", `args.s | repeat(args.n)`, "MaxBuiltBytes"},
		{"replace of the empty string", `replace(args.s, "", args.s)`, "MaxBuiltBytes"},
		{"join with a big glue", `join(split(args.s, ""), args.s)`, "MaxBuiltBytes"},
		{"join of references", `join(map(1..100000, args.s), "")`, "MaxBuiltBytes"},
		{"doubling with let", doubling, "MaxBuiltBytes"},
		{"concatenation in reduce", `reduce(1..100000, #acc + args.s, "")`, "MaxBuiltBytes"},
		{"toJSON of references", `toJSON(map(1..100000, args.s))`, "MaxBuiltBytes"},
		{"string of references", `string(map(1..100000, args.s))`, "MaxBuiltBytes"},
		{"flatten of references", `let r = 1..500000; flatten(map(1..100000, r))`, "MaxBuiltBytes"},
		{"concat of references", concat, "MaxBuiltBytes"},
		{"a linear built-in in a loop", `map(1..900000, upper(args.s))`, "MaxBuiltBytes"},
		{"nested loops", `map(args.list, map(args.list, #))`, "MaxIterations"},
		{"nested loops that build nothing", `all(args.list, all(args.list, true))`, "MaxIterations"},
		{"a value of references", `map(1..400000, args.s)`, "MaxResultBytes"},
		{"a huge range", `1..1000000000000`, "the limit for one expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, diags := Compile(attr(t, "structured", fmt.Sprintf("%q", tt.src)), nil, []string{"s", "n", "list", "short"})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			v, err := p.Run(env)
			if err == nil {
				t.Fatalf("ran to a %T, want an error naming %s", v, tt.limit)
			}
			if !strings.Contains(err.Error(), tt.limit) {
				t.Fatalf("error %q does not name the limit %s", err, tt.limit)
			}
		})
	}
}

// The meter changes the program of the expressions it meters, not what
// they compute.
func TestMeteredMatchesExpr(t *testing.T) {
	envType := types.Map{"args": types.Map{"s": types.Any, "n": types.Any}, "body": types.Any}
	env := map[string]any{
		"args": map[string]any{"s": "a,b,c", "n": 3.0},
		"body": map[string]any{"items": []any{map[string]any{"name": "x", "n": 2.0}, map[string]any{"name": "y", "n": 1.0}}, "m": map[string]any{"k": "v"}},
	}
	srcs := []string{
		`repeat(args.s, 2)`, `repeat("ab", int(args.n))`, `replace(args.s, ",", ";")`, `replace(args.s, ",", "", 1)`,
		`join(split(args.s, ","), "-")`, `join(["a", "b"])`, `args.s + "!"`, `1 + 2`, `1.5 + args.n`, `args.n + 1`,
		`(now() + duration("1h")).Year() > 2000`, `duration("1h") + duration("1m")`,
		`map(body.items, .name + "!")`, `filter(body.items, .n > 1)`, `reduce(body.items, #acc + .n, 0)`,
		`sortBy(body.items, .n)`, `groupBy(body.items, .name)`, `count(body.items, .n > 0)`, `sum(map(body.items, .n))`,
		`toJSON(body.m)`, `string(args.n)`, `upper(args.s)`, `lower("AB")`, `splitAfter(args.s, ",")`,
		`keys(body.m)`, `values(body.m)`, `toPairs(body.m)`, `fromPairs([["a", 1]])`, `reverse([1, 2])`,
		`uniq([1, 1, 2])`, `sort([2, 1])`, `median([1, 2, 3])`, `take([1, 2, 3], 2)`, `flatten([[1], [2, [3]]])`,
		`concat([1], [2])`, `fromJSON(toJSON(body.m))`, `fromBase64(toBase64(args.s))`, `args.s | repeat(2)`,
		`::repeat("a", 2)`, `let x = args.s; x + x`, `any(body.items, .n == 1) && all(body.items, .n > 0)`,
		`find(body.items, .n == 1).name`, `body.items | map(.n) | sum()`,
	}
	for _, src := range srcs {
		want, err := expr.Compile(src, expr.Env(envType))
		if err != nil {
			t.Errorf("%s: expr.Compile: %v", src, err)
			continue
		}
		wantV, wantErr := expr.Run(want, env)
		p, diags := Compile(attr(t, "structured", fmt.Sprintf("%q", src)), []string{"body"}, []string{"s", "n"})
		if diags.HasErrors() {
			t.Errorf("%s: %v", src, diags)
			continue
		}
		got, gotErr := p.Run(env)
		if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, wantV) {
			t.Errorf("%s = %#v (%v), expr gives %#v (%v)", src, got, gotErr, wantV, wantErr)
		}
	}
}

// What the checker found at load time in expressions the meter rewrites,
// it still finds, and the budget's own names are not the config's to use.
func TestMeteredCompileErrors(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{`"a" + 1`, "mismatched types string and int"},
		{`repeat("x")`, "not enough arguments to call repeat"},
		{`repeat(1, 2)`, "cannot use int as argument"},
		{`join(1)`, "cannot use int as argument"},
		{`$mcpd_budget`, "reserved"},
		{`$mcpd_add($mcpd_budget, 1, 2)`, "reserved"},
	} {
		_, diags := Compile(attr(t, "structured", fmt.Sprintf("%q", tt.src)), nil, nil)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tt.want) {
			t.Errorf("%s: diagnostics %v, want %q", tt.src, diags, tt.want)
		}
	}
}
