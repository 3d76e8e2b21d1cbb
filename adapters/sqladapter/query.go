package sqladapter

import (
	"fmt"
	"strings"
)

// A compiledQuery is the text of a tool's query translated, once at load
// time, from mcpd's portable syntax to the driver's:
//
//	:name     a value bound by the driver ($1 for postgres, ? otherwise)
//	{{name}}  an identifier chosen from the tool's `identifiers` list,
//	          quoted for the dialect at call time
//
// Both are recognised only in SQL text: never inside string literals,
// quoted identifiers or comments, and `::` (a PostgreSQL cast) is not a
// placeholder.
type compiledQuery struct {
	// parts is the translated SQL: text with native placeholders, and
	// identifier slots between texts. A query without slots is one part.
	parts []queryPart
	// binds names the param bound to each driver placeholder, in order.
	binds []string
	// params and idents are every :name and {{name}}, for load-time checks.
	params []nameRef
	idents []nameRef
	// verb is the statement's first keyword, upper case ("SELECT").
	verb string
	// returning reports a RETURNING clause: a write that yields rows.
	returning bool
	// tokens are the query's words, quoted identifiers and the punctuation
	// that matters to the read-only checks, with strings and comments left
	// out: what the database will read as SQL (see readonly.go).
	tokens []token
	// escapedQuotes (mysql) are the offsets of \' and \" in string
	// literals: where the literal ends depends on the server's sql_mode
	// (NO_BACKSLASH_ESCAPES, ANSI_QUOTES), so the checks cannot know what
	// follows it is SQL.
	escapedQuotes []int
}

type queryPart struct {
	sql   string
	ident string // when set, the part is an identifier slot
}

// nameRef is one use of a name in the query text, as byte offsets.
type nameRef struct {
	name     string
	off, end int
}

// A queryProblem is an error in the query text, at byte offsets.
type queryProblem struct {
	off, end int
	summary  string
	detail   string
}

// sql returns the query with identifier slots filled by quoted names.
func (q *compiledQuery) sql(d dialect, ident func(name string) string) string {
	if len(q.parts) == 1 && q.parts[0].ident == "" {
		return q.parts[0].sql
	}
	var b strings.Builder
	for _, p := range q.parts {
		if p.ident != "" {
			b.WriteString(d.quoteIdent(ident(p.ident)))
		} else {
			b.WriteString(p.sql)
		}
	}
	return b.String()
}

// parseQuery translates src for dialect d. It refuses what it cannot
// translate safely: the driver's own placeholders (which would bypass the
// check against the tool's params), unterminated strings and comments, and
// more than one statement.
func parseQuery(src string, d dialect) (*compiledQuery, []queryProblem) {
	s := &scanner{src: src, d: d, numbers: map[string]int{}, end: -1}
	s.scan()
	return &s.q, s.problems
}

type scanner struct {
	src      string
	d        dialect
	execCmt  bool            // mysql: inside a /*! ... */ comment, which the server runs
	execOff  int             // where that comment starts
	i        int             // current byte
	start    int             // first byte not yet copied to lit
	end      int             // offset of the terminating ';', or -1
	lit      strings.Builder // the current text part
	numbers  map[string]int  // postgres: param name → $n
	q        compiledQuery
	problems []queryProblem
}

func (s *scanner) at(i int) byte {
	if i >= 0 && i < len(s.src) {
		return s.src[i]
	}
	return 0
}

func (s *scanner) problem(off, end int, summary, detail string) {
	s.problems = append(s.problems, queryProblem{off: off, end: end, summary: summary, detail: detail})
}

func (s *scanner) scan() {
	src := s.src
	for s.i < len(src) {
		c := src[s.i]
		if s.execCmt && c == '*' && s.at(s.i+1) == '/' {
			s.execCmt = false // the end of a /*! ... */ comment
			s.i += 2
			continue
		}
		if s.end >= 0 && !isSpace(c) && c != ';' && (!s.atComment() || s.atExecComment()) {
			s.problem(s.i, max(s.i+1, len(strings.TrimRight(src, " \t\r\n;"))), "More than one statement",
				"A tool runs exactly one SQL statement; this text follows the ';' that ends the first one. Split the work into several tools (or, on PostgreSQL, one statement with CTEs).")
			break
		}
		switch {
		case c == '\'':
			s.i = s.skipQuoted(s.i, '\'', s.backslashEscapes(), "string literal")
		case c == '"' && s.d == mysql: // a string unless ANSI_QUOTES
			s.i = s.skipQuoted(s.i, '"', true, "quoted identifier")
		case c == '"':
			s.quotedIdent(s.skipQuoted(s.i, '"', false, "quoted identifier"))
		case c == '`' && s.d != postgres:
			s.quotedIdent(s.skipQuoted(s.i, '`', false, "quoted identifier"))
		case c == '[' && s.d == sqlite:
			s.quotedIdent(s.skipUntil(s.i, "]", "bracketed identifier"))
		case s.atExecComment():
			// MySQL runs the text of /*! ... */ and MariaDB of /*M! ... */
			// (an optional version number first): it is SQL, not a comment.
			s.execOff = s.i
			s.i += 3
			if s.at(s.i-1) == 'M' {
				s.i++
			}
			for s.at(s.i) >= '0' && s.at(s.i) <= '9' {
				s.i++
			}
			s.execCmt = true
		case s.atComment():
			s.i = s.skipComment(s.i)
		case c == '$' && s.d == postgres:
			s.dollar()
		case c == ':':
			s.colon()
		case c == '?' && s.d != postgres:
			s.problem(s.i, s.i+1, "Positional placeholder", "Write values as :name placeholders that name a param (for example `WHERE id = :id`); mcpd translates them to the driver's own syntax.")
			s.i++
		case (c == '@' || c == '$') && s.d == sqlite && isNameStart(s.at(s.i+1)) && !s.afterIdent(s.i):
			n := s.i + 1 + nameLen(src[s.i+1:])
			s.problem(s.i, n, "Native SQLite placeholder", fmt.Sprintf("SQLite would bind %s as NULL. Write :%s for a value that names a param.", src[s.i:n], src[s.i+1:n]))
			s.i = n
		case c == '{' && s.at(s.i+1) == '{':
			s.identSlot()
		case c == ';':
			s.q.tokens = append(s.q.tokens, token{kind: tokPunct, text: ";", off: s.i, end: s.i + 1})
			if s.end < 0 {
				s.end = s.i
			}
			s.i++
		case isNameStart(c) && !s.afterIdent(s.i):
			s.word()
		default:
			if strings.IndexByte("()=.,@", c) >= 0 {
				s.q.tokens = append(s.q.tokens, token{kind: tokPunct, text: src[s.i : s.i+1], off: s.i, end: s.i + 1})
			}
			s.i++
		}
	}
	if s.execCmt {
		s.problem(s.execOff, len(src), "Unterminated comment", "This /*! comment has no closing */.")
	}
	stop := len(src)
	if s.end >= 0 {
		stop = s.end
	}
	if s.start < stop {
		s.lit.WriteString(src[s.start:stop])
	}
	if s.lit.Len() > 0 || len(s.q.parts) == 0 {
		s.q.parts = append(s.q.parts, queryPart{sql: s.lit.String()})
	}
}

// backslashEscapes reports whether the string literal opening at s.i treats
// backslash as an escape: always in MySQL, in PostgreSQL for E'...'.
func (s *scanner) backslashEscapes() bool {
	switch s.d {
	case mysql:
		return true
	case postgres:
		p := s.at(s.i - 1)
		return s.i > 0 && (p == 'E' || p == 'e') && !s.afterIdent(s.i-1)
	}
	return false
}

// afterIdent reports whether the byte before i continues an identifier or
// a number, so that the byte at i is inside a word rather than starting one.
func (s *scanner) afterIdent(i int) bool {
	return i > 0 && isIdentChar(s.src[i-1])
}

// atExecComment reports a MySQL comment whose text the server runs:
// /*! ... */, or /*M! ... */ in MariaDB.
func (s *scanner) atExecComment() bool {
	return s.d == mysql && !s.execCmt && (strings.HasPrefix(s.src[s.i:], "/*!") || strings.HasPrefix(s.src[s.i:], "/*M!"))
}

// quotedIdent records the quoted identifier from s.i to end, and moves
// past it.
func (s *scanner) quotedIdent(end int) {
	name := s.src[s.i:end]
	if len(name) >= 2 {
		q := name[:1]
		if q == "[" {
			name = name[1 : len(name)-1]
		} else {
			name = strings.ReplaceAll(name[1:len(name)-1], q+q, q)
		}
	}
	s.q.tokens = append(s.q.tokens, token{kind: tokQuoted, text: name, off: s.i, end: end})
	s.i = end
}

func (s *scanner) atComment() bool {
	c, n := s.at(s.i), s.at(s.i+1)
	switch {
	case c == '-' && n == '-':
		// MySQL needs whitespace after "--": "1--1" is arithmetic there.
		return s.d != mysql || s.i+2 >= len(s.src) || isSpace(s.at(s.i+2))
	case c == '#':
		return s.d == mysql
	case c == '/' && n == '*':
		return true
	}
	return false
}

func (s *scanner) skipComment(i int) int {
	if s.src[i] == '/' {
		if s.d != postgres {
			return s.skipUntil(i, "*/", "comment")
		}
		depth := 0 // PostgreSQL block comments nest
		for j := i; j < len(s.src)-1; j++ {
			switch s.src[j : j+2] {
			case "/*":
				depth++
				j++
			case "*/":
				depth--
				j++
				if depth == 0 {
					return j + 1
				}
			}
		}
		s.problem(i, len(s.src), "Unterminated comment", "This /* comment has no closing */.")
		return len(s.src)
	}
	if j := strings.IndexByte(s.src[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s.src)
}

func (s *scanner) skipQuoted(i int, q byte, backslash bool, what string) int {
	for j := i + 1; j < len(s.src); j++ {
		switch c := s.src[j]; {
		case backslash && c == '\\':
			if s.d == mysql && s.at(j+1) == q {
				s.q.escapedQuotes = append(s.q.escapedQuotes, j)
			}
			j++
		case c == q && s.at(j+1) == q:
			j++
		case c == q:
			return j + 1
		}
	}
	s.problem(i, len(s.src), "Unterminated "+what, fmt.Sprintf("This %s has no closing %c.", what, q))
	return len(s.src)
}

func (s *scanner) skipUntil(i int, closer, what string) int {
	if j := strings.Index(s.src[i+1:], closer); j >= 0 {
		return i + 1 + j + len(closer)
	}
	s.problem(i, len(s.src), "Unterminated "+what, fmt.Sprintf("This %s has no closing %s.", what, closer))
	return len(s.src)
}

// dollar handles '$' in PostgreSQL: a dollar-quoted string ($$...$$ or
// $tag$...$tag$) is skipped; $1 is refused.
func (s *scanner) dollar() {
	i, src := s.i, s.src
	if s.afterIdent(i) {
		s.i++ // part of an identifier such as a$b
		return
	}
	if c := s.at(i + 1); c >= '0' && c <= '9' {
		n := i + 1
		for n < len(src) && src[n] >= '0' && src[n] <= '9' {
			n++
		}
		s.problem(i, n, "Positional placeholder", "Write values as :name placeholders that name a param (for example `WHERE id = :id`); mcpd numbers them for PostgreSQL.")
		s.i = n
		return
	}
	n := i + 1 + nameLen(src[i+1:])
	if s.at(n) != '$' {
		s.i++
		return
	}
	tag := src[i : n+1]
	if j := strings.Index(src[n+1:], tag); j >= 0 {
		s.i = n + 1 + j + len(tag)
		return
	}
	s.problem(i, len(src), "Unterminated dollar-quoted string", fmt.Sprintf("This string has no closing %s.", tag))
	s.i = len(src)
}

// colon handles ':': a PostgreSQL cast (::) is SQL; :name is a placeholder.
func (s *scanner) colon() {
	i := s.i
	if s.at(i+1) == ':' {
		s.i += 2
		return
	}
	if s.at(i+1) == '=' {
		// MySQL's assignment in an expression (@v := x), for the checks.
		s.q.tokens = append(s.q.tokens, token{kind: tokPunct, text: ":=", off: i, end: i + 2})
		s.i += 2
		return
	}
	if !isNameStart(s.at(i + 1)) {
		s.i++
		return
	}
	n := i + 1 + nameLen(s.src[i+1:])
	name := s.src[i+1 : n]
	s.flush(i)
	s.q.params = append(s.q.params, nameRef{name: name, off: i, end: n})
	if s.d.numberedPlaceholders() {
		num, seen := s.numbers[name]
		if !seen {
			s.q.binds = append(s.q.binds, name)
			num = len(s.q.binds)
			s.numbers[name] = num
		}
		s.lit.WriteString(s.d.nativePlaceholder(num))
	} else {
		s.q.binds = append(s.q.binds, name)
		s.lit.WriteString(s.d.nativePlaceholder(len(s.q.binds)))
	}
	s.i, s.start = n, n
}

// identSlot handles {{name}}.
func (s *scanner) identSlot() {
	i := s.i
	j := strings.Index(s.src[i+2:], "}}")
	if j < 0 {
		s.problem(i, i+2, "Unclosed {{", "An identifier slot is written {{param}}, naming a param listed in `identifiers`.")
		s.i += 2
		return
	}
	n := i + 2 + j + 2
	name := strings.TrimSpace(s.src[i+2 : n-2])
	if name == "" || nameLen(name) != len(name) || !isNameStart(name[0]) {
		s.problem(i, n, "Invalid identifier slot", fmt.Sprintf("%s must name a param: {{param}}, with letters, digits and underscores.", s.src[i:n]))
		s.i = n
		return
	}
	s.flush(i)
	s.q.parts = append(s.q.parts, queryPart{sql: s.lit.String()}, queryPart{ident: name})
	s.lit.Reset()
	s.q.idents = append(s.q.idents, nameRef{name: name, off: i, end: n})
	s.i, s.start = n, n
}

// word reads one keyword or unquoted identifier.
func (s *scanner) word() {
	n := s.i
	for n < len(s.src) && isIdentChar(s.src[n]) {
		n++
	}
	w := s.src[s.i:n]
	if s.q.verb == "" {
		s.q.verb = strings.ToUpper(w)
	}
	if strings.EqualFold(w, "RETURNING") {
		s.q.returning = true
	}
	s.q.tokens = append(s.q.tokens, token{kind: tokWord, text: w, off: s.i, end: n})
	s.i = n
}

// flush copies the source up to i into the current text part.
func (s *scanner) flush(i int) {
	s.lit.WriteString(s.src[s.start:i])
	s.start = i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isNameStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }

func isIdentChar(c byte) bool {
	return isNameStart(c) || (c >= '0' && c <= '9') || c == '$' || c >= 0x80
}

// nameLen is the length of the param name at the start of s.
func nameLen(s string) int {
	n := 0
	for n < len(s) && (isNameStart(s[n]) || (s[n] >= '0' && s[n] <= '9')) {
		n++
	}
	return n
}
