package httpadapter

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
)

// A pathTemplate is a path whose literal parts come from the configuration
// and whose interpolated parts come from the call. Each interpolated value
// is path-escaped as one segment, so that an argument can add neither
// segments ("/", ".."), a query ("?") nor a fragment ("#").
type pathTemplate struct {
	parts []pathPart
}

type pathPart struct {
	lit  string         // literal text, kept as it is (when expr is nil)
	expr hcl.Expression // an interpolation, evaluated per call
	name string         // what the interpolation refers to, for messages
}

// build evaluates the template. The result is an escaped path.
func (t *pathTemplate) build(ectx *hcl.EvalContext) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
			continue
		}
		v, diags := p.expr.Value(ectx)
		if diags.HasErrors() {
			return "", fmt.Errorf("path: %w", adapter.DiagError(diags))
		}
		v, _ = v.UnmarkDeep()
		s, err := adapter.ValueString(v)
		if err != nil {
			return "", fmt.Errorf("path: %s: %w", p.name, err)
		}
		switch s {
		case "":
			return "", fmt.Errorf("path: %s is empty; an empty value cannot be inserted into the URL path", p.name)
		case ".", "..":
			return "", fmt.Errorf("path: %s is %q, which is not allowed as a URL path segment", p.name, s)
		}
		b.WriteString(url.PathEscape(s))
	}
	return b.String(), nil
}

// compileTemplate splits a path or url attribute into literal and
// interpolated parts. Static interpolations (no references to args, e.g.
// ${env("API_VERSION")}) are evaluated now and become literal: they are
// configuration, not input.
func compileTemplate(d *decoder, attr *hcl.Attribute) (*pathTemplate, bool) {
	expr := attr.Expr
	if diags := d.Scope.Check(expr); diags.HasErrors() {
		d.Diags = append(d.Diags, diags...)
		return nil, false
	}
	t := &pathTemplate{}
	staticPart := func(e hcl.Expression) bool {
		v, diags := e.Value(d.Scope.EvalContext())
		if diags.HasErrors() {
			d.Diags = append(d.Diags, diags...)
			return false
		}
		v, _ = v.UnmarkDeep()
		s, err := adapter.ValueString(v)
		if err != nil {
			d.Errorf(e.Range(), "Invalid "+attr.Name, "%s: %s.", attr.Name, err)
			return false
		}
		t.addLit(s)
		return true
	}
	if adapter.IsStatic(expr) {
		if !staticPart(expr) {
			return nil, false
		}
		return t, true
	}
	var parts []hclsyntax.Expression
	switch e := expr.(type) {
	case *hclsyntax.TemplateExpr:
		parts = e.Parts
	case *hclsyntax.TemplateWrapExpr:
		parts = []hclsyntax.Expression{e.Wrapped}
	default:
		d.Errorf(expr.Range(), "Invalid "+attr.Name,
			`%s must be a quoted string; insert arguments with interpolation, as in "/users/${args.login}/repos", so that each value is escaped as one path segment.`, attr.Name)
		return nil, false
	}
	for _, part := range parts {
		if lit, ok := part.(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String && !lit.Val.IsNull() {
			t.addLit(lit.Val.AsString())
			continue
		}
		if adapter.IsStatic(part) {
			if !staticPart(part) {
				return nil, false
			}
			continue
		}
		t.parts = append(t.parts, pathPart{expr: part, name: refName(part)})
	}
	return t, true
}

func (t *pathTemplate) addLit(s string) {
	if n := len(t.parts); n > 0 && t.parts[n-1].expr == nil {
		t.parts[n-1].lit += s
		return
	}
	t.parts = append(t.parts, pathPart{lit: s})
}

// skeleton is the template with every interpolation replaced by a plain
// segment, for checks of the literal text.
func (t *pathTemplate) skeleton() string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.lit)
		} else {
			b.WriteString("x")
		}
	}
	return b.String()
}

// checkLiteralPath checks the literal text of a path: no query string, no
// fragment, no "." or ".." segments, and a valid URL path.
func checkLiteralPath(d *decoder, attr *hcl.Attribute, skel string) bool {
	rng := attr.Expr.Range()
	if strings.ContainsAny(skel, "?#") {
		d.Errorf(rng, "Invalid "+attr.Name, "%s must not contain a query string or fragment; set query parameters with query = { ... }.", attr.Name)
		return false
	}
	for _, seg := range strings.Split(skel, "/") {
		if seg == "." || seg == ".." {
			d.Errorf(rng, "Invalid "+attr.Name, "%s must not contain %q segments.", attr.Name, seg)
			return false
		}
	}
	if _, err := url.Parse("http://h/" + strings.TrimPrefix(skel, "/")); err != nil || strings.ContainsAny(skel, " \t\r\n") {
		d.Errorf(rng, "Invalid "+attr.Name, "%s is not a valid URL path; escape special characters in its literal text.", attr.Name)
		return false
	}
	return true
}

// refName names what an interpolation refers to, for messages: "args.login",
// or "the value of ${...}" when it refers to several things.
func refName(e hcl.Expression) string {
	vars := e.Variables()
	if len(vars) == 1 {
		return traversalName(vars[0])
	}
	r := e.Range()
	return fmt.Sprintf("the interpolation at %s:%d,%d", r.Filename, r.Start.Line, r.Start.Column)
}

func traversalName(tr hcl.Traversal) string {
	var b strings.Builder
	b.WriteString(tr.RootName())
	for _, step := range tr[1:] {
		switch s := step.(type) {
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String {
				b.WriteString("." + s.Key.AsString())
			}
		}
	}
	return b.String()
}

// origin is where requests go: scheme and host (with port) fixed at load,
// and the base path requests must stay under.
type origin struct {
	scheme string
	host   string
	// basePath is the escaped base path without a trailing slash ("" for
	// the root); cleanBase is its decoded, cleaned form ("" for the root).
	basePath  string
	cleanBase string
}

// parseBase checks a base URL (http_backend.base_url, or the scheme and
// host of a tool's url) and returns its origin. It returns a message when
// the URL is not acceptable.
func parseBase(raw string) (origin, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return origin{}, fmt.Sprintf("%q is not a valid URL", redactURLString(raw))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return origin{}, "the URL must start with http:// or https://"
	case u.Opaque != "" || u.Host == "":
		return origin{}, "the URL must name a host, as in https://api.example.com"
	case u.User != nil:
		return origin{}, "the URL must not contain credentials; send them in headers (e.g. Authorization) taken from env() or file()"
	case u.RawQuery != "" || u.ForceQuery:
		return origin{}, "the URL must not contain a query string; use query = { ... }"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return origin{}, "the URL must not contain a fragment"
	case u.Hostname() == "":
		return origin{}, "the URL must name a host, as in https://api.example.com"
	}
	if port := u.Port(); port != "" {
		if n, ok := atoiPort(port); !ok || n == 0 || n > 65535 {
			return origin{}, "the URL's port is not valid"
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return origin{}, "the URL's path must not contain \".\" or \"..\" segments"
		}
	}
	o := origin{scheme: u.Scheme, host: u.Host}
	o.basePath = strings.TrimRight(u.EscapedPath(), "/")
	o.cleanBase = strings.TrimRight(path.Clean("/"+u.Path), "/")
	return o, ""
}

func atoiPort(s string) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 65535 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, s != ""
}

var originRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^/?#]*)(.*)$`)

// splitURLTemplate splits a tool's url template into its origin, which
// must be literal, and a path template. The scheme, host and port can
// therefore never come from an argument.
func splitURLTemplate(d *decoder, attr *hcl.Attribute, t *pathTemplate) (origin, *pathTemplate, bool) {
	rng := attr.Expr.Range()
	if len(t.parts) == 0 || t.parts[0].expr != nil {
		d.Errorf(rng, "Invalid url", `url must start with a literal scheme and host, as in "https://api.example.com/users/${args.login}"; arguments may only be inserted into the path.`)
		return origin{}, nil, false
	}
	m := originRE.FindStringSubmatch(t.parts[0].lit)
	if m == nil {
		d.Errorf(rng, "Invalid url", "url must be a full URL starting with http:// or https://.")
		return origin{}, nil, false
	}
	rest := m[2]
	if len(t.parts) > 1 && !strings.HasPrefix(rest, "/") {
		d.Errorf(rng, "Invalid url", `url must spell out its scheme, host and port literally, followed by "/", before any ${...}: arguments may only be inserted into the path.`)
		return origin{}, nil, false
	}
	o, msg := parseBase(m[1])
	if msg != "" {
		d.Errorf(rng, "Invalid url", "url: %s.", msg)
		return origin{}, nil, false
	}
	pt := &pathTemplate{}
	if rest != "" {
		pt.parts = append(pt.parts, pathPart{lit: rest})
	}
	pt.parts = append(pt.parts, t.parts[1:]...)
	return o, pt, true
}

// buildURL joins the origin, the base path and the evaluated path, adds the
// query, and verifies the result: same scheme and host as the origin, no
// credentials, no fragment, no "." or ".." segments, and a path that stays
// under the base path even if the server decodes %2F.
func (o origin) buildURL(p string, query url.Values) (*url.URL, error) {
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	raw := o.scheme + "://" + o.host + o.basePath + p
	encQuery := query.Encode()
	if encQuery != "" {
		raw += "?" + encQuery
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("the request URL is not valid")
	}
	switch {
	case u.Scheme != o.scheme || u.Host != o.host || u.User != nil || u.Opaque != "":
		return nil, fmt.Errorf("the arguments would change the URL's scheme or host; refused")
	case u.Fragment != "" || u.RawQuery != encQuery:
		return nil, fmt.Errorf("the arguments would change the URL's query or fragment; refused")
	}
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("the URL path would contain a %q segment; refused", seg)
		}
	}
	clean := path.Clean("/" + u.Path)
	if o.cleanBase != "" && clean != o.cleanBase && !strings.HasPrefix(clean, o.cleanBase+"/") {
		return nil, fmt.Errorf("the URL path would leave the base path %s; refused", o.cleanBase)
	}
	return u, nil
}

// displayURL is a URL for messages: scheme, host and escaped path, without
// credentials, query string or fragment.
func displayURL(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// redactURLString shortens an unparseable URL for messages: no userinfo,
// no query.
func redactURLString(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			raw = raw[:j+3] + raw[i+1:]
		}
	}
	return raw
}
