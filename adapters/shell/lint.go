package shell

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

// LintTool gives the shell adapter's advice for `mcpd lint`: a process that
// inherits mcpd's whole environment sees every secret mcpd was started
// with, which the model can then ask it to print.
func (*Adapter) LintTool(t *adapter.LintTool) hcl.Diagnostics {
	content, _, diags := t.Body.PartialContent(blockSchema.Body())
	if diags.HasErrors() || content == nil {
		return nil
	}
	a := content.Attributes["inherit_env"]
	if a == nil {
		return nil
	}
	v, d := a.Expr.Value(t.Eval)
	if d.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.Bool) || v.False() {
		return nil
	}
	rng := a.Range
	return hcl.Diagnostics{{
		Severity: hcl.DiagWarning,
		Summary:  "Shell tool inherits the whole environment",
		Detail:   "inherit_env = true hands the process every variable mcpd was started with, secrets included, and the tool's output goes to the model. Pass only what the program needs with env = { NAME = env(\"NAME\") }.",
		Subject:  &rng,
	}}
}
