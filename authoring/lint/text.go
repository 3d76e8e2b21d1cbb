package lint

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Text findings: what a reviewer looks for in text the model reads (an
// upstream's tool description, a parameter's), where a "rug pull" hides:
// characters a screen does not show, sentences addressed to the model
// rather than describing the tool, and links. They are advice for the
// person who approves a changed definition (the console's drift view,
// docs/gateway.md), not proof: a description may rightly link its docs.

// Finding is one thing worth a second look in a text.
type Finding struct {
	// Rule is "hidden-characters", "model-instructions" or "link".
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Path names the text within a definition ("description",
	// "inputSchema.properties.path.description"); set by Definition.
	Path string `json:"path,omitempty"`
}

// Text returns the findings on one text.
func Text(s string) []Finding {
	var out []Finding
	var hidden []string
	for i, r := range s {
		if isHidden(r) {
			hidden = append(hidden, fmt.Sprintf("U+%04X at byte %d", r, i))
		}
	}
	if len(hidden) > 0 {
		more := ""
		if len(hidden) > 5 {
			more = fmt.Sprintf(" and %d more", len(hidden)-5)
			hidden = hidden[:5]
		}
		out = append(out, Finding{Rule: "hidden-characters", Message: "characters a screen does not show (invisible, format, bidi or tag characters, control characters): " + strings.Join(hidden, ", ") + more})
	}
	lower := strings.ToLower(s)
	for _, p := range instructionPatterns {
		if m := p.re.FindString(lower); m != "" {
			out = append(out, Finding{Rule: "model-instructions", Message: fmt.Sprintf("%s: %q", p.why, m)})
		}
	}
	if links := linkPattern.FindAllString(s, 6); len(links) > 0 {
		more := ""
		if len(links) > 5 {
			links, more = links[:5], " and more"
		}
		out = append(out, Finding{Rule: "link", Message: "links, which a model may follow or repeat: " + strings.Join(links, ", ") + more})
	}
	return out
}

// Definition returns the findings on every text of a definition (a JSON
// object as decoded), each with its path, in path order.
func Definition(def map[string]any) []Finding {
	var out []Finding
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case string:
			for _, f := range Text(x) {
				f.Path = path
				out = append(out, f)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("", def)
	return out
}

func isHidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return true
	case r >= 0xe0000 && r <= 0xe007f: // tag characters: invisible ASCII
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

var instructionPatterns = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|other)\s+(instructions|rules|directions)`), "tells the model to set its instructions aside"},
	{regexp.MustCompile(`<\s*/?\s*(important|system|instructions?|secret)\s*>`), "a tag addressed to the model"},
	{regexp.MustCompile(`(do\s+not|don't|never)\s+(tell|mention|inform|show|reveal\s+to)\s+(the\s+)?user`), "tells the model to keep something from the user"},
	{regexp.MustCompile(`(before|prior\s+to)\s+(using|calling|running)\s+(this|any|the)\s+(tool|function)`), "tells the model what to do before it calls a tool"},
	{regexp.MustCompile(`(~/\.ssh|id_rsa|id_ed25519|\.aws/credentials|/etc/passwd|/etc/shadow|\.env\b|\.netrc|private\s+key)`), "names a file or secret a tool has no business asking for"},
	{regexp.MustCompile(`(system\s+prompt|you\s+are\s+now|you\s+must\s+(always|first|now))`), "speaks to the model as its instructions do"},
	{regexp.MustCompile(`(send|forward|upload|post|exfiltrate)\s+(it|them|this|the\s+\w+)?\s*to\s+(https?://|\S+@)`), "tells the model to send data somewhere"},
}

var linkPattern = regexp.MustCompile(`(?i)(https?://[^\s)<>"']+|\bdata:[a-z]+/[a-z0-9.+-]+[;,][^\s)"']{0,40}|\]\([^)\s]+\))`)
