package httpadapter

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
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

// Schemas, declared once: Content reports any attribute or block not
// listed here as an error ("Unsupported argument"), with its range, and
// ToolSchema/BackendSchema hand them to whoever reads them.
var (
	retrySchema = &adapter.Schema{
		Attributes: []hcl.AttributeSchema{
			{Name: "attempts"},
			{Name: "backoff"},
			{Name: "max_backoff"},
			{Name: "on"},
		},
	}
	tlsSchema = &adapter.Schema{
		Attributes: []hcl.AttributeSchema{
			{Name: "ca_file"},
			{Name: "cert_file"},
			{Name: "key_file"},
		},
	}
	backendSchema = &adapter.Schema{
		Attributes: []hcl.AttributeSchema{
			{Name: "base_url", Required: true},
			{Name: "headers"},
			{Name: "query"},
			{Name: "timeout"},
		},
		Blocks: []adapter.BlockSchema{{Type: "retry", Schema: retrySchema}, {Type: "tls", Schema: tlsSchema}, {Type: "identity", Schema: identity.Schema}},
	}
	toolSchema = &adapter.Schema{
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
		Blocks: []adapter.BlockSchema{{Type: "retry", Schema: retrySchema}, {Type: "identity", Schema: identity.Schema}},
	}
)

// ToolSchema is the http block's schema (adapter.Schemaer).
func (a *Adapter) ToolSchema() *adapter.Schema { return toolSchema }

// BackendSchema is the http_backend block's schema (adapter.BackendSchemaer).
func (a *Adapter) BackendSchema() *adapter.Schema { return backendSchema }

// decoder is the toolkit's Decoder, with the decoding of the blocks and
// values that only HTTP has.
type decoder struct{ *adapter.Decoder }

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
	content, ok := d.Content(b.Body, retrySchema)
	if !ok {
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
	ok = true
	if a := content.Attributes["attempts"]; a != nil {
		n, good := d.Int(a, "retry.attempts", 1, maxRetryAttempts)
		ok = ok && good
		p.attempts = int(n)
	}
	if a := content.Attributes["backoff"]; a != nil {
		dur, good := d.Duration(a, "retry.backoff", 0, time.Minute)
		ok = ok && good
		p.backoff = dur
	}
	if a := content.Attributes["max_backoff"]; a != nil {
		dur, good := d.Duration(a, "retry.max_backoff", 0, 10*time.Minute)
		ok = ok && good
		p.maxBackoff = dur
	}
	if ok && p.maxBackoff < p.backoff {
		rng := b.DefRange
		if a := content.Attributes["max_backoff"]; a != nil {
			rng = a.Expr.Range()
		}
		d.Errorf(rng, "Invalid retry.max_backoff", "retry.max_backoff (%s) must not be less than retry.backoff (%s).", p.maxBackoff, p.backoff)
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
	v, good := d.Value(a, "retry.on")
	if !good {
		return nil, false, false, false
	}
	const hint = `retry.on must be a list of HTTP status codes (500-599, 408 or 429) and the words "timeout" and "connection", such as [502, 503, "timeout"].`
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		d.Errorf(a.Expr.Range(), "Invalid retry.on", "%s", hint)
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
			n, isNum := adapter.WholeNumber(ev)
			if !isNum || !(n == 408 || n == 429 || (n >= 500 && n <= 599)) {
				d.Errorf(a.Expr.Range(), "Invalid retry.on", "%s Got %s.", hint, describeValue(ev))
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
