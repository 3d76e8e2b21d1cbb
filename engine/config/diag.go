package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Pos formats the start of a range as file:line:col, the form editors and CI
// annotate.
func Pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// WriteDiagnostics prints diagnostics as `file:line:col: severity: message`,
// each followed by its source line and a caret under the subject when the
// source is known.
func WriteDiagnostics(w io.Writer, diags hcl.Diagnostics, sources map[string][]byte) {
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += ": " + d.Detail
		}
		if d.Subject == nil {
			fmt.Fprintf(w, "%s: %s\n", sev, msg)
			continue
		}
		fmt.Fprintf(w, "%s: %s: %s\n", Pos(*d.Subject), sev, msg)
		if line, ok := sourceLine(sources[d.Subject.Filename], d.Subject.Start.Line); ok {
			prefix := fmt.Sprintf("%5d | ", d.Subject.Start.Line)
			fmt.Fprintf(w, "%s%s\n", prefix, line)
			width := 1
			if d.Subject.End.Line == d.Subject.Start.Line && d.Subject.End.Column > d.Subject.Start.Column {
				width = d.Subject.End.Column - d.Subject.Start.Column
			}
			pad := strings.Repeat(" ", len(prefix)-2) + "| " + caretPad(line, d.Subject.Start.Column-1)
			fmt.Fprintf(w, "%s%s\n", pad, strings.Repeat("^", width))
		}
	}
}

// caretPad reproduces the line's leading tabs so the caret lines up.
func caretPad(line string, col int) string {
	var b strings.Builder
	for i, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func sourceLine(src []byte, n int) (string, bool) {
	if src == nil || n < 1 {
		return "", false
	}
	lines := bytes.Split(src, []byte("\n"))
	if n > len(lines) {
		return "", false
	}
	return strings.TrimRight(string(lines[n-1]), "\r"), true
}

// JSONDiagnostic is the machine-readable form of one diagnostic.
type JSONDiagnostic struct {
	Severity  string `json:"severity"`
	Summary   string `json:"summary"`
	Detail    string `json:"detail,omitempty"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	Column    int    `json:"column,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
	EndColumn int    `json:"end_column,omitempty"`
	// Source is the text of the line the diagnostic points at, when asked
	// for (SourcedDiagnostics).
	Source string `json:"source,omitempty"`
}

// JSONDiagnostics converts diagnostics for `mcpd validate --format json`.
func JSONDiagnostics(diags hcl.Diagnostics) []JSONDiagnostic {
	out := make([]JSONDiagnostic, 0, len(diags))
	for _, d := range diags {
		jd := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if d.Subject != nil {
			jd.File, jd.Line, jd.Column = d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column
			jd.EndLine, jd.EndColumn = d.Subject.End.Line, d.Subject.End.Column
		}
		out = append(out, jd)
	}
	return out
}

// SourcedDiagnostics is JSONDiagnostics with the source line each one
// points at, for readers that have no copy of the files (the console).
func SourcedDiagnostics(diags hcl.Diagnostics, sources map[string][]byte) []JSONDiagnostic {
	out := JSONDiagnostics(diags)
	for i := range out {
		if line, ok := sourceLine(sources[out[i].File], out[i].Line); ok {
			out[i].Source = line
		}
	}
	return out
}

// MarshalDiagnostics is JSONDiagnostics encoded, one JSON document.
func MarshalDiagnostics(diags hcl.Diagnostics) []byte {
	b, _ := json.MarshalIndent(struct {
		Valid       bool             `json:"valid"`
		Diagnostics []JSONDiagnostic `json:"diagnostics"`
	}{!diags.HasErrors(), JSONDiagnostics(diags)}, "", "  ")
	return append(b, '\n')
}

// SortDiagnostics sorts diagnostics in place: the errors, then the
// warnings, each in file order (file, line, column), keeping the order of
// those at the same place (stable); those without a place (a file that
// cannot be read) come last in their group. The loader, lint and test each
// find problems in several passes, and a list in the order of the passes
// jumped back and forth through the files; errors come first because they
// are what stops the config from loading, and a reader (or the first line of
// a reload's status) should not have to look past warnings for them. The
// writers print what they are given in its order: a list put together from
// several (mcpd test's) is sorted again.
func SortDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	slices.SortStableFunc(diags, func(a, b *hcl.Diagnostic) int {
		if a.Severity != b.Severity {
			// hcl.DiagError (1) before hcl.DiagWarning (2).
			return cmp.Compare(a.Severity, b.Severity)
		}
		switch {
		case a.Subject == nil && b.Subject == nil:
			return 0
		case a.Subject == nil:
			return 1
		case b.Subject == nil:
			return -1
		}
		return cmp.Or(
			cmp.Compare(a.Subject.Filename, b.Subject.Filename),
			cmp.Compare(a.Subject.Start.Line, b.Subject.Start.Line),
			cmp.Compare(a.Subject.Start.Column, b.Subject.Start.Column),
		)
	})
	return diags
}
