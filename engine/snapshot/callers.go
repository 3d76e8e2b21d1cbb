package snapshot

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
)

// callersOf describes who can call a server with the auth block a (nil:
// none), for the load-time checks of what adapters read from the caller:
// with API keys only, the claims are the keys' attributes, known now; with
// OAuth (or attributes that cannot be read now), any claim may come.
// Errors in the block are auth.Compile's to report.
func callersOf(a *config.Auth, ft funcTables) *adapter.Callers {
	if a == nil {
		return nil
	}
	c := &adapter.Callers{Claims: map[string]bool{}, OpenClaims: a.OAuth != nil}
	ectx := &hcl.EvalContext{Functions: ft.get(a.Dir)}
	for _, k := range a.APIKeys {
		if k.Attributes == nil {
			continue
		}
		v, d := k.Attributes.Expr.Value(ectx)
		if d.HasErrors() || !v.IsWhollyKnown() {
			c.OpenClaims = true
			continue
		}
		v, _ = v.UnmarkDeep()
		addClaimPaths(c.Claims, "", v)
	}
	return c
}

// addClaimPaths adds the paths of v's attributes, nested ones dotted.
func addClaimPaths(out map[string]bool, prefix string, v cty.Value) {
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return
	}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		path := prefix + k.AsString()
		out[path] = true
		addClaimPaths(out, path+".", e)
	}
}
