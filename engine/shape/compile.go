package shape

import (
	"errors"

	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/checker/nature"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
)

// defaults is expr's default configuration, built once. expr.Compile builds
// a new one for every expression, filling a map with all of expr's builtin
// functions each time, which was a third of compiling a tool's result
// block and 8 % of loading a 1,000-tool config. Compiling reads a
// configuration's maps and never changes them (its only mutable part is the
// type cache, NtCache, which each compile gets afresh), so compile starts
// from a copy of this one.
var defaults = conf.CreateNew()

// compile is expr.Compile(src, expr.Env(env)): the same steps on a copy of
// the default configuration (TestCompileMatchesExpr checks that both give
// the same program).
func compile(src string, env types.Map) (*vm.Program, error) {
	c := *defaults
	c.NtCache = nature.Cache{}
	c.WithEnv(env)
	c.Check()
	tree, err := checker.ParseCheck(src, &c)
	if err != nil {
		return nil, err
	}
	if c.Optimize {
		if err := optimizer.Optimize(&tree.Node, &c); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	return compiler.Compile(tree, &c)
}
