// Package httpadapter is mcpd's HTTP adapter: the `http` block of a tool
// sends one HTTP request built from the call's arguments, and the
// `http_backend` top-level block holds connection settings shared by tools
// (base URL, headers, timeouts, retries, TLS), with one connection pool per
// backend. The HTTP work is done by resty (github.com/go-resty/resty/v2).
//
// Arguments are escaped where they land: a value interpolated into a path
// is escaped as one path segment; query, form and header values are
// encoded by the HTTP library; bodies are JSON-encoded from values, never
// pasted into text. The scheme, host and port of a request always come from
// the configuration, and redirects are only followed within them.
//
// See docs/adapter-http.md for the configuration reference.
package httpadapter

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
)

// Adapter is the HTTP adapter. Register it as "http"; its backend block is
// "http_backend".
type Adapter struct {
	once   sync.Once
	shared *resty.Client // for tools without a backend
	// tokens are the OAuth tokens identity blocks obtained, for the life
	// of the adapter: a reload keeps them.
	tokens *identity.Cache
	// chunks are the buffers response bodies are read into (readLimited),
	// reused by every tool's calls.
	chunks *sync.Pool
}

// New returns the HTTP adapter.
func New() *Adapter { return &Adapter{tokens: identity.NewCache(userAgent), chunks: &sync.Pool{}} }

var (
	_ adapter.BackendAdapter = (*Adapter)(nil)
	_ adapter.BackendConfig  = (*backendConfig)(nil)
	_ adapter.Backend        = (*liveBackend)(nil)
	_ adapter.Handler        = (*handler)(nil)
)

// BackendBlock is the top-level block this adapter owns.
func (a *Adapter) BackendBlock() string { return "http_backend" }

// sharedClient is the client of tools that use url instead of a backend:
// one pool for all of them, for the life of the adapter.
func (a *Adapter) sharedClient() *resty.Client {
	a.once.Do(func() { a.shared, _ = newClient(nil) })
	return a.shared
}

var allowedMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// Idempotent methods (RFC 9110 §9.2.2) are retried; POST and PATCH only
// with retry_unsafe = true.
var idempotentMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPut: true,
	http.MethodDelete: true, http.MethodOptions: true,
}

// handler is one compiled http block. It is immutable after CompileTool and
// safe for concurrent calls.
type handler struct {
	tool        string
	who         string // what errors name: the http_backend, or the tool's url
	method      string
	client      *resty.Client
	origin      origin
	path        *pathTemplate
	baseHeaders map[string][]string // from the backend, canonical names
	baseQuery   map[string][]string // from the backend
	query       *multiMap
	headers     *multiMap
	form        *multiMap
	body        *jsonBody
	expect      []int // sorted; nil means any 2xx
	maxBytes    int64
	timeout     time.Duration
	retry       retryPolicy
	retryUnsafe bool
	secrets     secrets
	// identity obtains the bearer token of each call (nil: none).
	identity *identity.Identity
	chunks   *sync.Pool // the adapter's (readLimited); nil: none
}

// Vars are the variables result expressions see.
func (h *handler) Vars() []string { return []string{"status", "headers", "body", "truncated"} }

// Traits: a call evaluates the block's expressions; its response body is
// capped; it acts as the caller when it presents the caller's own
// identity (token exchange or passthrough) rather than the config's or
// mcpd's.
func (h *handler) Traits() adapter.Traits {
	return adapter.Traits{
		ReadsEval:      true,
		ActsAsCaller:   h.identity != nil && h.identity.Config().NeedsCaller(),
		MaxOutputBytes: h.maxBytes,
	}
}

// CompileTool decodes and checks a tool's http block.
func (a *Adapter) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	d := &decoder{adapter.NewDecoder(b.Scope)}
	content, ok := d.Content(b.Body, toolSchema)
	if !ok {
		return nil, d.Diags
	}
	attrs := content.Attributes
	h := &handler{
		tool:     b.Tool,
		method:   http.MethodGet,
		maxBytes: defaultMaxResponseBytes,
		timeout:  defaultTimeout,
		retry:    noRetry,
		chunks:   a.chunks,
	}
	var sec secrets

	// backend
	var be *liveBackend
	if attr := attrs["backend"]; attr != nil {
		be, _ = adapter.LookupBackend[*liveBackend](d.Decoder, b, attr, "http_backend", `http_backend %q { base_url = "https://..." }`)
	}
	var idCfg *identity.Config
	if be != nil {
		idCfg = be.cfg.identity
		h.client = be.client
		h.who = be.cfg.String()
		h.origin = be.cfg.origin
		h.baseHeaders = be.cfg.headers
		h.baseQuery = be.cfg.query
		h.timeout = be.cfg.timeout
		h.retry = be.cfg.retry
		sec.vals = append(sec.vals, be.cfg.secrets.vals...)
	} else {
		h.client = a.sharedClient()
		h.who = fmt.Sprintf("tool %q's url", b.Tool)
	}

	// method
	if attr := attrs["method"]; attr != nil {
		if m, ok := d.String(attr, "method"); ok {
			m = strings.ToUpper(strings.TrimSpace(m))
			if !allowedMethods[m] {
				d.Errorf(attr.Expr.Range(), "Invalid method", "method must be one of %s; got %q.", methodList(), m)
			} else {
				h.method = m
			}
		}
	}

	// path / url
	pathAttr, urlAttr := attrs["path"], attrs["url"]
	hasBackend := attrs["backend"] != nil
	switch {
	case pathAttr != nil && urlAttr != nil:
		d.Errorf(urlAttr.Range, "Conflicting path and url", "Set either path (relative to the backend's base_url) or url (a full URL, without backend), not both.")
	case urlAttr != nil && hasBackend:
		d.Errorf(urlAttr.Range, "url with backend", "url is a full URL and cannot be combined with backend; use path, which is relative to the backend's base_url.")
	case pathAttr != nil && !hasBackend:
		d.Errorf(pathAttr.Range, "path without backend", "path is relative to an http_backend's base_url; set backend, or use url for a full URL.")
	case urlAttr == nil && !hasBackend:
		d.Errorf(b.Range, "Missing backend or url", `The http block needs backend = "<http_backend name>" (with an optional path), or url = "https://...".`)
	case pathAttr != nil:
		if t, ok := compileTemplate(d, pathAttr); ok && checkLiteralPath(d, pathAttr, t.skeleton()) {
			h.path = t
		}
	case urlAttr != nil:
		if t, ok := compileTemplate(d, urlAttr); ok {
			if o, pt, ok := splitURLTemplate(d, urlAttr, t); ok && checkLiteralPath(d, urlAttr, pt.skeleton()) {
				h.origin, h.path = o, pt
			}
		}
	}

	// query, headers, form, body
	h.query = d.compileMultiMap(attrs["query"], "query", &sec)
	h.headers = d.compileMultiMap(attrs["headers"], "headers", &sec)
	h.form = d.compileMultiMap(attrs["form"], "form", &sec)
	if attr := attrs["body"]; attr != nil {
		h.body = d.compileBody(attr, &sec)
	}
	if attrs["body"] != nil && attrs["form"] != nil {
		d.Errorf(attrs["form"].Range, "Conflicting body and form", "Set either body (sent as JSON) or form (sent as application/x-www-form-urlencoded), not both.")
	}
	for _, name := range []string{"body", "form"} {
		if attr := attrs[name]; attr != nil && (h.method == http.MethodGet || h.method == http.MethodHead || h.method == http.MethodOptions) {
			d.Errorf(attr.Range, "Request body not allowed", "A %s request has no body; use query = { ... }, or a method such as POST.", h.method)
		}
	}

	// expect_status, max_response_bytes, timeout, retry, retry_unsafe
	if attr := attrs["expect_status"]; attr != nil {
		h.expect = d.decodeExpectStatus(attr)
	}
	if attr := attrs["max_response_bytes"]; attr != nil {
		if n, ok := d.Int(attr, "max_response_bytes", 1, maxMaxResponseBytes); ok {
			h.maxBytes = n
		}
	}
	if attr := attrs["timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "timeout", minTimeout, maxTimeout); ok {
			h.timeout = dur
		}
	}
	if rb := d.SingleBlock(content.Blocks, "retry"); rb != nil {
		if p, ok := d.decodeRetry(rb); ok {
			h.retry = p
		}
	}
	if attr := attrs["retry_unsafe"]; attr != nil {
		if v, ok := d.Bool(attr, "retry_unsafe"); ok {
			h.retryUnsafe = v
		}
	}

	// identity: the tool's replaces the backend's.
	if ib := d.SingleBlock(content.Blocks, "identity"); ib != nil {
		var vals []string
		idCfg, vals = identity.Decode(d.Decoder, ib, fmt.Sprintf("tool %q", b.Tool))
		sec.addAll(vals)
	}
	if idCfg != nil {
		if attr := attrs["headers"]; attr != nil {
			if keys, _, ok := staticKeys(attr.Expr); ok {
				identity.CheckHeaders(d.Decoder, attr, keys, idCfg)
			} else if h.headers != nil && h.headers.static != nil {
				names := make([]string, 0, len(h.headers.static))
				for k := range h.headers.static {
					names = append(names, k)
				}
				identity.CheckHeaders(d.Decoder, attr, names, idCfg)
			}
		}
		h.identity = identity.New(idCfg, a.tokens)
	}

	if d.Diags.HasErrors() {
		return nil, d.Diags
	}
	h.secrets = sec.finish()
	return h, d.Diags
}

func methodList() string {
	ms := make([]string, 0, len(allowedMethods))
	for m := range allowedMethods {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	return strings.Join(ms, ", ")
}

// compileMultiMap checks a query, headers or form attribute and, when it
// does not depend on the call, evaluates it now.
func (d *decoder) compileMultiMap(attr *hcl.Attribute, what string, sec *secrets) *multiMap {
	if attr == nil {
		return nil
	}
	if diags := d.Scope.Check(attr.Expr); diags.HasErrors() {
		d.Diags = append(d.Diags, diags...)
		return nil
	}
	collectSecrets(d, attr.Expr, sec)
	m := &multiMap{what: what, expr: attr.Expr}
	if adapter.IsStatic(attr.Expr) {
		v, ok := d.staticMultiMap(attr, what)
		if !ok {
			return nil
		}
		if what == "headers" {
			v = d.checkHeaders(attr, v)
			collectHeaderSecrets(v, sec)
		}
		m.static = v
		return m
	}
	if !d.checkStaticNames(attr, what) {
		return nil
	}
	return m
}

// checkStaticNames requires the names of a headers or query map whose
// values depend on the call to be fixed in the config: { name = value }
// with literal names (or env()/file()). A name taken from an argument would
// let a call replace what the backend sets, such as its Authorization
// header or api_key parameter, and would hide from the reader which
// headers a tool sends. Form field names are not merged with anything the
// backend sets and may come from arguments.
func (d *decoder) checkStaticNames(attr *hcl.Attribute, what string) bool {
	if what != "headers" && what != "query" {
		return true
	}
	keys, ranges, ok := staticKeys(attr.Expr)
	if !ok {
		d.Errorf(attr.Expr.Range(), "Invalid "+what, "%s must be written as { name = value, ... } with fixed names when its values use the call's arguments; the names cannot come from arguments.", what)
		return false
	}
	good := true
	for i, k := range keys {
		if k == "" {
			d.Errorf(ranges[i], "Invalid "+what, "%s: a name must be fixed in the config, not computed from the call's arguments (write it literally, e.g. X-Request-Id = args.id).", what)
			good = false
			continue
		}
		if what == "headers" {
			if msg := checkHeaderName(k); msg != "" {
				d.Errorf(ranges[i], "Invalid header", "headers: %s.", msg)
				good = false
			}
		}
	}
	return good
}

func (d *decoder) compileBody(attr *hcl.Attribute, sec *secrets) *jsonBody {
	if diags := d.Scope.Check(attr.Expr); diags.HasErrors() {
		d.Diags = append(d.Diags, diags...)
		return nil
	}
	collectSecrets(d, attr.Expr, sec)
	b := &jsonBody{expr: attr.Expr}
	if adapter.IsStatic(attr.Expr) {
		v, ok := d.Value(attr, "body")
		if !ok {
			return nil
		}
		data, err := encodeJSON(v)
		if err != nil {
			d.Errorf(attr.Expr.Range(), "Invalid body", "body cannot be encoded as JSON: %s.", err)
			return nil
		}
		b.static, b.isNull = data, data == nil
	}
	return b
}

func (d *decoder) decodeExpectStatus(attr *hcl.Attribute) []int {
	v, ok := d.Value(attr, "expect_status")
	if !ok {
		return nil
	}
	const hint = "expect_status must be a non-empty list of HTTP status codes (100-599), such as [200, 201]."
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) || v.LengthInt() == 0 {
		d.Errorf(attr.Expr.Range(), "Invalid expect_status", "%s", hint)
		return nil
	}
	var out []int
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		n, isNum := adapter.WholeNumber(ev)
		if !isNum || n < 100 || n > 599 {
			d.Errorf(attr.Expr.Range(), "Invalid expect_status", "%s Got %s.", hint, describeValue(ev))
			return nil
		}
		out = append(out, int(n))
	}
	sort.Ints(out)
	return out
}
