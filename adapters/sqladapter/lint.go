package sqladapter

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

// LintTool gives the sql adapter's advice for `mcpd lint`: a tool's
// annotations should say what its query does, because hosts decide from
// them whether to ask the user before a call. The query is classified by
// its first keyword with the same scanner the load-time checks use.
func (*Adapter) LintTool(t *adapter.LintTool) hcl.Diagnostics {
	content, _, diags := t.Body.PartialContent(sqlSchema.Body())
	if diags.HasErrors() || content == nil {
		return nil // validate reports it
	}
	attrs := content.Attributes
	queryAttr := attrs["query"]
	if queryAttr == nil {
		return nil
	}
	v, d := queryAttr.Expr.Value(t.Eval)
	if d.HasErrors() || !v.IsWhollyKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return nil
	}
	readOnly := true
	if a := attrs["read_only"]; a != nil {
		if b, d := a.Expr.Value(t.Eval); !d.HasErrors() && b.IsKnown() && !b.IsNull() && b.Type().Equals(cty.Bool) {
			readOnly = b.True()
		}
	}
	q, problems := parseQuery(v.AsString(), lintDialect(t, attrs["database"]))
	if len(problems) > 0 || q.verb == "" {
		return nil
	}
	// Blame the statement's first keyword, where a reader sees what it does.
	subject := queryAttr.Expr.Range()
	for _, tok := range q.tokens {
		if tok.kind == tokWord {
			subject = textRange(queryAttr.Expr, tok.off, tok.end)
			break
		}
	}
	warn := func(summary, detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: summary, Detail: detail, Subject: &subject}}
	}
	writes := writeVerbs[q.verb]
	switch {
	case !readOnly && writes && t.ReadOnly != nil && *t.ReadOnly:
		return warn("Writing tool annotated read-only",
			fmt.Sprintf("Tool %q runs %s with read_only = false, but its annotations say read_only = true: hosts will run it without asking. Remove the read_only annotation and set destructive.", t.Tool, q.verb))
	case !readOnly && writes && t.Destructive == nil:
		return warn("Writing tool without a destructive annotation",
			fmt.Sprintf("Tool %q runs %s. Say whether it can destroy data with annotations { destructive = true } (or false when it only adds rows), so hosts know whether to ask before a call.", t.Tool, q.verb))
	case readOnly && !writes && (t.ReadOnly == nil || !*t.ReadOnly):
		return warn("Read-only tool not annotated read_only",
			fmt.Sprintf("Tool %q only reads (%s in a read-only tool). Add annotations { read_only = true } so hosts can run it without asking.", t.Tool, q.verb))
	}
	return nil
}

// lintDialect is the dialect of the database the block names, sqlite when it
// cannot tell: the first keyword reads the same in every dialect.
func lintDialect(t *adapter.LintTool, dbAttr *hcl.Attribute) dialect {
	if dbAttr == nil || t.BackendBody == nil {
		return sqlite
	}
	name, d := dbAttr.Expr.Value(t.Eval)
	if d.HasErrors() || !name.IsKnown() || name.IsNull() || !name.Type().Equals(cty.String) {
		return sqlite
	}
	body, ok := t.BackendBody("database", name.AsString())
	if !ok {
		return sqlite
	}
	attrs, _ := body.JustAttributes()
	if a := attrs["driver"]; a != nil {
		if v, d := a.Expr.Value(t.Eval); !d.HasErrors() && v.IsKnown() && !v.IsNull() && v.Type().Equals(cty.String) {
			if dl, ok := dialects[v.AsString()]; ok {
				return dl
			}
		}
	}
	return sqlite
}
