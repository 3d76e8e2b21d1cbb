// Package suggest finds the name a misspelled one was meant to be, for
// "did you mean" in diagnostics and errors.
package suggest

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// Closest returns the candidate closest to name when it is close enough to
// be a likely misspelling (about a third of the longer name's letters, at
// most 3, changed: a swap of two letters counts 2), or "". Ties go to the earlier candidate.
func Closest(name string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		if c == name {
			continue
		}
		longer := max(len(name), len(c))
		d := levenshtein.Distance(name, c, nil)
		limit := min(3, (longer+2)/3)
		if d <= limit && d < longer && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean is Closest as the end of a message: ` Did you mean "x"?`, or
// "" when no candidate is close.
func DidYouMean(name string, candidates []string) string {
	if s := Closest(name, candidates); s != "" {
		return fmt.Sprintf(" Did you mean %q?", s)
	}
	return ""
}
