package adapter

import (
	"context"
	"fmt"
	"reflect"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/funcs"
)

// Bounding HCL for expressions at call time.
//
// Without a for expression, what an HCL expression builds is linear in the
// call's values: each reference, interpolation and function call appears a
// fixed number of times in the config, and the functions that could build
// more (format, join, replace, regex_replace) refuse past
// funcs.MaxBuiltBytes on their own. A for expression is the one product:
// `%{for x in args.list}${args.s}%{endfor}` builds len(list)·len(s), and a
// for inside a for multiplies again, and HCL allocates it all before
// anything could look at it. So Check arms every for expression of a
// call-time expression: its `if` clause becomes a counter that counts
// iterations, and its value (and key) expression a charge that measures
// what each iteration produced (its JSON-encoded size, which is also what
// sending or joining it costs) against one budget per evaluation context,
// i.e. per call. Nested fors charge their iterations to the same budget as
// they run, so the inner ones stop after the budget's worth of output
// however they are nested, behind a conditional or a function call; what
// one iteration builds outside a for is linear again. Once the budget is
// spent, the remaining iterations are skipped without evaluating their
// body, each for reports the limit once, and the call fails with that
// error. Expressions without a for are not touched and cost nothing.
//
// The budget reaches the armed nodes as a variable of the evaluation
// context whose name no traversal can spell (it has a space), so armed
// expressions keep their Variables() and IsStatic answers. A context
// without it (one not made by a Scope) evaluates them unbounded.
const (
	// MaxForBytes bounds what the for expressions of one call may
	// produce, all of them together, counted as JSON-encoded size.
	MaxForBytes = funcs.MaxBuiltBytes
	// MaxForIterations bounds the iterations of the for expressions of
	// one call, nested ones counted in full.
	MaxForIterations = 1_000_000
)

const budgetVarName = "mcpd for budget"

var budgetType = cty.Capsule("forBudget", reflect.TypeOf(forBudget{}))

// forBudget is what one call's for expressions have spent.
type forBudget struct {
	ctx          context.Context // nil: none bound
	bytes, iters int
	spent        string                      // the limit's error once exhausted
	reported     map[*hclsyntax.ForExpr]bool // fors that reported it
}

// BindContext makes the for expressions evaluated with ectx (a context a
// Scope made) stop soon after ctx ends, at the tool's timeout or the
// client's cancellation: a body can take long without building much
// (`length(format("%s", args.big))` for each of a million items), and HCL
// evaluation has no other way to be interrupted.
func BindContext(ectx *hcl.EvalContext, ctx context.Context) {
	if b := budgetOf(ectx); b != nil {
		b.ctx = ctx
	}
}

func newBudgetValue() cty.Value { return cty.CapsuleVal(budgetType, &forBudget{}) }

func budgetOf(ctx *hcl.EvalContext) *forBudget {
	for c := ctx; c != nil; c = c.Parent() {
		if v, ok := c.Variables[budgetVarName]; ok {
			return v.EncapsulatedValue().(*forBudget)
		}
	}
	return nil
}

// armFors arms every for expression in expr (once: armed ones are skipped).
func armFors(expr hcl.Expression) {
	se, ok := expr.(hclsyntax.Expression)
	if !ok {
		return
	}
	var fors []*hclsyntax.ForExpr
	hclsyntax.VisitAll(se, func(n hclsyntax.Node) hcl.Diagnostics {
		if f, ok := n.(*hclsyntax.ForExpr); ok {
			fors = append(fors, f)
		}
		return nil
	})
	for _, f := range fors {
		if _, done := f.CondExpr.(*forCounter); done {
			continue
		}
		f.CondExpr = &forCounter{ParenthesesExpr: wrapOf(f.CondExpr, f.SrcRange), cond: f.CondExpr, owner: f}
		f.ValExpr = &forCharge{ParenthesesExpr: wrapOf(f.ValExpr, f.ValExpr.Range()), inner: f.ValExpr, owner: f}
		if f.KeyExpr != nil {
			f.KeyExpr = &forCharge{ParenthesesExpr: wrapOf(f.KeyExpr, f.KeyExpr.Range()), inner: f.KeyExpr, owner: f}
		}
	}
}

// wrapOf is the node the armed nodes embed for the hclsyntax methods
// (children for walks and Variables, ranges) of what they wrap; they
// override only Value.
func wrapOf(e hclsyntax.Expression, rng hcl.Range) *hclsyntax.ParenthesesExpr {
	if e == nil {
		e = &hclsyntax.LiteralValueExpr{Val: cty.True, SrcRange: rng}
	}
	return &hclsyntax.ParenthesesExpr{Expression: e, SrcRange: rng}
}

// forCounter is a for's `if` clause: it counts the iteration and skips it
// once the budget is spent.
type forCounter struct {
	*hclsyntax.ParenthesesExpr
	cond  hclsyntax.Expression // nil: none
	owner *hclsyntax.ForExpr
}

// forCharge is a for's value or key expression: it charges what the
// iteration produced.
type forCharge struct {
	*hclsyntax.ParenthesesExpr
	inner hclsyntax.Expression
	owner *hclsyntax.ForExpr
}

// UnwrapExpression lets code that inspects a for's clauses (hcl.UnwrapExpression,
// the shell adapter's leading-dash check) see the clause the config wrote.
func (g *forCounter) UnwrapExpression() hcl.Expression { return g.ParenthesesExpr.Expression }

// UnwrapExpression is the value or key expression the config wrote.
func (c *forCharge) UnwrapExpression() hcl.Expression { return c.inner }

func (g *forCounter) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if b := budgetOf(ctx); b != nil {
		if b.spent == "" {
			if b.iters++; b.ctx != nil && b.iters%64 == 0 && b.ctx.Err() != nil {
				b.spent = fmt.Sprintf("the call ended (%v) while its for expressions ran", context.Cause(b.ctx))
			} else if b.iters > MaxForIterations {
				b.spent = fmt.Sprintf("the for expressions of this call would run more than the %d iterations one call may run (MaxForIterations); pass fewer items", MaxForIterations)
			}
		}
		if b.spent != "" {
			return cty.UnknownVal(cty.Bool), b.report(g.owner, g.Range())
		}
	}
	if g.cond == nil {
		return cty.True, nil
	}
	return g.cond.Value(ctx)
}

func (c *forCharge) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := c.inner.Value(ctx)
	b := budgetOf(ctx)
	if b == nil || diags.HasErrors() {
		return v, diags
	}
	if b.spent != "" {
		return cty.DynamicVal, append(diags, b.report(c.owner, c.Range())...)
	}
	room := MaxForBytes - b.bytes
	n := encodedSize(v, room)
	if n > room {
		b.spent = fmt.Sprintf("the for expressions of this call would build more than the %s one call may build (MaxForBytes); pass fewer or shorter items", sizeText(MaxForBytes))
		return cty.DynamicVal, append(diags, b.report(c.owner, c.Range())...)
	}
	b.bytes += n
	return v, diags
}

// report is the spent error the first time a for meets it, and nothing
// after (its remaining iterations are skipped quietly, not one error each).
func (b *forBudget) report(owner *hclsyntax.ForExpr, rng hcl.Range) hcl.Diagnostics {
	if b.reported == nil {
		b.reported = map[*hclsyntax.ForExpr]bool{}
	}
	if b.reported[owner] {
		return nil
	}
	b.reported[owner] = true
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Expression too large", Detail: b.spent, Subject: rng.Ptr()}}
}

// encodedSize is about the size of v encoded as JSON, counting stops once
// past limit (so measuring costs at most limit steps). Each value costs at
// least one byte, so a tuple of a million references to one string is a
// million times that string, as sending or joining it will be.
func encodedSize(v cty.Value, limit int) int {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return 4
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return len(v.AsString()) + 2
	case t == cty.Number:
		bf := v.AsBigFloat()
		exp := bf.MantExp(nil)
		if bf.IsInt() && exp < 64 {
			return 2 + exp*3/10 // an integer's digits
		}
		if exp < 0 {
			exp = -exp
		}
		return 24 + exp/3 // digits of 2^exp, and of a fraction
	case t == cty.Bool:
		return 5
	case t.IsListType() || t.IsSetType() || t.IsTupleType() || t.IsMapType() || t.IsObjectType():
		keyed := t.IsMapType() || t.IsObjectType()
		n := 2
		for it := v.ElementIterator(); it.Next() && n <= limit; {
			k, e := it.Element()
			n += 1 + encodedSize(e, limit-n)
			if keyed {
				n += 1 + encodedSize(k, limit-n)
			}
		}
		return n
	}
	return 16
}

func sizeText(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
