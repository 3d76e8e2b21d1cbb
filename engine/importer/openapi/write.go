package openapi

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mcpd/mcpd/engine/importer"
)

var hclInitialPos = hcl.InitialPos

// backendFor returns the name of the http_backend for the operation's
// security requirement, creating it on first use. Of a requirement's
// alternatives, the first whose schemes can all be converted is used.
func (c *converter) backendFor(op *openapi3.Operation, where string, ln int) string {
	reqs := c.doc.Security
	swhere := pointer("security")
	if op.Security != nil {
		reqs = *op.Security
		swhere = where + "/security"
	}
	var chosen openapi3.SecurityRequirement
	found := len(reqs) == 0
	for _, alt := range reqs {
		ok := true
		for name := range alt {
			if !c.convertible(name) {
				ok = false
			}
		}
		if ok {
			chosen, found = alt, true
			break
		}
	}
	if !found {
		var names []string
		for name := range reqs[0] {
			names = append(names, name)
		}
		sort.Strings(names)
		c.report.Skip(swhere, ln, "the security scheme %s is not converted: the tool's requests carry no credentials; add them to its http_backend", strings.Join(names, " + "))
	}
	schemes := sortedKeys(chosen)
	key := strings.Join(schemes, "+")
	if b, ok := c.backends[key]; ok {
		return b.name
	}
	name := c.name
	if !c.isDefault(key) {
		name = importer.Ident(c.name+"_"+strings.Join(schemes, "_"), c.name)
		if key == "" {
			name = c.name + "_anonymous"
		}
	}
	b := &backend{name: name}
	for _, s := range schemes {
		c.credentials(b, s)
	}
	c.backends[key] = b
	c.order = append(c.order, b)
	return b.name
}

// isDefault says whether key is the document-wide requirement's choice,
// whose backend gets the plain name.
func (c *converter) isDefault(key string) bool {
	for _, alt := range c.doc.Security {
		ok := true
		for name := range alt {
			if !c.convertible(name) {
				ok = false
			}
		}
		if ok {
			return strings.Join(sortedKeys(alt), "+") == key
		}
	}
	return key == ""
}

func (c *converter) scheme(name string) *openapi3.SecurityScheme {
	if c.doc.Components == nil {
		return nil
	}
	if r := c.doc.Components.SecuritySchemes[name]; r != nil {
		return r.Value
	}
	return nil
}

func (c *converter) convertible(name string) bool {
	s := c.scheme(name)
	if s == nil {
		return false
	}
	switch s.Type {
	case "http":
		sch := strings.ToLower(s.Scheme)
		return sch == "bearer" || sch == "basic"
	case "apiKey":
		return s.In == "header" || s.In == "query"
	case "oauth2", "openIdConnect":
		return true
	}
	return false
}

// credentials adds a scheme's credentials to a backend, read from the
// environment: an imported config never holds a secret.
func (c *converter) credentials(b *backend, name string) {
	s := c.scheme(name)
	where := pointer("components", "securitySchemes", name)
	ln := line(s.Origin)
	switch s.Type {
	case "http":
		if strings.EqualFold(s.Scheme, "basic") {
			user, pw := importer.EnvName(c.name, name, "username"), importer.EnvName(c.name, name, "password")
			// "Basic ${base64encode(format("%s:%s", env("U"), env("P")))}"
			cred := importer.Call("base64encode", importer.Call("format", importer.Lit("%s:%s"), importer.Env(user), importer.Env(pw)))
			b.headers = append(b.headers, importer.Field{Name: "Authorization", Value: importer.Template(importer.Part{Text: "Basic "}, importer.Part{Expr: cred})})
			c.report.Note(where, ln, "HTTP basic credentials are read from $%s and $%s", user, pw)
			return
		}
		v := importer.EnvName(c.name, name, "token")
		b.headers = append(b.headers, importer.Field{Name: "Authorization", Value: importer.Template(importer.Part{Text: "Bearer "}, importer.Part{Expr: importer.Env(v)})})
		c.report.Note(where, ln, "the bearer token is read from $%s", v)
	case "apiKey":
		v := importer.EnvName(c.name, name)
		if !strings.HasSuffix(v, "_KEY") && !strings.HasSuffix(v, "_TOKEN") {
			v += "_KEY"
		}
		f := importer.Field{Name: s.Name, Value: importer.Env(v)}
		if s.In == "query" {
			b.query = append(b.query, f)
		} else {
			b.headers = append(b.headers, f)
		}
		c.report.Note(where, ln, "the API key (%s %q) is read from $%s", s.In, s.Name, v)
	case "oauth2", "openIdConnect":
		v := importer.EnvName(c.name, name, "token")
		b.headers = append(b.headers, importer.Field{Name: "Authorization", Value: importer.Template(importer.Part{Text: "Bearer "}, importer.Part{Expr: importer.Env(v)})})
		c.report.Note(where, ln, "%s: mcpd does not run the authorization flow; obtain an access token and set $%s (sent as a bearer token)", s.Type, v)
	}
}

// write renders the configuration.
func (c *converter) write(tools []*tool) []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	title := infoTitle(c.doc)
	if c.doc.Info != nil && c.doc.Info.Version != "" {
		title += " " + c.doc.Info.Version
	}
	src := c.opts.Source
	if src == "" {
		src = "an OpenAPI document"
	}
	comment(body, fmt.Sprintf("Generated by mcpd import openapi from %s (%s).", src, strings.TrimSpace(title)))
	body.AppendNewline()
	for _, b := range c.order {
		bb := body.AppendNewBlock("http_backend", []string{b.name}).Body()
		bb.SetAttributeValue("base_url", cty.StringVal(c.baseURL))
		if len(b.headers) > 0 {
			bb.SetAttributeRaw("headers", importer.Object(b.headers))
		}
		if len(b.query) > 0 {
			bb.SetAttributeRaw("query", importer.Object(b.query))
		}
		body.AppendNewline()
	}
	for i, t := range tools {
		if i > 0 {
			body.AppendNewline()
		}
		c.writeTool(body, t)
	}
	return importer.Format(f)
}

func comment(body *hclwrite.Body, text string) {
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# " + text + "\n")}})
}

func (c *converter) writeTool(body *hclwrite.Body, t *tool) {
	tb := body.AppendNewBlock("tool", []string{t.name}).Body()
	tb.SetAttributeValue("description", cty.StringVal(t.description))
	ann := tb.AppendNewBlock("annotations", nil).Body()
	switch t.method {
	case "GET", "HEAD", "OPTIONS":
		ann.SetAttributeValue("read_only", cty.True)
	case "DELETE":
		ann.SetAttributeValue("destructive", cty.True)
		ann.SetAttributeValue("idempotent", cty.True)
	case "PUT":
		ann.SetAttributeValue("idempotent", cty.True)
	case "POST", "PATCH":
		ann.SetAttributeValue("destructive", cty.False)
	}
	if asParams(t.params) {
		for _, p := range t.params {
			writeParam(tb, p)
		}
	} else {
		props := map[string]any{}
		var req []any
		for _, p := range t.params {
			s := p.schema
			if p.desc != "" {
				s["description"] = p.desc
			}
			props[p.name] = s
			if p.required && s["default"] == nil {
				req = append(req, p.name)
			}
		}
		schema := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(req) > 0 {
			schema["required"] = req
		}
		tb.SetAttributeRaw("input_schema", importer.Tokens(schema))
	}
	if t.output != nil {
		tb.SetAttributeRaw("output_schema", importer.Tokens(t.output))
	}
	hb := tb.AppendNewBlock("http", nil).Body()
	hb.SetAttributeValue("backend", cty.StringVal(t.backend))
	if t.method != "GET" {
		hb.SetAttributeValue("method", cty.StringVal(t.method))
	}
	hb.SetAttributeRaw("path", importer.Template(t.path...))
	if len(t.query) > 0 {
		hb.SetAttributeRaw("query", importer.Object(t.query))
	}
	if len(t.headers) > 0 {
		hb.SetAttributeRaw("headers", importer.Object(t.headers))
	}
	if t.body != nil {
		hb.SetAttributeRaw("body", t.body)
	}
	if t.form != nil {
		hb.SetAttributeRaw("form", t.form)
	}
}

// paramKeys are the schema keywords a param block writes as attributes.
var paramKeys = map[string]string{
	"type": "", "description": "", "default": "", "enum": "enum", "minimum": "minimum", "maximum": "maximum",
	"exclusiveMinimum": "exclusive_minimum", "exclusiveMaximum": "exclusive_maximum",
	"minLength": "min_length", "maxLength": "max_length", "pattern": "pattern", "format": "format",
	"minItems": "min_items", "maxItems": "max_items", "uniqueItems": "unique_items",
	"items": "items", "properties": "properties", "writeOnly": "",
}

// asParams says whether every param's schema fits a param block; a tool
// with one that does not (oneOf, const, a nested required list at the
// top, no type) gets an input_schema instead.
func asParams(params []*param) bool {
	for _, p := range params {
		for k := range p.schema {
			if _, ok := paramKeys[k]; !ok {
				return false
			}
		}
		switch t := p.schema["type"].(type) {
		case string:
		case []any:
			if len(t) != 2 || (t[0] != "null" && t[1] != "null") {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func writeParam(tb *hclwrite.Body, p *param) {
	pb := tb.AppendNewBlock("param", []string{p.name}).Body()
	s := p.schema
	switch t := s["type"].(type) {
	case string:
		pb.SetAttributeValue("type", cty.StringVal(t))
	case []any:
		pb.SetAttributeValue("type", cty.StringVal(typeOf(s)))
		pb.SetAttributeValue("nullable", cty.True)
	}
	desc := p.desc
	if desc == "" {
		desc, _ = s["description"].(string)
	}
	if desc != "" {
		pb.SetAttributeValue("description", cty.StringVal(desc))
	}
	if d, ok := s["default"]; ok {
		pb.SetAttributeValue("default", importer.Value(d))
	} else if !p.required {
		pb.SetAttributeValue("required", cty.False)
	}
	for _, k := range sortedKeys(paramKeys) {
		attr := paramKeys[k]
		if v, ok := s[k]; ok && attr != "" {
			pb.SetAttributeRaw(attr, importer.Tokens(v))
		}
	}
	if s["writeOnly"] == true || s["format"] == "password" {
		pb.SetAttributeValue("sensitive", cty.True)
	}
}
