package httpadapter

import (
	"fmt"
	"math/big"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/hclbody"
)

// Limits and defaults shared by http_backend and http blocks.
const (
	defaultTimeout          = 30 * time.Second
	minTimeout              = time.Millisecond
	maxTimeout              = time.Hour
	defaultMaxResponseBytes = 1 << 20 // 1 MiB
	maxMaxResponseBytes     = 1 << 30 // 1 GiB
	maxRedirects            = 5
	excerptBytes            = 512

	defaultRetryAttempts   = 3
	maxRetryAttempts       = 10
	defaultRetryBackoff    = 250 * time.Millisecond
	defaultRetryMaxBackoff = 5 * time.Second
)

// Schemas. Body.Content reports any attribute or block not listed here as an
// error ("Unsupported argument"), with its range.
var (
	backendSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "base_url", Required: true},
			{Name: "headers"},
			{Name: "query"},
			{Name: "timeout"},
		},
		Blocks: []hcl.BlockHeaderSchema{{Type: "retry"}, {Type: "tls"}},
	}
	toolSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "backend"},
			{Name: "method"},
			{Name: "path"},
			{Name: "url"},
			{Name: "query"},
			{Name: "headers"},
			{Name: "body"},
			{Name: "form"},
			{Name: "expect_status"},
			{Name: "max_response_bytes"},
			{Name: "timeout"},
			{Name: "retry_unsafe"},
		},
		Blocks: []hcl.BlockHeaderSchema{{Type: "retry"}},
	}
	retrySchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "attempts"},
			{Name: "backoff"},
			{Name: "max_backoff"},
			{Name: "on"},
		},
	}
	tlsSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "ca_file"},
			{Name: "cert_file"},
			{Name: "key_file"},
		},
	}
)

// decoder accumulates diagnostics while decoding one block.
type decoder struct {
	scope *adapter.Scope
	diags hcl.Diagnostics
}

func (d *decoder) errorf(rng hcl.Range, summary, format string, args ...any) {
	r := rng
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  &r,
	})
}

// static evaluates a load-time-only attribute. ok is false when a
// diagnostic was recorded.
func (d *decoder) static(attr *hcl.Attribute, what string) (cty.Value, bool) {
	if diags := d.scope.CheckStatic(attr.Expr, what); diags.HasErrors() {
		d.diags = append(d.diags, diags...)
		return cty.NilVal, false
	}
	v, diags := attr.Expr.Value(d.scope.EvalContext())
	if diags.HasErrors() {
		d.diags = append(d.diags, diags...)
		return cty.NilVal, false
	}
	if !v.IsWhollyKnown() {
		d.errorf(attr.Expr.Range(), "Value must be known at load time", "%s must be known at load time.", what)
		return cty.NilVal, false
	}
	v, _ = v.UnmarkDeep()
	return v, true
}

func (d *decoder) staticString(attr *hcl.Attribute, what string) (string, bool) {
	v, ok := d.static(attr, what)
	if !ok {
		return "", false
	}
	if v.IsNull() {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be a string, not null.", what)
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be a string, got %s.", what, v.Type().FriendlyName())
		return "", false
	}
	return s.AsString(), true
}

func (d *decoder) staticBool(attr *hcl.Attribute, what string) (bool, bool) {
	v, ok := d.static(attr, what)
	if !ok {
		return false, false
	}
	if v.IsNull() || v.Type() != cty.Bool {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be true or false.", what)
		return false, false
	}
	return v.True(), true
}

// staticInt decodes a whole number in [lo, hi].
func (d *decoder) staticInt(attr *hcl.Attribute, what string, lo, hi int64) (int64, bool) {
	v, ok := d.static(attr, what)
	if !ok {
		return 0, false
	}
	n, ok := wholeNumber(v)
	if !ok {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be a whole number.", what)
		return 0, false
	}
	if n < lo || n > hi {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be between %d and %d, got %d.", what, lo, hi, n)
		return 0, false
	}
	return n, true
}

func wholeNumber(v cty.Value) (int64, bool) {
	if v.IsNull() || v.Type() != cty.Number {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	n, acc := bf.Int64()
	return n, acc == big.Exact
}

// staticDuration decodes a Go duration string ("10s", "1m30s", "250ms") in
// [lo, hi].
func (d *decoder) staticDuration(attr *hcl.Attribute, what string, lo, hi time.Duration) (time.Duration, bool) {
	v, ok := d.static(attr, what)
	if !ok {
		return 0, false
	}
	if v.IsNull() || v.Type() != cty.String {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, `%s must be a duration string such as "10s", "1m30s" or "250ms".`, what)
		return 0, false
	}
	dur, err := time.ParseDuration(v.AsString())
	if err != nil {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, `%s: %q is not a duration; use a value such as "10s", "1m30s" or "250ms".`, what, v.AsString())
		return 0, false
	}
	if dur < lo || dur > hi {
		d.errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be between %s and %s, got %s.", what, lo, hi, dur)
		return 0, false
	}
	return dur, true
}

// singleBlock returns the only block of type typ, reporting duplicates.
func (d *decoder) singleBlock(blocks hcl.Blocks, typ string) *hcl.Block {
	var found *hcl.Block
	for _, b := range blocks.OfType(typ) {
		if found != nil {
			d.errorf(b.DefRange, "Duplicate "+typ+" block", "Only one %s block is allowed here; the first is at %s.", typ, found.DefRange)
			continue
		}
		found = b
	}
	return found
}

// retryPolicy says when and how a failed attempt is tried again.
type retryPolicy struct {
	attempts     int // total attempts, including the first; 1 = no retry
	backoff      time.Duration
	maxBackoff   time.Duration
	statuses     []int // sorted
	onTimeout    bool
	onConnection bool
}

func (p retryPolicy) retriesStatus(code int) bool {
	i := sort.SearchInts(p.statuses, code)
	return i < len(p.statuses) && p.statuses[i] == code
}

var noRetry = retryPolicy{attempts: 1}

// decodeRetry decodes a retry block.
func (d *decoder) decodeRetry(b *hcl.Block) (retryPolicy, bool) {
	content, diags := hclbody.Content(b.Body, retrySchema)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return noRetry, false
	}
	p := retryPolicy{
		attempts:     defaultRetryAttempts,
		backoff:      defaultRetryBackoff,
		maxBackoff:   defaultRetryMaxBackoff,
		statuses:     []int{429, 502, 503, 504},
		onTimeout:    true,
		onConnection: true,
	}
	ok := true
	if a := content.Attributes["attempts"]; a != nil {
		n, good := d.staticInt(a, "retry.attempts", 1, maxRetryAttempts)
		ok = ok && good
		p.attempts = int(n)
	}
	if a := content.Attributes["backoff"]; a != nil {
		dur, good := d.staticDuration(a, "retry.backoff", 0, time.Minute)
		ok = ok && good
		p.backoff = dur
	}
	if a := content.Attributes["max_backoff"]; a != nil {
		dur, good := d.staticDuration(a, "retry.max_backoff", 0, 10*time.Minute)
		ok = ok && good
		p.maxBackoff = dur
	}
	if ok && p.maxBackoff < p.backoff {
		rng := b.DefRange
		if a := content.Attributes["max_backoff"]; a != nil {
			rng = a.Expr.Range()
		}
		d.errorf(rng, "Invalid retry.max_backoff", "retry.max_backoff (%s) must not be less than retry.backoff (%s).", p.maxBackoff, p.backoff)
		ok = false
	}
	if a := content.Attributes["on"]; a != nil {
		statuses, onTimeout, onConn, good := d.decodeRetryOn(a)
		ok = ok && good
		p.statuses, p.onTimeout, p.onConnection = statuses, onTimeout, onConn
	}
	return p, ok
}

func (d *decoder) decodeRetryOn(a *hcl.Attribute) (statuses []int, onTimeout, onConn, ok bool) {
	v, good := d.static(a, "retry.on")
	if !good {
		return nil, false, false, false
	}
	const hint = `retry.on must be a list of HTTP status codes (500-599, 408 or 429) and the words "timeout" and "connection", such as [502, 503, "timeout"].`
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		d.errorf(a.Expr.Range(), "Invalid retry.on", "%s", hint)
		return nil, false, false, false
	}
	ok = true
	seen := map[int]bool{}
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		switch {
		case !ev.IsNull() && ev.Type() == cty.String && ev.AsString() == "timeout":
			onTimeout = true
		case !ev.IsNull() && ev.Type() == cty.String && ev.AsString() == "connection":
			onConn = true
		default:
			n, isNum := wholeNumber(ev)
			if !isNum || !(n == 408 || n == 429 || (n >= 500 && n <= 599)) {
				d.errorf(a.Expr.Range(), "Invalid retry.on", "%s Got %s.", hint, describeValue(ev))
				ok = false
				continue
			}
			if !seen[int(n)] {
				seen[int(n)] = true
				statuses = append(statuses, int(n))
			}
		}
	}
	sort.Ints(statuses)
	return statuses, onTimeout, onConn, ok
}

func describeValue(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	switch v.Type() {
	case cty.String:
		return fmt.Sprintf("%q", v.AsString())
	case cty.Number:
		return v.AsBigFloat().Text('g', -1)
	}
	return v.Type().FriendlyName()
}

// Header names that may not be set from configuration: Host would change
// the virtual host the request reaches; the others are managed by the HTTP
// client and would corrupt the request framing.
var forbiddenHeaders = map[string]bool{
	"Host":              true,
	"Content-Length":    true,
	"Transfer-Encoding": true,
	"Connection":        true,
	"Upgrade":           true,
	"Te":                true,
	"Trailer":           true,
	"Keep-Alive":        true,
}

// Headers whose literal values are treated as secrets even when they were
// not produced by env() or file().
var sensitiveHeaders = map[string]bool{
	"Authorization":       true,
	"Proxy-Authorization": true,
	"Cookie":              true,
	"X-Api-Key":           true,
	"Api-Key":             true,
	"X-Auth-Token":        true,
	"X-Access-Token":      true,
	"Private-Token":       true,
}

// checkHeaderName returns a message when name cannot be sent as a header.
func checkHeaderName(name string) string {
	if name == "" {
		return "a header name must not be empty"
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return fmt.Sprintf("%q is not a valid header name", name)
		}
	}
	if forbiddenHeaders[http.CanonicalHeaderKey(name)] {
		return fmt.Sprintf("the %s header cannot be set; it is managed by the HTTP client", http.CanonicalHeaderKey(name))
	}
	return ""
}

func isTokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkHeaderValue returns a message when value cannot be sent safely. The
// message names the header, never the value.
func checkHeaderValue(name, value string) string {
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '\r' || c == '\n' || c == 0 || (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Sprintf("the value of header %s contains a control character", http.CanonicalHeaderKey(name))
		}
	}
	return ""
}

// staticKeys returns the keys of an object constructor whose keys are known
// at load time, with their ranges, so that names can be checked before any
// call ("" for a key computed per call). ok is false when expr is not an
// object constructor.
func staticKeys(expr hcl.Expression) (keys []string, ranges []hcl.Range, ok bool) {
	oc, isObj := expr.(*hclsyntax.ObjectConsExpr)
	if !isObj {
		return nil, nil, false
	}
	for _, item := range oc.Items {
		if !adapter.IsStatic(item.KeyExpr) {
			keys = append(keys, "")
		} else if kv, diags := item.KeyExpr.Value(nil); diags.HasErrors() || kv.IsNull() || kv.Type() != cty.String {
			keys = append(keys, "")
		} else {
			keys = append(keys, kv.AsString())
		}
		ranges = append(ranges, item.KeyExpr.Range())
	}
	return keys, ranges, true
}

// diagError turns call-time diagnostics into one error without source
// snippets.
func diagError(diags hcl.Diagnostics) error {
	var msgs []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		m := d.Summary
		if d.Detail != "" {
			m += ": " + d.Detail
		}
		msgs = append(msgs, m)
	}
	sort.Strings(msgs)
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
