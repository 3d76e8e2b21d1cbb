package adapter

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Scope is what the expressions of one block may use: the functions of the
// file the block is declared in and, for tool blocks, the tool's params as
// `args.<name>`. It lets adapters check references at load time, so that
// `args.nope` is a diagnostic with a range and never a failure on a call.
type Scope struct {
	// Dir is the directory of the file the block is declared in; file()
	// paths are relative to it.
	Dir string
	// Functions are the functions callable from expressions.
	Functions map[string]function.Function
	// Params maps each declared param name to its JSON type ("string",
	// "integer", "number", "boolean", "array", "object", or "" when
	// unconstrained). Nil for blocks that have no args (backends).
	Params map[string]string
	// Inputs are the names of the asks whose answers an expression may
	// use as `inputs.<name>`, each with a note on its value for messages
	// (see engine/snapshot's ask blocks). Nil: no `inputs` variable.
	Inputs map[string]string
	// Auth is what the server's auth block can verify of a caller, so
	// that a block which needs the caller's identity (an OAuth token to
	// exchange or forward, claims to bind) is refused at load when no
	// caller could ever have it. Nil: the config has no auth block, and
	// every call is the anonymous local user.
	Auth *AuthInfo
}

// AuthInfo describes the callers a config's auth block can verify.
type AuthInfo struct {
	// APIKeys: callers may present one of the block's API keys (a
	// principal with the key's attributes as claims, and no token that
	// may leave mcpd).
	APIKeys bool
	// OAuth: callers may present OAuth access tokens (JWTs or
	// introspected), whose claims and token the principal carries.
	OAuth bool
	// Audience is the audience callers' OAuth tokens are verified for
	// (this server's resource, or oauth.audience); "" when unknown.
	Audience string
	// Range is the auth block's, for messages that point at it.
	Range hcl.Range
	// Claims are the claim paths ("tenant", "org.id") that the API keys'
	// attributes declare, with every prefix of a nested path.
	Claims map[string]bool
	// OpenClaims: some caller's claims are not known at load time (OAuth
	// tokens carry whatever their issuer puts in them, or an API key's
	// attributes could not be read now). See Unproducible.
	OpenClaims bool
}

// EvalContext is the load-time evaluation context: functions, no variables.
// Use it for attributes whose value must be known before any call (timeouts,
// DSNs, base URLs).
func (s *Scope) EvalContext() *hcl.EvalContext {
	return &hcl.EvalContext{Functions: s.Functions, Variables: map[string]cty.Value{budgetVarName: newBudgetValue()}}
}

// Check reports every reference in expr that cannot be satisfied at call
// time: variables other than `args`, params that are not declared, and
// functions that do not exist. It also arms expr's for expressions, so
// that what they build from a call's values is bounded (see forbound.go):
// every call-time expression passes through here.
func (s *Scope) Check(expr hcl.Expression) hcl.Diagnostics {
	if expr == nil {
		return nil
	}
	armFors(expr)
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		diags = append(diags, s.checkTraversal(tr)...)
	}
	if se, ok := expr.(hclsyntax.Expression); ok {
		diags = append(diags, s.checkFunctions(se)...)
	}
	return diags
}

// CheckStatic is Check for attributes that must be known at load time: any
// variable at all is an error.
func (s *Scope) CheckStatic(expr hcl.Expression, what string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		rng := tr.SourceRange()
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Value must be known at load time",
			Detail:   fmt.Sprintf("%s cannot depend on the call's arguments; remove the reference to %q.", what, traversalName(tr)),
			Subject:  &rng,
		})
	}
	if se, ok := expr.(hclsyntax.Expression); ok {
		diags = append(diags, s.checkFunctions(se)...)
	}
	return diags
}

// IsStatic reports whether expr references no variables, so that it can be
// evaluated once at load time instead of on every call.
func IsStatic(expr hcl.Expression) bool {
	return expr == nil || len(expr.Variables()) == 0
}

func (s *Scope) checkTraversal(tr hcl.Traversal) hcl.Diagnostics {
	rng := tr.SourceRange()
	root := tr.RootName()
	if root == "inputs" && s.Inputs != nil {
		return s.checkInput(tr)
	}
	if root != "args" || s.Params == nil {
		detail := fmt.Sprintf("There is no variable named %q here.", root)
		if s.Params != nil {
			detail += " Call arguments are referenced as args.<param>."
		} else {
			detail += " This block is evaluated at load time and has no call arguments."
		}
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unknown variable", Detail: detail, Subject: &rng}}
	}
	if len(tr) < 2 {
		return nil // `args` as a whole object
	}
	var name string
	switch step := tr[1].(type) {
	case hcl.TraverseAttr:
		name = step.Name
	case hcl.TraverseIndex:
		if step.Key.Type() == cty.String {
			name = step.Key.AsString()
		}
	}
	if name == "" {
		return nil
	}
	if _, ok := s.Params[name]; !ok {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Reference to undeclared param",
			Detail:   fmt.Sprintf("args.%s is not declared; declared params: %s.", name, listOrNone(s.Params)),
			Subject:  &rng,
		}}
	}
	return nil
}

// checkInput accepts inputs.<name> for the asks in s.Inputs only: an
// undeclared name, or one answered in a later round, is a load-time error.
func (s *Scope) checkInput(tr hcl.Traversal) hcl.Diagnostics {
	if len(tr) < 2 {
		return nil
	}
	name := ""
	switch step := tr[1].(type) {
	case hcl.TraverseAttr:
		name = step.Name
	case hcl.TraverseIndex:
		if step.Key.Type() == cty.String {
			name = step.Key.AsString()
		}
	}
	if _, ok := s.Inputs[name]; ok || name == "" {
		return nil
	}
	rng := tr.SourceRange()
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Reference to an unavailable input",
		Detail:   fmt.Sprintf("inputs.%s is not the answer of an ask block asked before this point; available: %s.", name, listOrNone(s.Inputs)),
		Subject:  &rng,
	}}
}

func (s *Scope) checkFunctions(expr hclsyntax.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok {
			return nil
		}
		// env() and file() read the host: their arguments come from the
		// config author, never from a call, or a model could read any
		// file or variable (file("${args.page}") with page = "../../x").
		if call.Name == "env" || call.Name == "file" || call.Name == "filebase64" {
			for _, a := range call.Args {
				if len(a.Variables()) > 0 {
					rng := a.Range()
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Argument must be known at load time",
						Detail:   fmt.Sprintf("%s() cannot take values from the call's arguments: it would let a caller choose what to read on this host.", call.Name),
						Subject:  &rng,
					})
				}
			}
		}
		if _, ok := s.Functions[call.Name]; !ok {
			rng := call.NameRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Call to unknown function",
				Detail:   fmt.Sprintf("There is no function named %q.", call.Name),
				Subject:  &rng,
			})
		}
		return nil
	})
	return diags
}

func traversalName(tr hcl.Traversal) string {
	var b strings.Builder
	b.WriteString(tr.RootName())
	for _, step := range tr[1:] {
		if a, ok := step.(hcl.TraverseAttr); ok {
			b.WriteString("." + a.Name)
		}
	}
	return b.String()
}

// DeclaredParams lists the declared param names, sorted and comma
// separated ("none" when there are none), for diagnostics.
func (s *Scope) DeclaredParams() string { return listOrNone(s.Params) }

func listOrNone(m map[string]string) string {
	if len(m) == 0 {
		return "none"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// CallContext is the call-time evaluation context: the functions and the
// variable `args`, which holds every declared param (null when the call did
// not give it and it has no default), so that a reference to an optional
// param evaluates to null instead of failing.
func (s *Scope) CallContext(args map[string]any) *hcl.EvalContext {
	return s.CallContextInputs(args, nil)
}

// CallContextInputs is CallContext with the variable `inputs` too: the
// answers of the asks in s.Inputs (null for one not asked).
func (s *Scope) CallContextInputs(args, inputs map[string]any) *hcl.EvalContext {
	attrs := make(map[string]cty.Value, len(s.Params))
	for name := range s.Params {
		attrs[name] = cty.NullVal(cty.DynamicPseudoType)
	}
	for name, v := range args {
		attrs[name] = FromGo(v)
	}
	vars := map[string]cty.Value{"args": cty.ObjectVal(attrs), budgetVarName: newBudgetValue()}
	if s.Inputs != nil {
		in := make(map[string]cty.Value, len(s.Inputs))
		for name := range s.Inputs {
			in[name] = cty.NullVal(cty.DynamicPseudoType)
		}
		for name, v := range inputs {
			in[name] = FromGo(v)
		}
		vars["inputs"] = cty.ObjectVal(in)
	}
	return &hcl.EvalContext{Functions: s.Functions, Variables: vars}
}
