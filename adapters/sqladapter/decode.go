package sqladapter

import (
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

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
