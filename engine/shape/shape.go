// Package shape compiles and runs the expr-lang expressions of a tool's
// `result` block, which turn an adapter's output into what the model sees.
// Expressions are compiled once at load against the names the adapter
// provides, so a typo is a diagnostic with the attribute's position rather
// than a failure on the first call.
package shape

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/sizes"
)

// Program is one compiled expression.
type Program struct {
	prog *vm.Program
	src  string
	// budgeted: the program calls the metered functions of budget.go and
	// needs a budget in its environment.
	budgeted bool
}

// Compile compiles the expression written as the (static string) value of
// attr. vars are the names the expression may use besides `args`, whose
// fields are the tool's params: `args.nope` is a load-time error.
func Compile(attr *hcl.Attribute, vars []string, params []string) (*Program, hcl.Diagnostics) {
	rng := attr.Expr.Range()
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Result expression must be a string",
			Detail:   fmt.Sprintf("%s is an expr-lang expression written as a string, e.g. %s = \"body.name\"; it cannot use HCL variables or functions.", attr.Name, attr.Name),
			Subject:  &rng,
		}}
	}
	if v.IsNull() || v.Type() != cty.String {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Result expression must be a string", Subject: &rng}}
	}
	src := v.AsString()
	// Every variable is typed "any": adapters' outputs are JSON-shaped
	// values whose shape is only known per call. Names are still checked.
	args := types.Map{}
	for _, p := range params {
		args[p] = types.Any
	}
	env := types.Map{"args": args}
	for _, name := range vars {
		env[name] = types.Any
	}
	prog, budgeted, err := compile(src, env)
	if err != nil {
		return nil, hcl.Diagnostics{compileDiag(attr, src, err, vars)}
	}
	return &Program{prog: prog, src: src, budgeted: budgeted}, nil
}

func compileDiag(attr *hcl.Attribute, src string, err error, vars []string) *hcl.Diagnostic {
	rng := attr.Expr.Range()
	msg := err.Error()
	var fe *file.Error
	if errors.As(err, &fe) {
		msg = fe.Message
		// Point at the offending column when the expression is on one line
		// (the usual case): +1 skips the opening quote.
		if fe.Line == 1 && !strings.Contains(src, "\n") && rng.Start.Line == rng.End.Line {
			col := rng.Start.Column + 1 + fe.Column
			rng = hcl.Range{Filename: rng.Filename, Start: hcl.Pos{Line: rng.Start.Line, Column: col, Byte: rng.Start.Byte + 1 + fe.Column}, End: hcl.Pos{Line: rng.Start.Line, Column: col + 1, Byte: rng.Start.Byte + 2 + fe.Column}}
		}
	}
	names := append([]string{"args"}, vars...)
	sort.Strings(names)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid result expression",
		Detail:   fmt.Sprintf("%s: %s (available: %s)", attr.Name, msg, strings.Join(names, ", ")),
		Subject:  &rng,
	}
}

// Run evaluates the program over env (the adapter's Vars plus `args`).
// It fails, rather than allocating, when the expression would build more
// than the limits of budget.go allow.
func (p *Program) Run(env map[string]any) (any, error) {
	if p.budgeted {
		// A copy, because the caller's env may be shared by the result
		// block's expressions.
		e := make(map[string]any, len(env)+1)
		for k, v := range env {
			e[k] = v
		}
		e[budgetVar] = &budget{}
		env = e
	}
	out, err := expr.Run(p.prog, env)
	if err == nil {
		if n := size(out, MaxResultBytes); n > MaxResultBytes {
			err = fmt.Errorf("its value would be more than %s, the limit on the size of one expression's value (MaxResultBytes)", sizes.Text(MaxResultBytes))
		}
	}
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			msg := fe.Message
			if msg == "memory budget exceeded" {
				// expr's own budget, which counts the values of ranges and
				// literals (conf.DefaultMemoryBudget).
				msg = fmt.Sprintf("memory budget exceeded: the expression would make more than %d values, the limit for one expression", conf.DefaultMemoryBudget)
			}
			return nil, fmt.Errorf("evaluating %q: %s", p.src, msg)
		}
		return nil, fmt.Errorf("evaluating %q: %v", p.src, err)
	}
	return out, nil
}
