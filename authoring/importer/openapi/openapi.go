// Package openapi converts an OpenAPI 3.0 or 3.1 document into mcpd tools:
// one tool with the http adapter per operation, and an http_backend per
// set of credentials the operations need. What the http adapter or mcpd's
// params cannot express is left out and reported with its place in the
// document; the rest is still converted.
package openapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/mcpd/mcpd/authoring/importer"
	"github.com/mcpd/mcpd/engine/outbound"
)

// Options select and name what is converted.
type Options struct {
	// Name names the http_backend and prefixes the environment variables of
	// its credentials. Default: the document's info.title in snake_case.
	Name string
	// BaseURL replaces the URL of the document's first server.
	BaseURL string
	// Tags keeps the operations that have at least one of these tags.
	Tags []string
	// Operations keeps the operations with these operationIds (or
	// generated tool names).
	Operations []string
	// Source is the document's name, written in the generated file's
	// header comment and used in the report.
	Source string
}

// Result is the generated configuration and what could not be converted.
type Result struct {
	HCL    []byte
	Report *importer.Report
	Tools  int
}

// LoadOptions widen what LoadWith reads.
type LoadOptions struct {
	// RefRoot is the directory whose tree the references of a document
	// read from a file may read. Default: the document's own directory.
	RefRoot string
}

// LoadWith reads an OpenAPI document from a file or an http(s) URL, JSON
// or YAML, with its $refs resolved and the line of each element recorded.
// A document read from a file may refer to other files of its own
// directory tree (o.RefRoot widens it), and one read from a URL to other
// URLs of the same host: a document never makes the importer read from
// elsewhere (a remote one, the rest of the local disk), because what a
// reference reads is copied into the generated config.
func LoadWith(ctx context.Context, location string, o LoadOptions) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IncludeOrigin = true
	loader.IsExternalRefsAllowed = true
	if u, err := url.Parse(location); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		// A redirect is followed within the document's origin only, as
		// references are: another host is not read by a detour.
		client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: outbound.SameOriginRedirects("the OpenAPI document", 5)}
		loader.ReadFromURIFunc = func(_ *openapi3.Loader, ref *url.URL) ([]byte, error) {
			ref = u.ResolveReference(ref)
			if ref.Scheme != u.Scheme || ref.Host != u.Host {
				return nil, fmt.Errorf("%s: a document read from %s may only refer to documents of the same host", ref, u.Host)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.String(), nil)
			if err != nil {
				return nil, err
			}
			resp, err := client.Do(req)
			if re := (*outbound.RedirectError)(nil); errors.As(err, &re) {
				return nil, re // without net/http's wrapper, which shows the Location's query
			}
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("GET %s: %s", ref.Redacted(), resp.Status)
			}
			return io.ReadAll(io.LimitReader(resp.Body, maxDocument))
		}
		doc, err := loader.LoadFromURI(u)
		if err != nil {
			return nil, fmt.Errorf("reading the OpenAPI document %s: %w", location, err)
		}
		return doc, nil
	}
	if _, err := os.Stat(location); err != nil {
		return nil, err
	}
	root := o.RefRoot
	if root == "" {
		root = filepath.Dir(location)
	}
	root, err := realPath(root)
	if err != nil {
		return nil, fmt.Errorf("the directory references may read: %w", err)
	}
	self, err := realPath(location)
	if err != nil {
		return nil, err
	}
	loader.ReadFromURIFunc = func(l *openapi3.Loader, ref *url.URL) ([]byte, error) {
		if ref.Scheme != "" && ref.Scheme != "file" {
			return nil, fmt.Errorf("%s: a document read from a file may only refer to files", ref.Redacted())
		}
		p, err := realPath(filepath.FromSlash(ref.Path))
		if err != nil {
			return nil, err
		}
		if rel, err := filepath.Rel(root, p); p != self && (err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
			return nil, fmt.Errorf("%s: a document read from a file may only refer to files under %s, its directory unless widened (mcpd import --ref-root)", ref.Path, root)
		}
		return openapi3.ReadFromFile(l, &url.URL{Path: filepath.ToSlash(p)})
	}
	doc, err := loader.LoadFromFile(location)
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI document %s: %w", location, err)
	}
	return doc, nil
}

// realPath is p absolute with its symbolic links resolved, so that a link
// inside the tree cannot lead out of it.
func realPath(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// maxDocument bounds what is read from one URL.
const maxDocument = 256 << 20

var methods = []string{"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "TRACE"}

// Convert turns the document's selected operations into an mcpd
// configuration.
func Convert(doc *openapi3.T, opts Options) (*Result, error) {
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return nil, fmt.Errorf("the document is not OpenAPI 3 (openapi: %q): mcpd import reads OpenAPI 3.0 and 3.1; convert a Swagger 2.0 document first (e.g. with swagger2openapi)", doc.OpenAPI)
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		return nil, fmt.Errorf("the document has no paths: nothing to convert")
	}
	c := &converter{doc: doc, opts: opts, report: &importer.Report{File: opts.Source}, is31: doc.IsOpenAPI31OrLater()}
	c.name = importer.Ident(opts.Name, "")
	if c.name == "" {
		c.name = importer.Ident(shortTitle(infoTitle(doc)), "api")
	}
	c.toolNames = importer.NewNamer(importer.MaxToolName)
	c.backends = map[string]*backend{}
	c.matched = map[string]bool{}
	c.baseURL = c.serverURL()

	for _, name := range slices.Sorted(maps.Keys(doc.Webhooks)) {
		c.report.Skip(pointer("webhooks", name), line(doc.Webhooks[name].Origin), "webhooks are not converted: mcpd tools make requests, they receive none")
	}
	var tools []*tool
	paths := doc.Paths.Map()
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item := paths[p]
		ops := item.Operations()
		for _, m := range methods {
			op := ops[m]
			if op == nil || !c.selected(op) {
				continue
			}
			if t := c.operation(p, m, item, op); t != nil {
				tools = append(tools, t)
			}
		}
	}
	for _, o := range opts.Operations {
		if !c.matched[o] {
			c.report.Skip("", 0, "--operations: no operation has the operationId %q", o)
		}
	}
	if len(tools) == 0 {
		var b strings.Builder
		c.report.Write(&b)
		return nil, fmt.Errorf("no operation was converted:\n%s", b.String())
	}
	return &Result{HCL: c.write(tools), Report: c.report, Tools: len(tools)}, nil
}

type converter struct {
	doc       *openapi3.T
	opts      Options
	report    *importer.Report
	is31      bool
	name      string
	baseURL   string
	toolNames *importer.Namer
	backends  map[string]*backend // by security key
	order     []*backend
	matched   map[string]bool // --operations that named an operation
}

// backend is one http_backend: the server and one set of credentials.
type backend struct {
	name    string
	headers []importer.Field
	query   []importer.Field
}

// tool is one converted operation.
type tool struct {
	name, description string
	where             string
	method            string
	path              []importer.Part
	params            []*param
	query, headers    []importer.Field
	body              hclwrite.Tokens
	form              hclwrite.Tokens
	output            map[string]any
	accept            string // set when the response may come in several media types
	backend           string
}

type param struct {
	name     string
	schema   map[string]any
	required bool
	desc     string
}

func infoTitle(doc *openapi3.T) string {
	if doc.Info != nil {
		return doc.Info.Title
	}
	return ""
}

// shortTitle is the start of a title, up to its first punctuation and at
// most three words: "Swagger Petstore - OpenAPI 3.0" is "Swagger
// Petstore", "GitHub's official OpenAPI spec" is "GitHub".
func shortTitle(t string) string {
	if i := strings.IndexAny(t, "'’:(-–|,/"); i > 0 {
		t = t[:i]
	}
	words := strings.Fields(t)
	if len(words) > 3 {
		words = words[:3]
	}
	return strings.Join(words, " ")
}

func (c *converter) selected(op *openapi3.Operation) bool {
	if len(c.opts.Operations) > 0 {
		for _, o := range c.opts.Operations {
			if o == op.OperationID || importer.Snake(o) == importer.Snake(op.OperationID) {
				c.matched[o] = true
				return true
			}
		}
		return false
	}
	if len(c.opts.Tags) > 0 {
		for _, t := range op.Tags {
			for _, want := range c.opts.Tags {
				if t == want {
					return true
				}
			}
		}
		return false
	}
	return true
}

// pointer is the JSON pointer of a place in the document.
func pointer(parts ...string) string {
	var b strings.Builder
	b.WriteString("#")
	for _, p := range parts {
		b.WriteString("/")
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func line(o *openapi3.Origin) int {
	if o != nil && o.Key != nil {
		return o.Key.Line
	}
	return 0
}

// serverURL is the base URL of the backends: --base-url, or the first
// server's URL with its variables at their defaults.
func (c *converter) serverURL() string {
	if c.opts.BaseURL != "" {
		return strings.TrimRight(c.opts.BaseURL, "/")
	}
	if len(c.doc.Servers) == 0 {
		c.report.Note(pointer("servers"), 0, "the document names no server: base_url is http://localhost; set it with --base-url or edit the http_backend")
		return "http://localhost"
	}
	s := c.doc.Servers[0]
	u := s.URL
	for name, v := range s.Variables {
		u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
	}
	if len(c.doc.Servers) > 1 {
		c.report.Note(pointer("servers"), line(s.Origin), "the document names %d servers: the first, %s, is used", len(c.doc.Servers), u)
	}
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") {
		c.report.Note(pointer("servers", "0", "url"), line(s.Origin), "the server URL %q is not an absolute http(s) URL: base_url is http://localhost%s; set it with --base-url or edit the http_backend", u, strings.TrimRight(pathOf(u), "/"))
		return "http://localhost" + strings.TrimRight(pathOf(u), "/")
	}
	pu.RawQuery, pu.Fragment = "", ""
	return strings.TrimRight(pu.String(), "/")
}

func pathOf(u string) string {
	if pu, err := url.Parse(u); err == nil {
		if strings.HasPrefix(pu.Path, "/") {
			return pu.Path
		}
	}
	return ""
}

var pathParam = regexp.MustCompile(`\{([^{}]+)\}`)

func (c *converter) operation(p, method string, item *openapi3.PathItem, op *openapi3.Operation) *tool {
	where := pointer("paths", p, strings.ToLower(method))
	ln := line(op.Origin)
	if method == "TRACE" {
		c.report.Skip(where, ln, "the http adapter does not send TRACE requests: operation left out")
		return nil
	}
	base := importer.Snake(op.OperationID)
	if base == "" {
		base = importer.Snake(strings.ToLower(method) + " " + pathParam.ReplaceAllString(p, "by $1"))
	}
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = "op_" + base
	}
	t := &tool{name: c.toolNames.Unique(base), method: method, where: where}
	t.description = strings.TrimSpace(op.Summary)
	if d := strings.TrimSpace(op.Description); d != "" && d != t.description {
		if t.description != "" {
			t.description += "\n\n"
		}
		t.description += d
	}
	if t.description == "" {
		t.description = method + " " + p
	}
	if op.Deprecated {
		t.description = "Deprecated. " + t.description
	}
	if len(op.Callbacks) > 0 {
		c.report.Skip(where+"/callbacks", ln, "callbacks are not converted: mcpd tools make one request and do not receive calls")
	}
	if op.Servers != nil && len(*op.Servers) > 0 || len(item.Servers) > 0 {
		c.report.Note(where, ln, "the operation names its own servers; the tool uses the document's (%s)", c.baseURL)
	}
	names := importer.NewNamer(0)
	// Parameters: the operation's override the path item's of the same
	// name and location.
	params := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				continue
			}
			key := pr.Value.In + ":" + pr.Value.Name
			if _, ok := params[key]; !ok {
				order = append(order, key)
			}
			params[key] = pr.Value
		}
	}
	argOf := map[string]string{} // path parameter name → param name
	// Path parameters first, in the order of the path, so that the
	// generated params read like the URL.
	sort.SliceStable(order, func(i, j int) bool {
		return rank(params[order[i]].In) < rank(params[order[j]].In)
	})
	for _, key := range order {
		pr := params[key]
		pwhere := where + "/parameters/" + pr.In + ":" + pr.Name
		pl := line(pr.Origin)
		if pr.Schema == nil {
			c.report.Skip(pwhere, pl, "a parameter described by content rather than a schema is not converted")
			if pr.Required || pr.In == "path" {
				c.report.Skip(where, ln, "operation left out: its required parameter %q is not converted", pr.Name)
				return nil
			}
			continue
		}
		sc := &schemaConv{is31: c.is31, dir: request}
		schema := sc.convert(pr.Schema)
		c.schemaIssues(sc, pwhere, pl)
		desc := strings.TrimSpace(pr.Description)
		switch pr.In {
		case "path":
			if !scalar(schema) {
				c.report.Skip(pwhere, pl, "a path parameter that is an array or object is not converted")
				c.report.Skip(where, ln, "operation left out: its path parameter %q is not converted", pr.Name)
				return nil
			}
			if pr.Style != "" && pr.Style != "simple" {
				c.report.Skip(pwhere, pl, "path parameter style %q is not converted (only simple)", pr.Style)
				c.report.Skip(where, ln, "operation left out: its path parameter %q is not converted", pr.Name)
				return nil
			}
			name := names.Unique(importer.Ident(pr.Name, "param"))
			argOf[pr.Name] = name
			t.params = append(t.params, &param{name: name, schema: schema, required: true, desc: desc})
		case "query":
			expr, ok := c.queryValue(pr, schema, pwhere, pl, names)
			if !ok {
				if pr.Required {
					c.report.Skip(where, ln, "operation left out: its required query parameter %q is not converted", pr.Name)
					return nil
				}
				continue
			}
			t.params = append(t.params, &param{name: expr.param, schema: schema, required: pr.Required, desc: desc})
			t.query = append(t.query, importer.Field{Name: pr.Name, Value: expr.tokens})
		case "header":
			switch strings.ToLower(pr.Name) {
			case "accept", "content-type", "authorization":
				// OpenAPI: "If in is header and the name field is Accept,
				// Content-Type or Authorization, the parameter definition
				// SHALL be ignored."
				continue
			}
			if !scalar(schema) {
				c.report.Skip(pwhere, pl, "a header parameter that is an array or object is not converted")
				if pr.Required {
					c.report.Skip(where, ln, "operation left out: its required header %q is not converted", pr.Name)
					return nil
				}
				continue
			}
			name := names.Unique(importer.Ident(pr.Name, "header"))
			t.params = append(t.params, &param{name: name, schema: schema, required: pr.Required, desc: desc})
			t.headers = append(t.headers, importer.Field{Name: pr.Name, Value: importer.Args(name)})
		case "cookie":
			c.report.Skip(pwhere, pl, "cookie parameters are not converted: the http adapter sends no cookies from arguments")
			if pr.Required {
				c.report.Skip(where, ln, "operation left out: its required cookie %q is not converted", pr.Name)
				return nil
			}
		}
	}
	// The path, as a template of literal text and path params.
	rest := p
	for {
		loc := pathParam.FindStringSubmatchIndex(rest)
		if loc == nil {
			t.path = append(t.path, importer.Part{Text: rest})
			break
		}
		t.path = append(t.path, importer.Part{Text: rest[:loc[0]]})
		name := rest[loc[2]:loc[3]]
		arg, ok := argOf[name]
		if !ok {
			c.report.Skip(where, ln, "operation left out: the path names {%s}, which no path parameter declares", name)
			return nil
		}
		t.path = append(t.path, importer.Part{Expr: importer.Args(arg)})
		rest = rest[loc[1]:]
	}
	if bad := badPath(t.path); bad != "" {
		c.report.Skip(where, ln, "operation left out: %s", bad)
		return nil
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		if !c.body(t, op.RequestBody.Value, where+"/requestBody", line(op.RequestBody.Value.Origin), names) {
			c.report.Skip(where, ln, "operation left out: its request body is not converted")
			return nil
		}
	}
	t.output, t.accept = c.output(op, where)
	if t.accept != "" {
		t.headers = append(t.headers, importer.Field{Name: "Accept", Value: importer.Lit(t.accept)})
	}
	t.backend = c.backendFor(op, where, ln)
	return t
}

// rank orders parameters: path, query, header, cookie.
func rank(in string) int {
	switch in {
	case "path":
		return 0
	case "query":
		return 1
	case "header":
		return 2
	}
	return 3
}

// badPath returns why the http adapter would refuse the path's literal
// text, or "".
func badPath(parts []importer.Part) string {
	for _, p := range parts {
		if p.Expr != nil {
			continue
		}
		if strings.ContainsAny(p.Text, "?#") {
			return fmt.Sprintf("the path %q holds a query or fragment, which the http adapter does not take in a path", p.Text)
		}
		for _, seg := range strings.Split(p.Text, "/") {
			if seg == "." || seg == ".." {
				return "the path has a . or .. segment"
			}
		}
	}
	return ""
}

func scalar(s map[string]any) bool {
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[k].([]any); ok && s["type"] == nil {
			for _, a := range alts {
				if m, ok := a.(map[string]any); !ok || !scalar(m) {
					return false
				}
			}
			return len(alts) > 0
		}
	}
	switch t := s["type"].(type) {
	case string:
		return t != "array" && t != "object"
	case []any:
		for _, x := range t {
			if x == "array" || x == "object" {
				return false
			}
		}
		return true
	}
	return false
}

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x != "null" {
				return x.(string)
			}
		}
	}
	return ""
}

type queryExpr struct {
	param  string
	tokens hclwrite.Tokens
}

// queryValue is how a query parameter reaches the request: the argument
// itself (a list repeats the parameter, OpenAPI's default form style), or
// joined for the non-exploded array styles.
func (c *converter) queryValue(pr *openapi3.Parameter, schema map[string]any, where string, ln int, names *importer.Namer) (queryExpr, bool) {
	typ := typeOf(schema)
	if typ == "object" {
		c.report.Skip(where, ln, "a query parameter that is an object (style %s) is not converted", styleOr(pr.Style, "form"))
		return queryExpr{}, false
	}
	if typ == "" && !scalar(schema) {
		c.report.Skip(where, ln, "a query parameter whose schema is a choice of shapes (oneOf, anyOf) including an array or object is not converted")
		return queryExpr{}, false
	}
	name := names.Unique(importer.Ident(pr.Name, "query"))
	if typ != "array" {
		return queryExpr{name, importer.Args(name)}, true
	}
	if items, ok := schema["items"].(map[string]any); ok && !scalar(items) {
		c.report.Skip(where, ln, "a query parameter that is an array of arrays or objects is not converted")
		return queryExpr{}, false
	}
	explode := pr.Explode == nil || *pr.Explode
	sep := ""
	switch styleOr(pr.Style, "form") {
	case "form":
		if explode {
			return queryExpr{name, importer.Args(name)}, true
		}
		sep = ","
	case "spaceDelimited":
		sep = " "
	case "pipeDelimited":
		sep = "|"
	default:
		c.report.Skip(where, ln, "query parameter style %q is not converted", pr.Style)
		return queryExpr{}, false
	}
	return queryExpr{name, joined(name, sep)}, true
}

// joined is args.NAME == null ? null : join(SEP, args.NAME).
func joined(name, sep string) hclwrite.Tokens {
	src := fmt.Sprintf("x = args.%s == null ? null : join(%q, args.%s)\n", name, sep, name)
	pf, diags := hclwrite.ParseConfig([]byte(src), "", hcl.InitialPos)
	if diags.HasErrors() {
		panic(fmt.Sprintf("joined: %s", diags.Error())) // names are identifiers: cannot happen
	}
	return pf.Body().GetAttribute("x").Expr().BuildTokens(nil)
}

func styleOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// body converts the request body into params and the http block's body or
// form. It returns false when the operation cannot be converted without
// what is left of its body: a required body that cannot be converted, or
// a body of media types the http adapter cannot send at all (a multipart
// upload, octet-stream, XML), required or not. Such a body is what the
// operation is for (OpenAPI bodies are optional unless they say so, and
// most uploads do not): a tool without it would call the operation with
// nothing to upload.
func (c *converter) body(t *tool, rb *openapi3.RequestBody, where string, ln int, names *importer.Namer) bool {
	mt, media := pickMedia(rb.Content)
	if media == nil {
		var types []string
		for k := range rb.Content {
			types = append(types, k)
		}
		sort.Strings(types)
		c.report.Skip(where, ln, "a request body of %s is not converted: the http adapter sends JSON or form bodies", strings.Join(types, ", "))
		return len(types) == 0 && !rb.Required
	}
	form := mt == "application/x-www-form-urlencoded"
	if !form && mt != "application/json" {
		t.headers = append(t.headers, importer.Field{Name: "Content-Type", Value: importer.Lit(mt)})
	}
	sc := &schemaConv{is31: c.is31, dir: request}
	schema := sc.convert(media.Schema)
	c.schemaIssues(sc, where, ln)
	props, flat := schema["properties"].(map[string]any)
	if typeOf(schema) != "object" || !flat || len(props) == 0 || schema["oneOf"] != nil || schema["anyOf"] != nil || schema["allOf"] != nil {
		if form {
			c.report.Skip(where, ln, "a form body that is not an object of properties is not converted")
			return !rb.Required
		}
		name := names.Unique("body")
		t.params = append(t.params, &param{name: name, schema: schema, required: rb.Required, desc: strings.TrimSpace(rb.Description)})
		t.body = importer.Args(name)
		return true
	}
	required := map[string]bool{}
	if r, ok := schema["required"].([]any); ok {
		for _, n := range r {
			required[n.(string)] = true
		}
	}
	var fields []importer.Field
	for _, prop := range slices.Sorted(maps.Keys(props)) {
		ps, _ := props[prop].(map[string]any)
		if form && !scalar(ps) && !(typeOf(ps) == "array" && scalarItems(ps)) {
			c.report.Skip(where+"/content/"+strings.ReplaceAll(mt, "/", "~1")+"/schema/properties/"+prop, ln, "a form field that is an object is not converted")
			if required[prop] && rb.Required {
				return false
			}
			continue
		}
		base := importer.Ident(prop, "field")
		if names.Taken(base) {
			base = "body_" + base
		}
		name := names.Unique(base)
		desc, _ := ps["description"].(string)
		delete(ps, "description")
		t.params = append(t.params, &param{name: name, schema: ps, required: rb.Required && required[prop], desc: desc})
		fields = append(fields, importer.Field{Name: prop, Value: importer.Args(name)})
	}
	if form {
		t.form = importer.Object(fields)
	} else {
		t.body = importer.Object(fields)
	}
	return true
}

func scalarItems(s map[string]any) bool {
	items, ok := s["items"].(map[string]any)
	return ok && scalar(items)
}

// pickMedia chooses the body's media type: JSON first, then a form;
// multipart and other types cannot be sent by the http adapter.
func pickMedia(content openapi3.Content) (string, *openapi3.MediaType) {
	keys := slices.Sorted(maps.Keys(content))
	for _, k := range keys {
		if strings.EqualFold(mediaBase(k), "application/json") {
			return "application/json", content[k]
		}
	}
	for _, k := range keys {
		if b := strings.ToLower(mediaBase(k)); strings.HasSuffix(b, "+json") || b == "text/json" {
			return b, content[k]
		}
	}
	for _, k := range keys {
		if strings.EqualFold(mediaBase(k), "application/x-www-form-urlencoded") {
			return "application/x-www-form-urlencoded", content[k]
		}
	}
	return "", nil
}

func mediaBase(mt string) string {
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.TrimSpace(mt)
}

// output is the tool's output_schema: the JSON schema of the 200 response
// (or else the first 2xx), shaped as the http adapter shapes its
// structured result (arrays under "items", other values under "value").
//
// When the response comes in several media types (JSON and XML), the JSON
// one is also returned, for an Accept header: servers choose by it.
func (c *converter) output(op *openapi3.Operation, where string) (map[string]any, string) {
	if op.Responses == nil {
		return nil, ""
	}
	var code string
	var resp *openapi3.ResponseRef
	for _, k := range []string{"200", "201"} {
		if r := op.Responses.Value(k); r != nil {
			code, resp = k, r
			break
		}
	}
	if resp == nil {
		m := op.Responses.Map()
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if len(k) == 3 && k[0] == '2' {
				code, resp = k, m[k]
				break
			}
		}
	}
	if resp == nil || resp.Value == nil || code == "204" {
		return nil, ""
	}
	var media *openapi3.MediaType
	accept := ""
	for _, k := range slices.Sorted(maps.Keys(resp.Value.Content)) {
		b := strings.ToLower(mediaBase(k))
		if b == "application/json" || strings.HasSuffix(b, "+json") {
			media = resp.Value.Content[k]
			if len(resp.Value.Content) > 1 {
				accept = mediaBase(k)
			}
			break
		}
	}
	if media == nil || media.Schema == nil {
		return nil, accept
	}
	rwhere := where + "/responses/" + code
	sc := &schemaConv{is31: c.is31, dir: response}
	s := sc.convert(media.Schema)
	c.schemaIssues(sc, rwhere, line(resp.Value.Origin))
	if len(s) == 0 {
		return nil, accept // any value: nothing to declare
	}
	if t, ok := s["type"].([]any); ok && len(t) == 2 && (t[0] == "null" || t[1] == "null") {
		// A nullable response: the adapter gives no structured result
		// for a null body, so the schema is the non-null type's.
		s["type"] = typeOf(s)
	}
	switch t := s["type"].(type) {
	case string:
		switch t {
		case "object":
			return s, accept
		case "array":
			return map[string]any{"type": "object", "properties": map[string]any{"items": s}, "required": []any{"items"}}, accept
		default:
			return map[string]any{"type": "object", "properties": map[string]any{"value": s}, "required": []any{"value"}}, accept
		}
	}
	c.report.Note(rwhere, line(resp.Value.Origin), "no output_schema: the response's schema has no single type")
	return nil, accept
}

func (c *converter) schemaIssues(sc *schemaConv, where string, ln int) {
	seen := map[string]bool{}
	for _, r := range sc.cut {
		if !seen[r] {
			seen[r] = true
			c.report.Note(where, ln, "the schema %s refers to itself: the inner reference accepts any value", r)
		}
	}
	for _, d := range sc.drops {
		c.report.Skip(where, ln, "%s left out", d)
	}
}
