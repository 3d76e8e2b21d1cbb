package shape

import (
	"encoding/base64"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
)

// Content is a compiled `content "type" { ... }` block of a tool's result
// or a prompt's message. Attributes that reference no arguments are
// evaluated once at load; when all of them are, the whole content is built
// once and shared by every call.
type Content struct {
	typ    string
	exprs  map[string]hcl.Expression
	static mcp.Content
}

// contentAttrs lists, per content type, the attributes it requires and those
// it allows.
var contentAttrs = map[string]struct{ required, optional []string }{
	"text":          {required: []string{"text"}},
	"image":         {required: []string{"data", "mime_type"}},
	"audio":         {required: []string{"data", "mime_type"}},
	"resource":      {required: []string{"uri"}, optional: []string{"text", "blob", "mime_type"}},
	"resource_link": {required: []string{"uri", "name"}, optional: []string{"title", "description", "mime_type"}},
}

// CompileContent compiles a content block against the scope of the tool or
// prompt that declares it: unknown and missing attributes are diagnostics
// with their ranges, and content built from constants is built here.
func CompileContent(c *config.Content, scope *adapter.Scope) (*Content, hcl.Diagnostics) {
	spec, known := contentAttrs[c.Type]
	if !known {
		// config.Load reported the type; its attributes cannot be judged
		// against a type that does not exist (one mistake, one diagnostic).
		return &Content{typ: c.Type, exprs: map[string]hcl.Expression{}}, nil
	}
	given := map[string]*hcl.Attribute{
		"text": c.Text, "data": c.Data, "blob": c.Blob, "uri": c.URI, "mime_type": c.MIMEType,
		"name": c.Name, "title": c.Title, "description": c.Description,
	}
	allowed := map[string]bool{}
	for _, n := range append(append([]string{}, spec.required...), spec.optional...) {
		allowed[n] = true
	}
	var diags hcl.Diagnostics
	t := &Content{typ: c.Type, exprs: map[string]hcl.Expression{}}
	names := make([]string, 0, len(given))
	for n := range given {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := given[n]
		if a == nil {
			continue
		}
		if !allowed[n] {
			rng := a.NameRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported attribute",
				Detail:   fmt.Sprintf("%s content has no attribute %q.", c.Type, n),
				Subject:  &rng,
			})
			continue
		}
		diags = append(diags, scope.Check(a.Expr)...)
		t.exprs[n] = a.Expr
	}
	for _, n := range spec.required {
		if given[n] == nil {
			rng := c.DeclRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required attribute",
				Detail:   fmt.Sprintf("%s content needs %q.", c.Type, n),
				Subject:  &rng,
			})
		}
	}
	if c.Type == "resource" && (given["text"] == nil) == (given["blob"] == nil) {
		rng := c.DeclRange
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Resource content needs text or blob",
			Detail:   "Give exactly one of text (a string) or blob (base64).",
			Subject:  &rng,
		})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	static := true
	for _, e := range t.exprs {
		static = static && adapter.IsStatic(e) && knownAtLoad(e, scope.EvalContext())
	}
	if static {
		content, err := t.build(scope.EvalContext())
		if err != nil {
			rng := c.DeclRange
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid content", Detail: err.Error(), Subject: &rng}}
		}
		t.static = content
	}
	return t, nil
}

// knownAtLoad reports whether a static expression's value is known: it is
// not when it reads an unset variable in a load that allows that (`mcpd
// validate`, list, call: funcs.Options.UnsetEnvUnknown). Such content is
// left to be built per call, which a snapshot with unset variables is
// never asked for (it is not served, and `mcpd call` refuses the tool).
func knownAtLoad(e hcl.Expression, ectx *hcl.EvalContext) bool {
	v, d := e.Value(ectx)
	return d.HasErrors() || v.IsWhollyKnown()
}

// Static reports whether the content was built at load, the same for
// every call.
func (t *Content) Static() bool { return t.static != nil }

// Eval builds the content for one call.
func (t *Content) Eval(ectx *hcl.EvalContext) (mcp.Content, error) {
	if t.static != nil {
		return t.static, nil
	}
	return t.build(ectx)
}

func (t *Content) build(ectx *hcl.EvalContext) (mcp.Content, error) {
	str := func(name string) (string, error) {
		e, ok := t.exprs[name]
		if !ok {
			return "", nil
		}
		s, err := adapter.EvalString(e, ectx)
		if err != nil {
			return "", fmt.Errorf("%s content, %s: %w", t.typ, name, err)
		}
		return s, nil
	}
	b64 := func(name string) ([]byte, error) {
		s, err := str(name)
		if err != nil || s == "" {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%s content, %s: not valid base64: %w", t.typ, name, err)
		}
		return b, nil
	}
	var firstErr error
	get := func(name string) string {
		s, err := str(name)
		if firstErr == nil {
			firstErr = err
		}
		return s
	}
	getB := func(name string) []byte {
		b, err := b64(name)
		if firstErr == nil {
			firstErr = err
		}
		return b
	}
	var c mcp.Content
	switch t.typ {
	case "text":
		c = &mcp.TextContent{Text: get("text")}
	case "image":
		c = &mcp.ImageContent{Data: getB("data"), MIMEType: get("mime_type")}
	case "audio":
		c = &mcp.AudioContent{Data: getB("data"), MIMEType: get("mime_type")}
	case "resource":
		rc := &mcp.ResourceContents{URI: get("uri"), MIMEType: get("mime_type")}
		if _, ok := t.exprs["blob"]; ok {
			rc.Blob = getB("blob")
		} else {
			rc.Text = get("text")
		}
		c = &mcp.EmbeddedResource{Resource: rc}
	case "resource_link":
		c = &mcp.ResourceLink{URI: get("uri"), Name: get("name"), Title: get("title"), Description: get("description"), MIMEType: get("mime_type")}
	default:
		return nil, fmt.Errorf("unknown content type %q", t.typ)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return c, nil
}
