package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/ident"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/suggest"
)

// Blocks names the adapter-owned block types the loader accepts: the blocks
// inside a tool that select an adapter ("http", "shell", "sql") and the
// top-level backend blocks ("database", "http_backend"). They come from the
// adapter registry, which the config package does not import.
type Blocks struct {
	Adapters []string
	Backends []string
}

// validIdent is the rule for every other name mcpd declares (params,
// prompts, backends), ^[A-Za-z_][A-Za-z0-9_.-]{0,127}$: they appear in
// expressions and URIs, so keep them simple.
func validIdent(s string) bool {
	if !ident.ToolName(s) {
		return false
	}
	c := s[0]
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
}

// fileContent is the top level of one config file.
type fileContent struct {
	Servers           []*Server           `hcl:"server,block"`
	Tools             []*Tool             `hcl:"tool,block"`
	Resources         []*Resource         `hcl:"resource,block"`
	ResourceTemplates []*ResourceTemplate `hcl:"resource_template,block"`
	Prompts           []*Prompt           `hcl:"prompt,block"`
	Auths             []*Auth             `hcl:"auth,block"`
	Tests             []*Test             `hcl:"test,block"`
	Toolsets          []*Toolset          `hcl:"toolset,block"`
	Remain            hcl.Body            `hcl:",remain"`
}

// Load reads every config file named by paths (files, or directories whose
// *.hcl files are read in sorted order) into one Config. It returns all the
// diagnostics it finds, not just the first, in file order; the Config is
// nil only when nothing could be read.
func Load(paths []string, blocks Blocks) (*Config, hcl.Diagnostics) {
	return LoadWith(paths, blocks, Options{})
}

// LoadWith is Load with options.
func LoadWith(paths []string, blocks Blocks, opts Options) (*Config, hcl.Diagnostics) {
	files, diags := ExpandPaths(paths)
	if diags.HasErrors() {
		return nil, diags
	}
	cfg := &Config{Files: files, Sources: map[string][]byte{}, UnsetEnvUnknown: opts.UnsetEnvUnknown}
	for _, name := range files {
		body, src, d := parseFileOverlay(name, opts.Overlay)
		if src != nil {
			cfg.Sources[name] = src
		}
		diags = append(diags, d...)
		if body == nil || d.HasErrors() {
			continue
		}
		cfg.UnsetEnv = append(cfg.UnsetEnv, funcs.UnsetEnv(body)...)
		cfg.Env = append(cfg.Env, funcs.EnvCalls(body)...)
		diags = append(diags, decodeFile(cfg, body, filepath.Dir(name), blocks)...)
		cfg.Referenced = append(cfg.Referenced, referencedFiles(body, filepath.Dir(name))...)
	}
	sort.Strings(cfg.Referenced)
	cfg.Referenced = slices.Compact(cfg.Referenced)
	diags = append(diags, checkUnique(cfg)...)
	return cfg, SortDiagnostics(diags)
}

// ExpandPaths turns the paths given on the command line into the sorted list
// of files to read. A directory contributes its *.hcl files (not its
// subdirectories, and not hidden files such as editors' swap files).
func ExpandPaths(paths []string) ([]string, hcl.Diagnostics) {
	var files []string
	var diags hcl.Diagnostics
	seen := map[string]bool{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read config",
				Detail:   err.Error(),
			})
			continue
		}
		var found []string
		if info.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read config directory", Detail: err.Error()})
				continue
			}
			for _, e := range entries {
				n := e.Name()
				// Test files are read by LoadTests, never served.
				if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".hcl") || IsTestFile(n) {
					continue
				}
				// Stat, not e.Type: ConfigMap files are symlinks.
				if fi, err := os.Stat(filepath.Join(p, n)); err == nil && !fi.IsDir() {
					found = append(found, filepath.Join(p, n))
				}
			}
			sort.Strings(found)
			if len(found) == 0 {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "Empty config directory", Detail: fmt.Sprintf("%s holds no *.hcl files.", p)})
			}
		} else {
			found = []string{p}
		}
		for _, f := range found {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	return files, diags
}

func decodeFile(cfg *Config, body hcl.Body, dir string, blocks Blocks) hcl.Diagnostics {
	// Attributes that must be known at load time (descriptions, URIs) may
	// still call functions, e.g. description = file("docs/tool.md").
	ectx := &hcl.EvalContext{Functions: funcs.TableWith(dir, funcs.Options{UnsetEnvUnknown: cfg.UnsetEnvUnknown})}
	backendSchema := &hcl.BodySchema{}
	for _, b := range blocks.Backends {
		backendSchema.Blocks = append(backendSchema.Blocks, hcl.BlockHeaderSchema{Type: b, LabelNames: []string{"name"}})
	}
	adapterSchema := &hcl.BodySchema{}
	for _, a := range blocks.Adapters {
		adapterSchema.Blocks = append(adapterSchema.Blocks, hcl.BlockHeaderSchema{Type: a})
	}
	var fc fileContent
	diags := decodeChecked(body, ectx, &fc, map[reflect.Type]*hcl.BodySchema{
		reflect.TypeFor[fileContent]():      backendSchema,
		reflect.TypeFor[Tool]():             adapterSchema,
		reflect.TypeFor[Resource]():         adapterSchema,
		reflect.TypeFor[ResourceTemplate](): adapterSchema,
	})

	diags = append(diags, checkDescribed(&fc)...) // icon.go
	if fc.Remain != nil {
		// decodeChecked checked that nothing else is left: the diagnostics
		// here are only about the backend blocks' labels.
		content, _, d := fc.Remain.PartialContent(backendSchema)
		diags = append(diags, d...)
		if content != nil {
			for _, b := range content.Blocks {
				be := &Backend{Type: b.Type, Name: b.Labels[0], Body: b.Body, DeclRange: b.DefRange, Dir: dir}
				if !validIdent(be.Name) {
					diags = append(diags, nameError(b.LabelRanges[0], b.Type, be.Name))
				}
				cfg.Backends = append(cfg.Backends, be)
			}
		}
	}

	for _, s := range fc.Servers {
		if cfg.Server != nil {
			first := cfg.Server.DeclRange
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate server block",
				Detail:   fmt.Sprintf("Only one server block is allowed; the first is at %s.", Pos(first)),
				Subject:  &s.DeclRange,
			})
			continue
		}
		if s.State != nil {
			s.State.Dir = dir
		}
		cfg.Server = s
	}
	diags = append(diags, mergeAuth(cfg, fc.Auths, dir)...)
	for _, t := range fc.Tools {
		t.Dir = dir
		if !ident.ToolName(t.Name) {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid tool name",
				Detail:   fmt.Sprintf("%q is not a valid tool name: use 1 to 128 of the characters A-Z a-z 0-9 _ . -", t.Name),
				Subject:  &t.NameRange,
			})
		}
		var d hcl.Diagnostics
		t.Adapter, d = adapterBlock(t.Remain, adapterSchema, "tool")
		diags = append(diags, d...)
		diags = append(diags, checkParams(t)...)
		if t.Result != nil {
			for _, c := range t.Result.Contents {
				diags = append(diags, checkContentType(c)...)
			}
		}
		cfg.Tools = append(cfg.Tools, t)
	}
	uriRanges := attrRanges(body, map[string]string{"resource": "uri", "resource_template": "uri_template"})
	for _, r := range fc.Resources {
		r.Dir = dir
		r.URIRange = uriRanges[r.DeclRange]
		var d hcl.Diagnostics
		r.Adapter, d = adapterBlock(r.Remain, adapterSchema, "resource")
		diags = append(diags, d...)
		cfg.Resources = append(cfg.Resources, r)
	}
	for _, r := range fc.ResourceTemplates {
		r.Dir = dir
		r.URIRange = uriRanges[r.DeclRange]
		var d hcl.Diagnostics
		r.Adapter, d = adapterBlock(r.Remain, adapterSchema, "resource_template")
		diags = append(diags, d...)
		diags = append(diags, checkTemplateParams(r)...)
		cfg.ResourceTemplates = append(cfg.ResourceTemplates, r)
	}
	for _, t := range fc.Tests {
		t.Dir = dir
		cfg.Tests = append(cfg.Tests, t)
	}
	for _, p := range fc.Prompts {
		p.Dir = dir
		diags = append(diags, checkPrompt(p)...)
		cfg.Prompts = append(cfg.Prompts, p)
	}
	for _, ts := range fc.Toolsets {
		diags = append(diags, decodeToolset(ts, ectx)...)
		cfg.Toolsets = append(cfg.Toolsets, ts)
	}
	return diags
}

// adapterBlock takes the adapter block out of the rest of a tool's (a
// resource's) body. Anything else in the body was reported by decodeChecked,
// which knew the adapter blocks as the rest of the body's schema.
func adapterBlock(remain hcl.Body, schema *hcl.BodySchema, owner string) (*AdapterBlock, hcl.Diagnostics) {
	if remain == nil {
		return nil, nil
	}
	content, _, diags := remain.PartialContent(schema)
	if content == nil || len(content.Blocks) == 0 {
		return nil, diags
	}
	first := content.Blocks[0]
	for _, extra := range content.Blocks[1:] {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "More than one adapter block",
			Detail:   fmt.Sprintf("A %s has at most one adapter block; this %s block follows the %s block at %s.", owner, extra.Type, first.Type, Pos(first.DefRange)),
			Subject:  &extra.DefRange,
		})
	}
	return &AdapterBlock{Type: first.Type, Body: first.Body, DeclRange: first.DefRange}, diags
}

var paramTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "array": true, "object": true}

// paramTypeNames are paramTypes in the order messages list them.
var paramTypeNames = []string{"string", "integer", "number", "boolean", "array", "object"}

// paramTypeAliases are the names other languages give the param types,
// too far from them in spelling for suggest to find.
var paramTypeAliases = map[string]string{
	"int": "integer", "float": "number", "double": "number", "bool": "boolean",
	"str": "string", "text": "string", "list": "array", "map": "object", "dict": "object",
}

// ParamTypeError is the diagnostic for a param (or an ask's field) whose
// type is not a param type, at type's value, with a did-you-mean; nil when
// it is one.
func ParamTypeError(p *Param) *hcl.Diagnostic {
	if paramTypes[p.Type] {
		return nil
	}
	rng := SubjectOr(p.TypeRange, p.DeclRange)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Invalid param type",
		Detail: fmt.Sprintf("param %q: type %q is not one of %s.%s", p.Name, p.Type,
			strings.Join(paramTypeNames, ", "), paramTypeSuggestion(p.Type)),
		Subject: &rng,
	}
}

// paramTypeSuggestion is ` Did you mean "x"?` for a type that is not one.
func paramTypeSuggestion(typ string) string {
	if a, ok := paramTypeAliases[strings.ToLower(typ)]; ok {
		return fmt.Sprintf(" Did you mean %q?", a)
	}
	return suggest.DidYouMean(strings.ToLower(typ), paramTypeNames)
}

func checkParams(t *Tool) hcl.Diagnostics {
	diags := checkParamList(t.Params)
	for _, p := range t.Params {
		for _, a := range []*hcl.Attribute{p.AllowSlash, p.AllowDotSegments} {
			if a != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Unsupported argument",
					Detail:   fmt.Sprintf("param %q: %s applies to the variables of a resource_template, not to a tool's params.", p.Name, a.Name),
					Subject:  &a.NameRange,
				})
			}
		}
	}
	for _, p := range t.Params {
		diags = append(diags, checkFromCaller(p)...)
	}
	if t.InputSchema != nil && len(t.Params) > 0 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Both input_schema and params",
			Detail:   "A tool declares its input either with param blocks or with input_schema, not both.",
			Subject:  &t.InputSchema.Range,
		})
	}
	return diags
}

// checkFromCaller checks a caller-bound param: its path names something a
// principal has ("name", or a claim as "claims.<name>[.<name>...]"), and it
// has no default and no required, since the model never supplies it.
func checkFromCaller(p *Param) hcl.Diagnostics {
	a := p.FromCaller
	if a == nil {
		return nil
	}
	var diags hcl.Diagnostics
	v, d := a.Expr.Value(nil)
	if d.HasErrors() || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid from_caller",
			Detail:   fmt.Sprintf("param %q: from_caller is a literal string such as \"claims.org_id\" or \"name\".", p.Name),
			Subject:  a.Expr.Range().Ptr(),
		}}
	}
	if path := v.AsString(); !ValidCallerPath(path) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid from_caller",
			Detail:   fmt.Sprintf("param %q: %q is not a caller attribute; write \"name\" (the caller's name) or \"claims.<claim>\" (a claim of its token or an attribute of its API key), e.g. \"claims.org_id\".", p.Name, path),
			Subject:  a.Expr.Range().Ptr(),
		})
	}
	if p.Default != nil {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "from_caller with a default",
			Detail:   fmt.Sprintf("param %q is set from the authenticated caller, so it cannot have a default: a call without the caller attribute is refused instead.", p.Name),
			Subject:  &p.Default.NameRange,
		})
	}
	if p.Required != nil {
		rng := p.DeclRange
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "from_caller with required",
			Detail:   fmt.Sprintf("param %q is set from the authenticated caller, never by the model: drop required.", p.Name),
			Subject:  &rng,
		})
	}
	return diags
}

// ValidCallerPath reports whether path is a from_caller path: "name" or
// "claims." followed by one or more non-empty dotted segments.
func ValidCallerPath(path string) bool { return principal.ValidPath(path) }

// checkTemplateParams checks the param blocks of a resource_template: as a
// tool's, except that a URI variable is text, which can become a string, a
// number or a boolean but not an array or an object. Whether each param is
// a variable of the template is checked where the template is compiled.
func checkTemplateParams(r *ResourceTemplate) hcl.Diagnostics {
	diags := checkParamList(r.Params)
	for _, p := range r.Params {
		if a := p.FromCaller; a != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("param %q: from_caller applies to a tool's params, not to the variables of a resource_template (they come from the URI).", p.Name),
				Subject:  &a.NameRange,
			})
		}
		if p.Type == "array" || p.Type == "object" {
			rng := SubjectOr(p.TypeRange, p.DeclRange)
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid param type",
				Detail:   fmt.Sprintf("param %q: a URI template variable is text; its type can be string, integer, number or boolean, not %s.", p.Name, p.Type),
				Subject:  &rng,
			})
		}
		if p.Sensitive != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("param %q: sensitive applies to a tool's params; a resource URI is logged and shown whole, so it must not carry secrets.", p.Name),
				Subject:  &p.Sensitive.NameRange,
			})
		}
	}
	return diags
}

// checkParamList checks names, duplicates and types, and sets the default
// type (string).
func checkParamList(params []*Param) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]*Param{}
	for _, p := range params {
		if prev, dup := seen[p.Name]; dup {
			diags = append(diags, duplicate("param", p.Name, p.DeclRange, prev.DeclRange))
			continue
		}
		seen[p.Name] = p
		if !validIdent(p.Name) {
			diags = append(diags, nameError(p.DeclRange, "param", p.Name))
		}
		if p.Type == "" {
			p.Type = "string"
		}
		if d := ParamTypeError(p); d != nil {
			diags = append(diags, d)
		}
	}
	return diags
}

var contentTypes = map[string]bool{"text": true, "image": true, "audio": true, "resource": true, "resource_link": true}

func checkContentType(c *Content) hcl.Diagnostics {
	if contentTypes[c.Type] {
		return nil
	}
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Unknown content type",
		Detail:   fmt.Sprintf("%q is not a content type; use text, image, audio, resource or resource_link.", c.Type),
		Subject:  &c.TypeRange,
	}}
}

func checkPrompt(p *Prompt) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if !validIdent(p.Name) {
		diags = append(diags, nameError(p.DeclRange, "prompt", p.Name))
	}
	seen := map[string]*Argument{}
	for _, a := range p.Arguments {
		if prev, dup := seen[a.Name]; dup {
			diags = append(diags, duplicate("argument", a.Name, a.DeclRange, prev.DeclRange))
		}
		seen[a.Name] = a
	}
	for _, m := range p.Messages {
		if m.Role == "" {
			m.Role = "user"
		}
		if m.Role != "user" && m.Role != "assistant" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid message role",
				Detail:   fmt.Sprintf("role %q is not user or assistant.", m.Role),
				Subject:  &m.DeclRange,
			})
		}
		n := len(m.Contents)
		if m.Text != nil {
			n++
		}
		if n != 1 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "A message needs exactly one content",
				Detail:   fmt.Sprintf("This message has %d; give either text = \"...\" or one content block.", n),
				Subject:  &m.DeclRange,
			})
		}
		for _, c := range m.Contents {
			diags = append(diags, checkContentType(c)...)
			if c.Type == "resource_link" {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "resource_link is not a prompt content",
					Detail:   "Prompt messages carry text, image, audio or resource content.",
					Subject:  &c.TypeRange,
				})
			}
		}
	}
	return diags
}

// checkUnique reports names declared twice anywhere in the config, naming
// both places.
func checkUnique(cfg *Config) hcl.Diagnostics {
	var diags hcl.Diagnostics
	tools := map[string]*Tool{}
	for _, t := range cfg.Tools {
		if prev, dup := tools[t.Name]; dup {
			diags = append(diags, duplicate("tool", t.Name, t.DeclRange, prev.DeclRange))
			continue
		}
		tools[t.Name] = t
	}
	prompts := map[string]*Prompt{}
	for _, p := range cfg.Prompts {
		if prev, dup := prompts[p.Name]; dup {
			diags = append(diags, duplicate("prompt", p.Name, p.DeclRange, prev.DeclRange))
			continue
		}
		prompts[p.Name] = p
	}
	resNames := map[string]hcl.Range{}
	resURIs := map[string]hcl.Range{}
	for _, r := range cfg.Resources {
		if prev, dup := resNames[r.Name]; dup {
			diags = append(diags, duplicate("resource", r.Name, r.DeclRange, prev))
		} else {
			resNames[r.Name] = r.DeclRange
		}
		if prev, dup := resURIs[r.URI]; dup {
			diags = append(diags, duplicate("resource URI", r.URI, SubjectOr(r.URIRange, r.DeclRange), prev))
		} else {
			resURIs[r.URI] = SubjectOr(r.URIRange, r.DeclRange)
		}
	}
	tmpl := map[string]hcl.Range{}
	for _, r := range cfg.ResourceTemplates {
		if prev, dup := tmpl[r.Name]; dup {
			diags = append(diags, duplicate("resource_template", r.Name, r.DeclRange, prev))
		} else {
			tmpl[r.Name] = r.DeclRange
		}
	}
	toolsets := map[string]*Toolset{}
	for _, ts := range cfg.Toolsets {
		if prev, dup := toolsets[ts.Name]; dup {
			diags = append(diags, duplicate("toolset", ts.Name, ts.DeclRange, prev.DeclRange))
			continue
		}
		toolsets[ts.Name] = ts
	}
	backends := map[string]*Backend{}
	for _, b := range cfg.Backends {
		key := b.Type + " " + b.Name
		if prev, dup := backends[key]; dup {
			diags = append(diags, duplicate(b.Type, b.Name, b.DeclRange, prev.DeclRange))
			continue
		}
		backends[key] = b
	}
	return diags
}

func duplicate(kind, name string, at, first hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Duplicate %s %q", kind, name),
		Detail:   fmt.Sprintf("%s %q is declared here and at %s.", kind, name, Pos(first)),
		Subject:  &at,
	}
}

func nameError(rng hcl.Range, kind, name string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Invalid %s name", kind),
		Detail:   fmt.Sprintf("%q must start with a letter or _ and use only letters, digits, _ . - (at most 128).", name),
		Subject:  &rng,
	}
}

// referencedFiles finds the files a config body reads with a literal path:
// file("x"), filebase64("x") and resource `file = "x"`. Paths built from
// expressions cannot be known before evaluation and are not watched.
func referencedFiles(body hcl.Body, dir string) []string {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []string
	literal := func(e hclsyntax.Expression) (string, bool) {
		v, diags := e.Value(nil)
		if diags.HasErrors() || v.IsNull() || !v.IsKnown() || !v.Type().Equals(cty.String) {
			return "", false
		}
		return v.AsString(), true
	}
	hclsyntax.VisitAll(sb, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n := n.(type) {
		case *hclsyntax.FunctionCallExpr:
			if (n.Name == "file" || n.Name == "filebase64") && len(n.Args) == 1 {
				if p, ok := literal(n.Args[0]); ok {
					out = append(out, funcs.Resolve(dir, p))
				}
			}
		case *hclsyntax.Block:
			if n.Type == "resource" {
				if a, ok := n.Body.Attributes["file"]; ok {
					if p, ok := literal(a.Expr); ok {
						out = append(out, funcs.Resolve(dir, p))
					}
				}
			}
		}
		return nil
	})
	return out
}

// attrRanges maps the definition range of each top-level block of the given
// types to the range of one of its attributes' value (attrs: block type to
// attribute name), for diagnostics that blame the attribute, not the block,
// about a value gohcl decoded into a plain string.
func attrRanges(body hcl.Body, attrs map[string]string) map[hcl.Range]hcl.Range {
	out := map[hcl.Range]hcl.Range{}
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return out
	}
	for _, b := range sb.Blocks {
		name, ok := attrs[b.Type]
		if !ok {
			continue
		}
		if a, ok := b.Body.Attributes[name]; ok {
			out[b.DefRange()] = a.Expr.Range()
		}
	}
	return out
}

// SubjectOr returns r, or fallback when r is the zero range (unknown).
func SubjectOr(r, fallback hcl.Range) hcl.Range {
	if r == (hcl.Range{}) {
		return fallback
	}
	return r
}

// mergeAuth keeps the one auth block a config may have, in any file.
func mergeAuth(cfg *Config, blocks []*Auth, dir string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range blocks {
		if cfg.Auth != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate auth block",
				Detail:   fmt.Sprintf("Only one auth block is allowed; the first is at %s.", Pos(cfg.Auth.DeclRange)),
				Subject:  &a.DeclRange,
			})
			continue
		}
		a.Dir = dir
		cfg.Auth = a
	}
	return diags
}
