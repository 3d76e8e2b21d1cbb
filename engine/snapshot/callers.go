package snapshot

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/schema"
)

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

// checkCallerParams warns about caller-bound params that no call can
// satisfy: without an auth block no call has a caller, and with API keys
// only a claim that no key declares is never there. (Warnings, not errors:
// tests and embedders may hand the engine principals of their own.)
func checkCallerParams(params []*config.Param, bound []*schema.CallerParam, callers *adapter.AuthInfo) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, cp := range bound {
		var rng hcl.Range
		for _, p := range params {
			if p.Name == cp.Name && p.FromCaller != nil {
				rng = p.FromCaller.Expr.Range()
			}
		}
		detail := ""
		if callers == nil {
			detail = fmt.Sprintf("param %q is set from the authenticated caller, but the config has no auth block: stdio is the local user and HTTP without auth is anonymous, so every call of this tool will be refused. Add an auth block (api_key or oauth).", cp.Name)
		} else if why := callers.Unproducible(cp.Path); why != "" {
			detail = fmt.Sprintf("param %q: %s", cp.Name, why)
		}
		if detail != "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Caller value no call can have", Detail: detail, Subject: rng.Ptr()})
		}
	}
	return diags
}
