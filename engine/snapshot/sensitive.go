package snapshot

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/redact"
)

// sensitiveArgs returns the top-level properties of an input schema marked
// "writeOnly": true, which is how a param with sensitive = true is written
// (and how a hand-written input_schema marks one).
func sensitiveArgs(in map[string]any) map[string]bool {
	props, _ := in["properties"].(map[string]any)
	var out map[string]bool
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			if wo, _ := pm["writeOnly"].(bool); wo {
				if out == nil {
					out = map[string]bool{}
				}
				out[name] = true
			}
		}
	}
	return out
}

// Sensitive reports whether the argument name is sensitive: its value is
// kept out of the audit log, logs and error texts.
func (t *Tool) Sensitive(name string) bool { return t.sensitive[name] }

// scrubSensitive replaces the values of the call's sensitive arguments in
// an error result: the validator already leaves them out of its messages,
// but a backend's error (an HTTP API or a database echoing its input) may
// quote them. Values are found as the redact package finds secrets (raw,
// JSON-escaped, URL-encoded, base64, hex), so values shorter than
// redact.MinLen are not searched for. Results that are not errors are the
// tool's output and left alone.
func (t *Tool) scrubSensitive(raw json.RawMessage, res *mcp.CallToolResult) *mcp.CallToolResult {
	if len(t.sensitive) == 0 || res == nil || !res.IsError || len(raw) == 0 {
		return res
	}
	r := redact.New(t.sensitiveValues(raw))
	if r == nil {
		return res
	}
	return redactResult(r, res)
}

// sensitiveValues returns the string forms of the sensitive arguments in
// raw (a call's arguments): strings as they are, other values as JSON.
func (t *Tool) sensitiveValues(raw json.RawMessage) []string {
	if len(t.sensitive) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return nil
	}
	var vals []string
	for name := range t.sensitive {
		v, ok := args[name]
		if !ok {
			continue
		}
		var x any
		if json.Unmarshal(v, &x) != nil {
			continue
		}
		vals = appendStrings(vals, x)
	}
	return vals
}

// appendStrings appends every string in a JSON value, and the JSON text of
// other scalars.
func appendStrings(dst []string, x any) []string {
	switch v := x.(type) {
	case string:
		return append(dst, v)
	case []any:
		for _, e := range v {
			dst = appendStrings(dst, e)
		}
	case map[string]any:
		for _, e := range v {
			dst = appendStrings(dst, e)
		}
	case nil, bool:
	default:
		b, _ := json.Marshal(v)
		dst = append(dst, string(b))
	}
	return dst
}

// Redactor returns the redactor of the secrets the config read with env(),
// file() and filebase64(); nil when there are none.
func (s *Snapshot) Redactor() *redact.Redactor { return s.redactor }
