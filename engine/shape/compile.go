package shape

import (
	"errors"
	"maps"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// defaults is expr's default configuration, built once, with the metered
// functions of budget.go in place of the allocating built-ins. expr.Compile
// builds a new one for every expression, filling a map with all of expr's
// builtin functions each time, which was a third of compiling a tool's
// result block and 8 % of loading a 1,000-tool config. Compiling reads a
// configuration's maps and never changes them (its only mutable part is the
// type cache, NtCache, which each compile gets afresh), so compile starts
// from a copy of this one.
var defaults = func() *conf.Config {
	c := conf.CreateNew()
	maps.Copy(c.Functions, meteredFunctions())
	return c
}()

// compile is expr.Compile(src, expr.Env(env)) with the meter of budget.go
// applied between parsing and checking. It reports whether the program
// needs a budget (see Program.Run).
func compile(src string, env types.Map) (*vm.Program, bool, error) {
	c := *defaults
	c.NtCache = nature.Cache{}
	env = maps.Clone(env)
	env[budgetVar] = types.Any
	c.WithEnv(env)
	c.Check()
	tree, err := parser.ParseWithConfig(src, &c)
	if err != nil {
		return nil, false, err
	}
	g := &meter{}
	ast.Walk(&tree.Node, g)
	if g.err != nil {
		return nil, false, g.err
	}
	if _, err := checker.Check(tree, &c); err != nil {
		return nil, false, err
	}
	if c.Optimize {
		if err := optimizer.Optimize(&tree.Node, &c); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, false, fe.Bind(tree.Source)
			}
			return nil, false, err
		}
	}
	prog, err := compiler.Compile(tree, &c)
	return prog, g.changed, err
}
