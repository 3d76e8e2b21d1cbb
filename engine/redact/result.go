package redact

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result redacts a tool result in place: its text contents (text, embedded
// text resources, resource links), its structured content and thereby its
// error text. Binary contents (images, audio, blobs) are left alone.
// Contents may be shared with other calls (static ones are built at load),
// so a changed one is replaced, never modified. A nil Redactor returns res.
func (r *Redactor) Result(res *mcp.CallToolResult) *mcp.CallToolResult {
	if r == nil || res == nil {
		return res
	}
	for i, c := range res.Content {
		res.Content[i] = r.Content(c)
	}
	if res.StructuredContent != nil {
		res.StructuredContent = r.Value(res.StructuredContent)
	}
	return res
}

// Content returns c, or a copy with its text redacted when the text holds
// a secret. Binary contents are returned as they are.
func (r *Redactor) Content(c mcp.Content) mcp.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		if t := r.String(c.Text); t != c.Text {
			cp := *c
			cp.Text = t
			return &cp
		}
	case *mcp.EmbeddedResource:
		if rc := r.ResourceContents(c.Resource); rc != c.Resource {
			cp := *c
			cp.Resource = rc
			return &cp
		}
	case *mcp.ResourceLink:
		uri, name, title, desc := r.String(c.URI), r.String(c.Name), r.String(c.Title), r.String(c.Description)
		if uri != c.URI || name != c.Name || title != c.Title || desc != c.Description {
			cp := *c
			cp.URI, cp.Name, cp.Title, cp.Description = uri, name, title, desc
			return &cp
		}
	}
	return c
}

// ResourceContents redacts a text resource; a blob is left alone.
func (r *Redactor) ResourceContents(rc *mcp.ResourceContents) *mcp.ResourceContents {
	if rc == nil {
		return nil
	}
	if t := r.String(rc.Text); t != rc.Text {
		cp := *rc
		cp.Text = t
		return &cp
	}
	return rc
}

// Error returns err, or an error with its text redacted when the text
// holds a secret.
func (r *Redactor) Error(err error) error {
	if r == nil || err == nil {
		return err
	}
	if msg := r.String(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// Args redacts, in an error result, the values that raw (a call's
// arguments) gives the arguments named in names: the validator leaves them
// out of its messages, but a backend's error (an HTTP API or a database
// echoing its input) may quote them. Values are found as secrets are (raw,
// JSON-escaped, URL-encoded, base64, hex), so values shorter than MinLen
// are not searched for. Results that are not errors are the tool's output
// and left alone.
func Args(names map[string]bool, raw json.RawMessage, res *mcp.CallToolResult) *mcp.CallToolResult {
	if len(names) == 0 || res == nil || !res.IsError || len(raw) == 0 {
		return res
	}
	return ForArgs(names, raw).Result(res)
}

// ForArgs returns a redactor of the values raw (a call's arguments) gives
// the arguments named in names (sensitive ones), nil when there are none.
func ForArgs(names map[string]bool, raw json.RawMessage) *Redactor {
	if len(names) == 0 {
		return nil
	}
	return New(argValues(names, raw))
}

// argValues returns the string forms of the named arguments in raw:
// strings as they are, other values as JSON.
func argValues(names map[string]bool, raw json.RawMessage) []string {
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil {
		return nil
	}
	var vals []string
	for name := range names {
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
