// Package ident is mcpd's rule for the identifiers it passes on from a
// service it does not control (an upstream MCP server's names, titles,
// URIs, URI templates, MIME types, prompt arguments): what reaches a
// client's screen, a log line or a terminal. One rule for all of them, so
// that no path takes in an identifier another path would refuse.
//
// An identifier is refused when it is not valid UTF-8, is longer than
// MaxLen bytes, or holds a character that makes text on a screen say
// something else than it is:
//
//   - control characters (C0, DEL, C1): a terminal runs ESC sequences
//     (colours, cursor moves, window titles, OSC 8 links, clipboard
//     writes), CR and LF forge lines in logs and lists, NUL truncates;
//   - format characters (Unicode Cf: bidi embeddings, overrides and
//     isolates, zero-width spaces and joiners, BOM, tags), and the line
//     and paragraph separators: they reorder text or hide in it, so that
//     two different names or URIs look the same.
//
// An entry with a refused identifier is dropped, not repaired: a repaired
// name or URI would address something other than what its server meant.
//
// Descriptions are prose, not identifiers: they may hold tabs and
// newlines, and they are cleaned rather than refused (Clean), so that one
// stray escape in a long, often generated text does not cost the entry.
package ident

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToolName reports whether s is a tool name as MCP requires: 1 to 128 of
// [A-Za-z0-9_.-]. It is the one copy of that rule: the config's tools, the
// tools and prompts an upstream contributes and the importers' names all
// pass it. (Written out rather than as a regular expression, whose bounded
// repetition compiled into thousands of states at every start.)
func ToolName(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// MaxLen is the most bytes an identifier may hold.
const MaxLen = 4096

// Check returns why s is not an identifier mcpd passes on, or nil. An
// empty s passes: whether a field may be empty is the caller's rule.
func Check(s string) error {
	return CheckLen(s, MaxLen)
}

// CheckLen is Check with a bound of max bytes (0: none), for an address a
// client fetches rather than shows (an icon's data: URI).
func CheckLen(s string, max int) error {
	if max > 0 && len(s) > max {
		return fmt.Errorf("longer than %d bytes", max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("not valid UTF-8")
	}
	for i, r := range s {
		if refused(r) {
			return fmt.Errorf("holds %U at byte %d (%s)", r, i, what(r))
		}
	}
	return nil
}

// refused reports whether an identifier may not hold r.
func refused(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

func what(r rune) string {
	switch {
	case r == 0x1b:
		return "an escape, which starts a terminal sequence"
	case unicode.IsControl(r):
		return "a control character"
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x61c:
		return "a bidi control, which reorders text"
	case r == '\u2028' || r == '\u2029':
		return "a line separator"
	}
	return "an invisible format character"
}

// Clean is a description as mcpd passes it on: valid UTF-8, without the
// control characters other than tab and newline (an ESC's sequence loses
// its ESC and shows as text), and without bidi controls and line
// separators. Other format characters stay (zero-width joiners build
// emoji); a description names nothing, so what hides in it cannot pass
// for another entry.
func Clean(s string) string {
	if !strings.ContainsFunc(s, dropped) && utf8.ValidString(s) {
		return s // the usual case: no copy
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if dropped(r) {
			return -1
		}
		return r
	}, s)
}

// dropped reports whether Clean removes r.
func dropped(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x61c:
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	}
	return false
}
