package sqladapter

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Helpers that decode attributes whose value must be known at load time.
// Each returns diagnostics with the attribute's range; none of them ever
// puts the value in a message (the DSN goes through them).

func staticValue(attr *hcl.Attribute, scope *adapter.Scope, want cty.Type) (cty.Value, hcl.Diagnostics) {
	diags := scope.CheckStatic(attr.Expr, fmt.Sprintf("The %q attribute", attr.Name))
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	v, d := attr.Expr.Value(scope.EvalContext())
	diags = append(diags, d...)
	if d.HasErrors() {
		return cty.NilVal, diags
	}
	if !v.IsWhollyKnown() {
		// An unset environment variable, in a load that allows it: the
		// subject contains the env() call, so the loader reports the
		// variable instead of this.
		return cty.NilVal, append(diags, attrError(attr, "Value must be known at load time", fmt.Sprintf("%q must be known at load time.", attr.Name)))
	}
	if v.IsNull() {
		return cty.NilVal, append(diags, attrError(attr, "Missing value", fmt.Sprintf("%q must not be null.", attr.Name)))
	}
	cv, err := convert.Convert(v, want)
	if err != nil {
		return cty.NilVal, append(diags, attrError(attr, "Incorrect attribute value type",
			fmt.Sprintf("%q must be %s, not %s.", attr.Name, want.FriendlyName(), v.Type().FriendlyName())))
	}
	return cv, diags
}

func staticString(attr *hcl.Attribute, scope *adapter.Scope) (string, hcl.Diagnostics) {
	v, diags := staticValue(attr, scope, cty.String)
	if diags.HasErrors() {
		return "", diags
	}
	return v.AsString(), diags
}

func staticBool(attr *hcl.Attribute, scope *adapter.Scope) (bool, hcl.Diagnostics) {
	v, diags := staticValue(attr, scope, cty.Bool)
	if diags.HasErrors() {
		return false, diags
	}
	return v.True(), diags
}

// staticInt decodes a whole number no smaller than least.
func staticInt(attr *hcl.Attribute, scope *adapter.Scope, least int) (int, hcl.Diagnostics) {
	v, diags := staticValue(attr, scope, cty.Number)
	if diags.HasErrors() {
		return 0, diags
	}
	var n int
	if err := gocty.FromCtyValue(v, &n); err != nil || n < least {
		return 0, append(diags, attrError(attr, "Invalid number",
			fmt.Sprintf("%q must be a whole number of at least %d.", attr.Name, least)))
	}
	return n, diags
}

// staticDuration decodes a Go duration string ("30s", "1m30s", "500ms");
// positive unless zero is allowed.
func staticDuration(attr *hcl.Attribute, scope *adapter.Scope, zeroOK bool) (time.Duration, hcl.Diagnostics) {
	s, diags := staticString(attr, scope)
	if diags.HasErrors() {
		return 0, diags
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		least := "positive"
		if zeroOK {
			least = "zero or positive"
		}
		return 0, append(diags, attrError(attr, "Invalid duration",
			fmt.Sprintf("%q must be a %s duration such as \"30s\", \"500ms\" or \"5m\".", attr.Name, least)))
	}
	return d, diags
}

func attrError(attr *hcl.Attribute, summary, detail string) *hcl.Diagnostic {
	rng := attr.Expr.Range()
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}
}

// textRange is the source range of bytes [off, end) of the string a static
// expression evaluates to, when the expression is a literal string or
// heredoc. Where the source cannot be matched to the text, it is the range
// of the literal, or of the whole expression (file("query.sql")).
func textRange(expr hcl.Expression, off, end int) hcl.Range {
	whole := expr.Range()
	te, ok := expr.(*hclsyntax.TemplateExpr)
	if !ok {
		return whole
	}
	pos := 0
	for _, part := range te.Parts {
		lit, ok := part.(*hclsyntax.LiteralValueExpr)
		if !ok || lit.Val.Type() != cty.String {
			return whole
		}
		s := lit.Val.AsString()
		if off < pos+len(s) {
			r := lit.SrcRange
			start, stop := s[:off-pos], s[:min(end-pos, len(s))]
			switch srcLen := r.End.Byte - r.Start.Byte; {
			case srcLen == len(s):
				// The text stands in the source as it is.
				return hcl.Range{Filename: r.Filename, Start: advance(r.Start, start), End: advance(r.Start, stop)}
			case r.Start.Line == r.End.Line && srcLen == len(escapeQuoted(s)):
				// A quoted string with escapes: measure the escaped text.
				return hcl.Range{Filename: r.Filename, Start: advance(r.Start, escapeQuoted(start)), End: advance(r.Start, escapeQuoted(stop))}
			case r.Start.Line != r.End.Line:
				// A flush heredoc (<<-): every line lost the indentation of
				// the first. Lines and columns are right; bytes are not.
				indent := r.Start.Column - 1
				return hcl.Range{Filename: r.Filename, Start: advanceIndented(r.Start, start, indent), End: advanceIndented(r.Start, stop, indent)}
			}
			return r
		}
		pos += len(s)
	}
	return whole
}

// escapeQuoted writes s as it stands between quotes in HCL source.
var escapeQuoted = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`, "${", "$${", "%{", "%%{").Replace

// advance moves p over the text s.
func advance(p hcl.Pos, s string) hcl.Pos {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		p.Byte += n
		if r == '\n' {
			p.Line++
			p.Column = 1
		} else {
			p.Column++
		}
	}
	return p
}

// advanceIndented is advance over a flush heredoc's text, whose lines after
// the first start indent columns further right in the source.
func advanceIndented(p hcl.Pos, s string, indent int) hcl.Pos {
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasSuffix(line, "\n") {
			p = advance(p, line)
			p.Column += indent
			p.Byte += indent
		} else {
			p = advance(p, line)
		}
	}
	return p
}
