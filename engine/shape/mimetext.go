package shape

import (
	"mime"
	"strings"
)

// textApplication are the application/* types whose content is text. A
// client that is sent them as a blob shows base64 to the model.
var textApplication = map[string]bool{
	"sql": true, "x-sql": true, "json": true, "xml": true, "yaml": true, "x-yaml": true,
	"toml": true, "x-toml": true, "javascript": true, "x-javascript": true, "ecmascript": true,
	"typescript": true, "x-typescript": true, "graphql": true, "x-sh": true, "x-shellscript": true,
	"x-httpd-php": true, "x-python": true, "x-ruby": true, "x-perl": true, "x-tex": true, "x-latex": true,
	"csv": true, "x-ndjson": true, "ndjson": true, "jsonl": true, "x-www-form-urlencoded": true,
	"hcl": true, "x-hcl": true, "markdown": true, "x-markdown": true,
}

// IsText reports whether content of MIME type mt is text (a resource's
// content is sent as text, not as a base64 blob): text/*, the
// textual application types, and any +json, +xml or +yaml type
// (application/ld+json, image/svg+xml). Parameters (charset) are ignored;
// case does not matter.
func IsText(mt string) bool {
	base, _, err := mime.ParseMediaType(mt)
	if err != nil {
		base = strings.ToLower(strings.TrimSpace(mt))
	}
	typ, sub, ok := strings.Cut(base, "/")
	if !ok {
		return false
	}
	switch {
	case typ == "text":
		return true
	case strings.HasSuffix(sub, "+json"), strings.HasSuffix(sub, "+xml"), strings.HasSuffix(sub, "+yaml"):
		return true
	case typ == "application":
		return textApplication[sub]
	}
	return false
}
