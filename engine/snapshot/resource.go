package snapshot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/schema"
)

// source is where a resource's contents come from: a text or blob
// expression, a file, or an adapter.
type source struct {
	name    string
	scope   *adapter.Scope
	text    hcl.Expression
	blob    hcl.Expression
	file    string
	handler adapter.Handler
	redact  *redact.Redactor // nil: no secrets
}

// Resource is one compiled static resource.
type Resource struct {
	Def     *mcp.Resource
	src     *source
	version string // see sourceVersion
}

// Template is one compiled resource template.
type Template struct {
	Def         *mcp.ResourceTemplate
	tmpl        *uritemplate.Template
	src         *source
	completions map[string][]string
}

func compileSource(owner, name string, text, blob, file *hcl.Attribute, ab *config.AdapterBlock, scope *adapter.Scope, reg *adapter.Registry, backend func(string, string) (adapter.Backend, bool), declRange hcl.Range) (*source, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	src := &source{name: name, scope: scope}
	n := 0
	if text != nil {
		n++
		src.text = text.Expr
		diags = append(diags, scope.Check(text.Expr)...)
	}
	if blob != nil {
		n++
		src.blob = blob.Expr
		diags = append(diags, scope.Check(blob.Expr)...)
	}
	if file != nil {
		n++
		v, d := file.Expr.Value(scope.EvalContext())
		diags = append(diags, d...)
		if !d.HasErrors() {
			p, err := adapter.ValueString(v)
			if err != nil {
				diags = append(diags, attrDiag(file, err.Error()))
			} else {
				src.file = funcs.Resolve(scope.Dir, p)
				if _, err := os.Stat(src.file); err != nil {
					diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Resource file not found", Detail: fmt.Sprintf("%s: %v; reads will fail until it exists.", owner, err), Subject: file.Expr.Range().Ptr()})
				}
			}
		}
	}
	if ab != nil {
		n++
		a, ok := reg.Adapter(ab.Type)
		if !ok {
			panic("unregistered adapter block " + ab.Type)
		}
		h, d := a.CompileTool(&adapter.ToolBlock{Tool: name, Type: ab.Type, Body: ab.Body, Range: ab.DeclRange, Scope: scope, Backend: backend})
		diags = append(diags, d...)
		src.handler = h
	}
	if n != 1 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "A resource needs exactly one source",
			Detail:   fmt.Sprintf("%s has %d; give one of text, blob, file, or an adapter block.", owner, n),
			Subject:  declRange.Ptr(),
		})
	}
	return src, diags
}

func compileResource(rc *config.Resource, reg *adapter.Registry, backend func(string, string) (adapter.Backend, bool), ft funcTables) (*Resource, hcl.Diagnostics) {
	scope := &adapter.Scope{Dir: rc.Dir, Functions: ft.get(rc.Dir), Params: map[string]string{}}
	owner := fmt.Sprintf("resource %q", rc.Name)
	src, diags := compileSource(owner, rc.Name, rc.Text, rc.Blob, rc.File, rc.Adapter, scope, reg, backend, rc.DeclRange)
	mt := rc.MIMEType
	if mt == "" && src.file != "" {
		mt = mime.TypeByExtension(filepath.Ext(src.file))
	}
	if !strings.Contains(rc.URI, ":") {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid resource URI", Detail: fmt.Sprintf("%q has no scheme; use e.g. file:///path or myapp://thing.", rc.URI), Subject: rc.DeclRange.Ptr()})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return &Resource{
		Def:     &mcp.Resource{URI: rc.URI, Name: rc.Name, Title: rc.Title, Description: rc.Description, MIMEType: mt},
		src:     src,
		version: sourceVersion(src),
	}, diags
}

func compileTemplate(rc *config.ResourceTemplate, reg *adapter.Registry, backend func(string, string) (adapter.Backend, bool), ft funcTables) (*Template, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	tmpl, err := uritemplate.New(rc.URITemplate)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid URI template", Detail: err.Error(), Subject: rc.DeclRange.Ptr()}}
	}
	params := map[string]string{}
	for _, v := range tmpl.Varnames() {
		params[v] = "string"
	}
	scope := &adapter.Scope{Dir: rc.Dir, Functions: ft.get(rc.Dir), Params: params}
	owner := fmt.Sprintf("resource_template %q", rc.Name)
	src, d := compileSource(owner, rc.Name, rc.Text, rc.Blob, nil, rc.Adapter, scope, reg, backend, rc.DeclRange)
	diags = append(diags, d...)
	t := &Template{
		Def:  &mcp.ResourceTemplate{URITemplate: rc.URITemplate, Name: rc.Name, Title: rc.Title, Description: rc.Description, MIMEType: rc.MIMEType},
		tmpl: tmpl,
		src:  src,
	}
	if rc.Completions != nil {
		c, d := completionMap(rc.Completions, scope)
		diags = append(diags, d...)
		t.completions = c
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return t, diags
}

// completionMap evaluates `completions = { var = ["a", "b"] }`.
func completionMap(a *hcl.Attribute, scope *adapter.Scope) (map[string][]string, hcl.Diagnostics) {
	v, diags := schema.StaticValue(a, scope.EvalContext())
	if diags.HasErrors() {
		return nil, diags
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, hcl.Diagnostics{attrDiag(a, "completions must map each variable to a list of values")}
	}
	out := map[string][]string{}
	for k, list := range m {
		if _, ok := scope.Params[k]; !ok {
			diags = append(diags, attrDiag(a, fmt.Sprintf("%q is not a variable of the URI template", k)))
			continue
		}
		vals, ok := stringList(list)
		if !ok {
			diags = append(diags, attrDiag(a, fmt.Sprintf("completions for %q must be a list of strings", k)))
			continue
		}
		out[k] = vals
	}
	return out, diags
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// Match reports whether uri is an instance of the template, with its
// variables.
func (t *Template) Match(uri string) (map[string]any, bool) {
	vals := t.tmpl.Match(uri)
	if vals == nil {
		return nil, false
	}
	args := map[string]any{}
	for _, name := range t.tmpl.Varnames() {
		if v := vals.Get(name); v.Valid() {
			args[name] = v.String()
		}
	}
	return args, true
}

// Read returns the resource's contents.
func (r *Resource) Read(ctx context.Context) (*mcp.ReadResourceResult, error) {
	return r.src.read(ctx, r.Def.URI, r.Def.MIMEType, map[string]any{})
}

// Read returns the contents of the template instance uri, whose variables
// are args.
func (t *Template) Read(ctx context.Context, uri string, args map[string]any) (*mcp.ReadResourceResult, error) {
	return t.src.read(ctx, uri, t.Def.MIMEType, args)
}

func (s *source) read(ctx context.Context, uri, mimeType string, args map[string]any) (res *mcp.ReadResourceResult, err error) {
	// Text contents and errors lose their secrets; blobs are passed as they
	// are (a secret inside an image is not text a model reads).
	defer func() {
		if res != nil && s.redact != nil {
			for i, rc := range res.Contents {
				res.Contents[i] = redactResourceContents(s.redact, rc)
			}
		}
		err = redactError(s.redact, err)
	}()
	defer func() {
		if r := recover(); r != nil {
			slog.Error("panic reading resource", "resource", s.name, "panic", s.redact.String(fmt.Sprint(r)), "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("internal error reading %s", uri)
		}
	}()
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimeType}
	switch {
	case s.text != nil:
		txt, err := adapter.EvalString(s.text, s.scope.CallContext(args))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", uri, err)
		}
		rc.Text = txt
	case s.blob != nil:
		b64, err := adapter.EvalString(s.blob, s.scope.CallContext(args))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", uri, err)
		}
		if rc.Blob, err = base64.StdEncoding.DecodeString(b64); err != nil {
			return nil, fmt.Errorf("reading %s: blob is not valid base64", uri)
		}
	case s.file != "":
		data, err := os.ReadFile(s.file)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %v", uri, err)
		}
		if isText(mimeType) || (mimeType == "" && utf8.Valid(data)) {
			rc.Text = string(data)
		} else {
			rc.Blob = data
		}
	case s.handler != nil:
		out, err := s.handler.Call(ctx, &adapter.Request{Tool: s.name, Args: args, Eval: s.scope.CallContext(args), Progress: func(float64, float64, string) {}})
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", uri, err)
		}
		switch {
		case out == nil:
		case len(out.Media) > 0:
			rc.Blob = out.Media[0].Data
			if rc.MIMEType == "" {
				rc.MIMEType = out.Media[0].MIMEType
			}
		case out.Text != "":
			rc.Text = out.Text
		case out.Structured != nil:
			b, _ := json.Marshal(out.Structured)
			rc.Text = string(b)
			if rc.MIMEType == "" {
				rc.MIMEType = "application/json"
			}
		}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

func isText(mt string) bool {
	return strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "json") || strings.HasSuffix(mt, "xml") || strings.HasSuffix(mt, "yaml")
}
