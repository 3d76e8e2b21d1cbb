package funcs

import (
	"os"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// IsSecretFunc reports whether the function name reads the host (its
// environment, its files): env, file and filebase64, whose results are
// secrets that a RecordingTable records.
func IsSecretFunc(name string) bool {
	return name == "env" || name == "file" || name == "filebase64"
}

// EvalSecretCalls evaluates every call of a secret function (IsSecretFunc) in body (a
// block body or an expression) whose arguments are known at load time, with
// ectx, whose functions should come from a RecordingTable: so that values an
// adapter only reads on a call (in an expression that also uses args) are
// recorded at load, before any call. Errors are ignored: the block's own
// decoding reports them, with their ranges.
func EvalSecretCalls(body any, ectx *hcl.EvalContext) {
	node, ok := body.(hclsyntax.Node)
	if !ok {
		return
	}
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || !IsSecretFunc(call.Name) {
			return nil
		}
		for _, arg := range call.Args {
			if len(arg.Variables()) > 0 {
				return nil // refused by adapter.Scope.Check
			}
		}
		_, _ = call.Value(ectx) // evaluated for what it records
		return nil
	})
}

// UnsetEnvCall is one env("NAME") call, without a default, of a variable
// that is not set.
type UnsetEnvCall struct {
	Name  string
	Range hcl.Range
}

// EnvCall is one env("NAME") call whose name is a constant.
type EnvCall struct {
	Name  string
	Range hcl.Range
	// HasDefault is true for env("NAME", "default"): the config does not
	// need the variable.
	HasDefault bool
}

// EnvCalls lists the env() calls in body (a file's body or an expression)
// whose name is a constant, in source order: the variables a config reads
// from its environment (`mcpd client-config` passes them to a host). A
// name computed from args is refused elsewhere.
func EnvCalls(body any) []EnvCall {
	node, ok := body.(hclsyntax.Node)
	if !ok {
		return nil
	}
	var out []EnvCall
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || call.Name != "env" || len(call.Args) < 1 || len(call.Args) > 2 || len(call.Args[0].Variables()) > 0 {
			return nil
		}
		v, diags := call.Args[0].Value(nil)
		if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			return nil
		}
		out = append(out, EnvCall{Name: v.AsString(), Range: call.Range(), HasDefault: len(call.Args) == 2})
		return nil
	})
	// A body's attributes are a map: put the calls in source order.
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}

// UnsetEnv lists the env() calls in body (a file's body or an expression)
// that have no default and name a variable that is not set, in source
// order. Only calls whose name is a constant count: a name computed from
// args is refused elsewhere.
func UnsetEnv(body any) []UnsetEnvCall {
	var out []UnsetEnvCall
	for _, c := range EnvCalls(body) {
		if c.HasDefault {
			continue
		}
		if _, set := os.LookupEnv(c.Name); !set {
			out = append(out, UnsetEnvCall{Name: c.Name, Range: c.Range})
		}
	}
	return out
}
