package schema

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/config"
)

// CallerParam is a param bound from the verified caller (`from_caller`):
// it is left out of the input schema, and its value is read from the
// principal and checked against the param's own rules on every call.
type CallerParam struct {
	// Name is the param's name, as args.<name> and :name see it.
	Name string
	// Path is what to read from the principal: "name" or "claims.<claim>".
	Path string
	node *node
}

// CallerParams compiles the caller-bound params among params. The config
// loader has already checked their paths and that they have no default.
func CallerParams(params []*config.Param, ectx *hcl.EvalContext) ([]*CallerParam, hcl.Diagnostics) {
	var out []*CallerParam
	var diags hcl.Diagnostics
	for _, p := range params {
		if p.FromCaller == nil {
			continue
		}
		v, d := p.FromCaller.Expr.Value(ectx)
		diags = append(diags, d...)
		if d.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			continue // reported by the config loader
		}
		s, d := paramSchema(p, ectx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		n, err := compileNode(s, p.Name)
		if err != nil {
			rng := p.DeclRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid param", Detail: err.Error(), Subject: &rng})
			continue
		}
		out = append(out, &CallerParam{Name: p.Name, Path: v.AsString(), node: n})
	}
	return out, diags
}

// What names the caller attribute in messages: "claim org_id" or "name".
func (c *CallerParam) What() string {
	if claim, ok := strings.CutPrefix(c.Path, "claims."); ok {
		return "claim " + claim
	}
	return c.Path
}

// Bind checks v, the value read from the principal, against the param's
// rules and returns it as an argument of the same value would be: a claim
// of 42 is an int64 for an integer param, as if the model had sent it.
func (c *CallerParam) Bind(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the caller's %s cannot be read: %v", c.What(), err)
	}
	x, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("the caller's %s cannot be read: %v", c.What(), err)
	}
	if err := c.node.check(x, c.Name); err != nil {
		return nil, fmt.Errorf("the caller's %s does not fit param %s: %v", c.What(), c.Name, err)
	}
	return x, nil
}
