package toolbox

import (
	"fmt"
	"strings"
)

// rewritePlaceholders replaces Toolbox's positional placeholders with
// mcpd's named ones: $1, $2, ... (PostgreSQL; SQLite also takes them) or
// ? (MySQL and SQLite, bound in order) become :name, the name of the
// parameter at that position. Strings, quoted identifiers, comments and
// PostgreSQL dollar-quoted strings are copied as they are.
func rewritePlaceholders(sql, dialect string, names []string) (string, error) {
	var b strings.Builder
	next := 0 // the next ? binds names[next]
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\'' || c == '"' || (c == '`' && dialect != "postgres"):
			j := closeQuote(sql, i, c, dialect == "mysql")
			b.WriteString(sql[i:j])
			i = j
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			b.WriteString(sql[i : i+j])
			i += j
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			end := len(sql)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(sql[i:end])
			i = end
		case c == '$' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9' && dialect != "mysql":
			j := i + 1
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			var n int
			fmt.Sscanf(sql[i+1:j], "%d", &n)
			if n < 1 || n > len(names) {
				return "", fmt.Errorf("placeholder %s has no parameter (the tool declares %d)", sql[i:j], len(names))
			}
			b.WriteString(":" + names[n-1])
			i = j
		case c == '$' && dialect == "postgres":
			// A dollar-quoted string: $$...$$ or $tag$...$tag$.
			j := i + 1
			for j < len(sql) && (isWord(sql[j])) {
				j++
			}
			if j < len(sql) && sql[j] == '$' {
				tag := sql[i : j+1]
				k := strings.Index(sql[j+1:], tag)
				end := len(sql)
				if k >= 0 {
					end = j + 1 + k + len(tag)
				}
				b.WriteString(sql[i:end])
				i = end
				continue
			}
			b.WriteByte(c)
			i++
		case c == '?' && dialect == "sqlite" && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9':
			// SQLite's ?NNN: the parameter at that position.
			j := i + 1
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			var n int
			fmt.Sscanf(sql[i+1:j], "%d", &n)
			if n < 1 || n > len(names) {
				return "", fmt.Errorf("placeholder %s has no parameter (the tool declares %d)", sql[i:j], len(names))
			}
			b.WriteString(":" + names[n-1])
			i = j
		case c == '?' && dialect != "postgres":
			if next >= len(names) {
				return "", fmt.Errorf("the statement has more ? placeholders than the tool's %d parameters", len(names))
			}
			b.WriteString(":" + names[next])
			next++
			i++
		case c == ':' && i+1 < len(sql) && isLetter(sql[i+1]) && (i == 0 || sql[i-1] != ':'):
			// mcpd would read :word as a placeholder; Toolbox SQL has none.
			return "", fmt.Errorf("the statement holds %q, which mcpd would read as a named placeholder", sql[i:min(len(sql), i+10)])
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func closeQuote(s string, i int, q byte, backslash bool) int {
	j := i + 1
	for j < len(s) {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q { // doubled quote
				j += 2
				continue
			}
			return j + 1
		}
		if s[j] == '\\' && backslash {
			j += 2
			continue
		}
		j++
	}
	return len(s)
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLetter(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
