package snapshot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/limits"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/schema"
	"github.com/mcpd/mcpd/engine/shape"
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
	// adapterType is the adapter block's type, for spans; limits holds
	// the timeout of an adapter's reads: the server's default_timeout, as
	// for a tool that sets none.
	adapterType string
	limits      *limits.Limits
	// remote reads a resource a backend contributes (contributed.go).
	remote func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	// backends are the top-level blocks the adapter looked up at load, as
	// "TYPE NAME" (see Tool.Backends).
	backends []string
}

// Backends are the top-level backend blocks (database, http_backend, …)
// the resource's adapter uses, as for Tool.Backends.
func (r *Resource) Backends() []string { return r.src.backends }

// Backends are the top-level backend blocks the template's adapter uses,
// as for Tool.Backends.
func (t *Template) Backends() []string { return t.src.backends }

// Resource is one compiled static resource.
type Resource struct {
	Def     *mcp.Resource
	src     *source
	version string        // see sourceVersion
	scopes  []string      // required to list and read it
	from    *contribution // nil: the config's own
}

// Template is one compiled resource template.
type Template struct {
	Def         *mcp.ResourceTemplate
	tmpl        *uritemplate.Template
	src         *source
	completions map[string][]string
	vars        map[string]varRule
	validator   *schema.Validator
	scopes      []string      // required to list and read it
	from        *contribution // nil: the config's own
}

func compileSource(owner, name string, text, blob, file *hcl.Attribute, ab *config.AdapterBlock, scope *adapter.Scope, reg *adapter.Registry, backend *backendSet, sl serverLimits, declRange hcl.Range) (*source, hcl.Diagnostics) {
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
		// Unknown when it reads an unset variable in a load that allows
		// that (validate, list, read: funcs.Options.UnsetEnvUnknown; the
		// loader says so once): the path is left empty and a read fails
		// (such a snapshot is not served, and `mcpd read` refuses it).
		if !d.HasErrors() && v.IsWhollyKnown() {
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
		lookup := func(blockType, name string) (adapter.Backend, bool) {
			// Adapters look their backends up while they compile.
			src.backends = append(src.backends, blockType+" "+name)
			return backend.get(blockType, name)
		}
		h, d := a.CompileTool(&adapter.ToolBlock{Tool: name, Type: ab.Type, Body: ab.Body, Range: ab.DeclRange, Scope: scope, Backend: lookup, BackendNames: backend.names})
		diags = append(diags, d...)
		src.handler, src.adapterType = h, ab.Type
		src.limits = limits.OnlyTimeout(sl.defaultTimeout)
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

func compileResource(rc *config.Resource, reg *adapter.Registry, backend *backendSet, ft funcTables, sl serverLimits) (*Resource, hcl.Diagnostics) {
	scope := &adapter.Scope{Dir: rc.Dir, Functions: ft.get(rc.Dir), Params: map[string]string{}, Auth: ft.auth}
	owner := fmt.Sprintf("resource %q", rc.Name)
	src, diags := compileSource(owner, rc.Name, rc.Text, rc.Blob, rc.File, rc.Adapter, scope, reg, backend, sl, rc.DeclRange)
	mt := rc.MIMEType
	if mt == "" && src.file != "" {
		mt = mime.TypeByExtension(filepath.Ext(src.file))
	}
	if !strings.Contains(rc.URI, ":") {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid resource URI", Detail: fmt.Sprintf("%q has no scheme; use e.g. file:///path or myapp://thing.", rc.URI), Subject: config.SubjectOr(rc.URIRange, rc.DeclRange).Ptr()})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return &Resource{
		Def:     &mcp.Resource{URI: rc.URI, Name: rc.Name, Title: rc.Title, Description: rc.Description, MIMEType: mt, Icons: mcpIcons(rc.Icons)},
		src:     src,
		version: sourceVersion(src),
	}, diags
}

func compileTemplate(rc *config.ResourceTemplate, reg *adapter.Registry, backend *backendSet, ft funcTables, sl serverLimits) (*Template, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	tmpl, err := uritemplate.New(rc.URITemplate)
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid URI template", Detail: err.Error(), Subject: config.SubjectOr(rc.URIRange, rc.DeclRange).Ptr()}}
	}
	owner := fmt.Sprintf("resource_template %q", rc.Name)
	ectx := &hcl.EvalContext{Functions: ft.get(rc.Dir)}
	vars, params, d := templateParams(owner, rc, tmpl, ectx)
	diags = append(diags, d...)
	types := make(map[string]string, len(params))
	for _, p := range params {
		types[p.Name] = p.Type
	}
	scope := &adapter.Scope{Dir: rc.Dir, Functions: ft.get(rc.Dir), Params: types, Auth: ft.auth}
	src, d := compileSource(owner, rc.Name, rc.Text, rc.Blob, nil, rc.Adapter, scope, reg, backend, sl, rc.DeclRange)
	diags = append(diags, d...)
	t := &Template{
		Def:         &mcp.ResourceTemplate{URITemplate: rc.URITemplate, Name: rc.Name, Title: rc.Title, Description: rc.Description, MIMEType: rc.MIMEType, Icons: mcpIcons(rc.Icons)},
		tmpl:        tmpl,
		src:         src,
		vars:        vars,
		completions: map[string][]string{},
	}
	in, d := schema.FromParams(params, ectx)
	diags = append(diags, d...)
	if !d.HasErrors() {
		v, err := schema.Compile(in)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid param", Detail: fmt.Sprintf("%s: %v", owner, err), Subject: rc.DeclRange.Ptr()})
		}
		t.validator = v
		t.completions = enumCompletions(in)
	}
	if rc.Completions != nil {
		c, d := completionMap(rc.Completions, scope)
		diags = append(diags, d...)
		for k, v := range c {
			t.completions[k] = v
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return t, diags
}

// templateParams pairs the variables of a URI template with their param
// blocks. A variable without one is a string with the default rules; a
// param that is not a variable is an error. Undeclared variables are
// optional, as they always were; declared ones follow a tool's rules
// (required unless they have a default or say required = false).
func templateParams(owner string, rc *config.ResourceTemplate, tmpl *uritemplate.Template, ectx *hcl.EvalContext) (map[string]varRule, []*config.Param, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	ops := templateOperators(rc.URITemplate)
	declared := map[string]*config.Param{}
	for _, p := range rc.Params {
		if _, ok := ops[p.Name]; !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Param is not a template variable",
				Detail:   fmt.Sprintf("%s: param %q is not a variable of %q; its variables are %s.", owner, p.Name, rc.URITemplate, strings.Join(tmpl.Varnames(), ", ")),
				Subject:  p.DeclRange.Ptr(),
			})
			continue
		}
		declared[p.Name] = p
	}
	vars := map[string]varRule{}
	var params []*config.Param
	optional := false
	for _, name := range tmpl.Varnames() {
		r := varRule{op: ops[name], typ: "string"}
		p, ok := declared[name]
		if !ok {
			p = &config.Param{Name: name, Type: "string", Required: &optional}
		}
		r.typ = p.Type
		for _, f := range []struct {
			attr *hcl.Attribute
			dst  *bool
		}{{p.AllowSlash, &r.allowSlash}, {p.AllowDotSegments, &r.allowDots}} {
			if f.attr == nil {
				continue
			}
			v, d := schema.StaticValue(f.attr, ectx)
			diags = append(diags, d...)
			b, isBool := v.(bool)
			if !d.HasErrors() && !isBool {
				diags = append(diags, attrDiag(f.attr, "must be true or false"))
			}
			*f.dst = b
		}
		vars[name] = r
		params = append(params, p)
	}
	return vars, params, diags
}

// varRule is how one URI variable is checked before a read: its RFC 6570
// operator ('+' and '#' are reserved expansions, which may hold "/"), its
// type and what its param block allows.
type varRule struct {
	op         byte
	typ        string
	allowSlash bool
	allowDots  bool
}

// templateOperators maps each variable of an RFC 6570 template to the
// operator of its expression (0 for a simple {var}).
func templateOperators(tmpl string) map[string]byte {
	ops := map[string]byte{}
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			return ops
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return ops
		}
		expr := tmpl[i+1 : i+j]
		tmpl = tmpl[i+j+1:]
		var op byte
		if expr != "" && strings.IndexByte("+#./;?&", expr[0]) >= 0 {
			op, expr = expr[0], expr[1:]
		}
		for _, spec := range strings.Split(expr, ",") {
			if k := strings.IndexAny(spec, ":*"); k >= 0 {
				spec = spec[:k]
			}
			if _, seen := ops[spec]; !seen {
				ops[spec] = op
			}
		}
	}
}

// enumCompletions offers the string enum of each declared variable as its
// completions (the completions attribute overrides them).
func enumCompletions(in map[string]any) map[string][]string {
	out := map[string][]string{}
	props, _ := in["properties"].(map[string]any)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		if vals, ok := stringList(ps["enum"]); ok {
			out[name] = vals
		}
	}
	return out
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
// variables as they were decoded from the URI (strings).
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

// Bind matches uri and checks its variables before anything reads them:
// the path rules of each variable, then its type and the constraints of
// its param block. A URI that matches with a bad variable is an invalid
// params error (-32602) that names the variable and the rule, as MCP
// asks of resources/read.
func (t *Template) Bind(uri string) (map[string]any, bool, error) {
	args, ok := t.Match(uri)
	if !ok {
		return nil, false, nil
	}
	for _, name := range t.tmpl.Varnames() { // in order: the same error every time
		x, ok := args[name]
		if !ok {
			continue
		}
		s := x.(string)
		r := t.vars[name]
		if err := r.check(s); err != nil {
			return nil, true, t.invalid(uri, fmt.Errorf("argument %q %v", name, err))
		}
		switch r.typ {
		case "integer", "number":
			if n, ok := schema.ParseNumber(s); ok {
				args[name] = n
			}
		case "boolean":
			if s == "true" || s == "false" {
				args[name] = s == "true"
			}
		}
	}
	if err := t.validator.ValidateArgs(args); err != nil {
		return nil, true, t.invalid(uri, err)
	}
	return args, true, nil
}

func (t *Template) invalid(uri string, err error) error {
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid URI for resource template %q: %v", t.Def.Name, err), Data: data}
}

// check applies the path rules: never control characters or invalid UTF-8;
// no "/" in a one-segment variable ({var}) and no leading "/" in a
// reserved one ({+var}, {#var}) unless allow_slash; no "." or ".." segment
// unless allow_dot_segments. Percent-decoding happens before, so %2F is a
// "/" here.
func (r varRule) check(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("must be valid UTF-8 text, got %s", quoted(s))
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return fmt.Errorf("must not contain control characters such as NUL, got %s", quoted(s))
		}
	}
	if !r.allowSlash {
		reserved := r.op == '+' || r.op == '#'
		switch {
		case !reserved && strings.ContainsRune(s, '/'):
			return fmt.Errorf("must not contain \"/\", got %s (a {name} variable is one path segment; allow_slash = true in its param block allows it)", quoted(s))
		case reserved && strings.HasPrefix(s, "/"):
			return fmt.Errorf("must not start with \"/\", got %s (allow_slash = true in its param block allows it)", quoted(s))
		}
	}
	if !r.allowDots {
		for _, seg := range strings.FieldsFunc(s, func(c rune) bool { return c == '/' || c == '\\' }) {
			if seg == "." || seg == ".." {
				return fmt.Errorf("must not contain a %q path segment, got %s (allow_dot_segments = true in its param block allows it)", seg, quoted(s))
			}
		}
	}
	return nil
}

func quoted(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strconv.QuoteToASCII(s)
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
				res.Contents[i] = s.redact.ResourceContents(rc)
			}
		}
		err = s.redact.Error(err)
	}()
	defer func() {
		if r := recover(); r != nil {
			slog.Error("panic reading resource", "resource", s.name, "panic", s.redact.String(fmt.Sprint(r)), "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("internal error reading %s", uri)
		}
	}()
	if s.remote != nil {
		ctx, cancel := s.limits.WithTimeout(ctx)
		defer cancel()
		res, err := s.remote(ctx, uri)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", uri, err)
		}
		return res, nil
	}
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
		// Text only when it is valid UTF-8: a file that is not, whatever
		// its declared type, cannot travel as a JSON string.
		if (shape.IsText(mimeType) || mimeType == "") && utf8.Valid(data) {
			rc.Text = string(data)
		} else {
			rc.Blob = data
		}
	case s.handler != nil:
		out, err := s.callAdapter(ctx, uri, args)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", uri, err)
		}
		switch {
		case out == nil:
		case len(out.Media) > 0:
			if rc.MIMEType == "" {
				rc.MIMEType = out.Media[0].MIMEType
			}
			if shape.IsText(rc.MIMEType) && utf8.Valid(out.Media[0].Data) {
				rc.Text = string(out.Media[0].Data)
			} else {
				rc.Blob = out.Media[0].Data
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
	default:
		// A file whose path was unknown at load (compileSource).
		return nil, fmt.Errorf("reading %s: its file's path was not known when the config was loaded", uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// callAdapter is a read through the source's adapter: the path of a tool's
// adapter call (Tool.callAdapter), under the timeout and with a span of its
// own, "{adapter} {resource}" with mcp.resource.uri.
func (s *source) callAdapter(ctx context.Context, uri string, args map[string]any) (*adapter.Output, error) {
	ctx, cancel := s.limits.WithTimeout(ctx)
	defer cancel()
	actx, span := s.adapterSpan(ctx, uri)
	out, err := s.handler.Call(actx, &adapter.Request{Tool: s.name, Args: args, Eval: s.scope.CallContext(args), Progress: noProgress, Log: noLog})
	endAdapterSpan(span, err)
	if err != nil && errors.Is(context.Cause(ctx), limits.ErrTimedOut) {
		return nil, fmt.Errorf("resource %s timed out after %s (the server's default_timeout)", s.name, s.limits.Timeout())
	}
	return out, err
}
