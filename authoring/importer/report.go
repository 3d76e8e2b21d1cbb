// Package importer holds what the converters of other tools' configurations
// into mcpd HCL share: the report of what was not converted (with where it
// is in the source document), tool and param naming, and the hclwrite
// helpers that build the expressions mcpd's language needs. The converters
// themselves live in its subpackages, one per source format.
package importer

import (
	"fmt"
	"io"
	"sort"
)

// Severity says how much attention an Issue needs.
type Severity string

const (
	// Skipped marks a part of the source that was not converted at all, or
	// only partly: the generated config lacks it.
	Skipped Severity = "not converted"
	// Note marks a conversion that was made with an assumption worth
	// checking (a placeholder URL, an environment variable to set).
	Note Severity = "note"
)

// Issue is one thing the user should know about the conversion, with its
// place in the source document.
type Issue struct {
	// Where is the place in the source: a JSON pointer for OpenAPI
	// (#/paths/~1pets/post/requestBody), a dotted path for YAML.
	Where string
	// Line is the source line, 0 when unknown.
	Line     int
	Severity Severity
	Message  string
}

func (i Issue) String() string {
	loc := i.Where
	if i.Line > 0 {
		if loc != "" {
			loc = fmt.Sprintf("line %d (%s)", i.Line, loc)
		} else {
			loc = fmt.Sprintf("line %d", i.Line)
		}
	}
	if loc == "" {
		return fmt.Sprintf("%s: %s", i.Severity, i.Message)
	}
	return fmt.Sprintf("%s: %s: %s", loc, i.Severity, i.Message)
}

// Report collects the issues of one conversion.
type Report struct {
	File   string // the source document, prefixed to each issue when printed
	Issues []Issue
}

// Skip records a part that was not converted.
func (r *Report) Skip(where string, line int, format string, args ...any) {
	r.Issues = append(r.Issues, Issue{Where: where, Line: line, Severity: Skipped, Message: fmt.Sprintf(format, args...)})
}

// Note records an assumption the user should check.
func (r *Report) Note(where string, line int, format string, args ...any) {
	r.Issues = append(r.Issues, Issue{Where: where, Line: line, Severity: Note, Message: fmt.Sprintf(format, args...)})
}

// Count returns how many issues have the severity.
func (r *Report) Count(s Severity) int {
	n := 0
	for _, i := range r.Issues {
		if i.Severity == s {
			n++
		}
	}
	return n
}

// Write prints the issues, ordered by line (stable otherwise), one a line,
// each prefixed by the source file's name.
func (r *Report) Write(w io.Writer) {
	issues := append([]Issue(nil), r.Issues...)
	sort.SliceStable(issues, func(a, b int) bool { return issues[a].Line < issues[b].Line })
	for _, i := range issues {
		if r.File != "" {
			fmt.Fprintf(w, "%s: %s\n", r.File, i)
		} else {
			fmt.Fprintln(w, i)
		}
	}
}
