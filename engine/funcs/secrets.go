package funcs

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
