package importer

import (
	"fmt"
	"strings"
	"unicode"
)

// MaxToolName is the longest tool name the importers generate: MCP allows
// 128 characters, but several hosts cut or refuse names over 64.
const MaxToolName = 64

// Snake turns an identifier written in any common style (camelCase,
// PascalCase, kebab-case, "with spaces", HTTPServer) into snake_case of
// ASCII letters, digits and underscores. It returns "" when nothing is left.
func Snake(s string) string {
	var b strings.Builder
	runes := []rune(s)
	prevUnderscore := true // no leading underscore
	for i, r := range runes {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if unicode.IsUpper(r) && !prevUnderscore && i > 0 {
				prev := runes[i-1]
				nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
				// fooBar → foo_bar; HTTPServer → http_server; v2Api → v2_api
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					b.WriteByte('_')
				}
			}
			b.WriteRune(unicode.ToLower(r))
			prevUnderscore = false
		default:
			if !prevUnderscore {
				b.WriteByte('_')
				prevUnderscore = true
			}
		}
	}
	return strings.TrimRight(b.String(), "_")
}

// Ident makes a valid HCL identifier (and mcpd name) of s: snake_case,
// never empty, never starting with a digit.
func Ident(s, fallback string) string {
	n := Snake(s)
	if n == "" {
		n = fallback
	}
	if n != "" && n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

// Namer hands out unique names: a name already given gets _2, _3, ...
// appended, within max characters.
type Namer struct {
	max  int
	used map[string]bool
}

// NewNamer returns a Namer for names of at most max characters (0: no
// limit).
func NewNamer(max int) *Namer { return &Namer{max: max, used: map[string]bool{}} }

// Reserve marks a name as taken without handing it out.
func (n *Namer) Reserve(name string) { n.used[name] = true }

// Taken says whether a name has been handed out or reserved.
func (n *Namer) Taken(name string) bool { return n.used[name] }

// Unique returns base, cut to the limit, or base_N when that is taken.
func (n *Namer) Unique(base string) string {
	name := n.cut(base, "")
	for i := 2; n.used[name]; i++ {
		name = n.cut(base, fmt.Sprintf("_%d", i))
	}
	n.used[name] = true
	return name
}

func (n *Namer) cut(base, suffix string) string {
	if n.max > 0 && len(base)+len(suffix) > n.max {
		base = strings.TrimRight(base[:n.max-len(suffix)], "_")
	}
	return base + suffix
}

// EnvName makes an environment variable name of parts: upper case, words
// joined by underscores (PETSTORE_API_KEY).
func EnvName(parts ...string) string {
	var words []string
	for _, p := range parts {
		if s := Snake(p); s != "" {
			words = append(words, s)
		}
	}
	return strings.ToUpper(strings.Join(words, "_"))
}
