package httpadapter

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/adapters/internal/netmsg"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/lifetime"
	"github.com/mcpd/mcpd/engine/outbound"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// response is what one attempt received, its body already read (at most
// maxBytes of it) and the connection released.
type response struct {
	status     int
	statusLine string // "404 Not Found"
	header     http.Header
	body       []byte
	truncated  bool
	lent       bool // body is in a buffer of the call's lease (readLimited)
}

// errKind classifies a failed attempt, for retries and messages.
type errKind int

const (
	kindConnection errKind = iota // no response: dial, reset, EOF
	kindTimeout                   // the attempt's timeout passed
	kindCanceled                  // the call's context ended
	kindRedirect                  // a redirect was refused
	kindTLS                       // certificate or handshake failure
)

type attemptError struct {
	kind errKind
	msg  string
}

// Call sends the request, retrying as configured, and turns the response
// into an Output. Every error names the method and the URL without its
// query string; none contains a header value.
func (h *handler) Call(ctx context.Context, req *adapter.Request) (*adapter.Output, error) {
	sec := h.secrets
	fail := func(format string, args ...any) (*adapter.Output, error) {
		return nil, errors.New(sec.redact(fmt.Sprintf(format, args...)))
	}

	p, err := h.path.build(req.Eval)
	if err != nil {
		return fail("%s request not sent: %v", h.method, err)
	}
	query, err := h.buildQuery(req)
	if err != nil {
		return fail("%s request not sent: %v", h.method, err)
	}
	u, err := h.origin.buildURL(p, query)
	if err != nil {
		return fail("%s request not sent: %v", h.method, err)
	}
	display := displayURL(u)
	hdr, callSecrets, err := h.buildHeaders(req)
	if err != nil {
		return fail("%s %s: request not sent: %v", h.method, display, err)
	}
	if len(callSecrets.vals) > 0 {
		sec = sec.merge(callSecrets)
	}
	body, err := h.body.eval(req.Eval)
	if err != nil {
		return fail("%s %s: request not sent: %v", h.method, display, err)
	}
	form, err := h.form.eval(req.Eval)
	if err != nil {
		return fail("%s %s: request not sent: %v", h.method, display, err)
	}

	var g *identity.Grant
	if h.identity != nil {
		if g, err = h.authorize(ctx, hdr, &sec); err != nil {
			return fail("%s %s: request not sent: %v", h.method, display, err)
		}
	}

	target := u.String()
	res, aerr, n, err := h.send(ctx, target, hdr, body, form, req.Buffers)
	if err != nil {
		return fail("%s %s: %v", h.method, display, err)
	}
	if g != nil && g.Cached && aerr == nil && res.status == http.StatusUnauthorized {
		// The backend refused a token from the cache: the AS may have
		// revoked it, or the backend's clock runs ahead. One new token,
		// one more try; a fresh token refused is the backend's answer.
		h.identity.Drop(g)
		if g, err = h.authorize(ctx, hdr, &sec); err != nil {
			return fail("%s %s: the backend refused the cached token (401), and a new one could not be had: %v", h.method, display, err)
		}
		var more int
		res, aerr, more, err = h.send(ctx, target, hdr, body, form, req.Buffers)
		n += more
		if err != nil {
			return fail("%s %s: %v", h.method, display, err)
		}
	}
	status := 0
	if res != nil {
		status = res.status
	}
	annotate(ctx, u, sec, status, n)
	after := ""
	if n > 1 {
		after = fmt.Sprintf(" (after %d attempts)", n)
	}
	if aerr != nil {
		return fail("%s %s: %s%s", h.method, display, aerr.msg, after)
	}
	if !h.expected(res.status) {
		msg := fmt.Sprintf("%s %s returned %s, expected %s%s", h.method, display, res.statusLine, h.expectedText(), after)
		if ex := h.excerpt(res, sec); ex != "" {
			msg += ": " + ex
		}
		return fail("%s", msg)
	}
	return h.output(res, sec, display, req.Buffers)
}

// send makes the request's attempts, retrying as configured. err is set
// only when the call's context ended while waiting to retry.
func (h *handler) send(ctx context.Context, target string, hdr http.Header, body []byte, form url.Values, bufs *resultbuf.Lease) (*response, *attemptError, int, error) {
	attempts := 1
	if h.retry.attempts > 1 && (idempotentMethods[h.method] || h.retryUnsafe) {
		attempts = h.retry.attempts
	}
	for n := 1; ; n++ {
		res, aerr := h.attempt(ctx, target, hdr, body, form, bufs)
		if n >= attempts || !h.retryable(res, aerr) {
			return res, aerr, n, nil
		}
		wait := h.retry.delay(n, res)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil, n, fmt.Errorf("%s while waiting to retry (after %d attempts)", netmsg.Canceled(ctx), n)
		}
	}
}

// authorize sets the call's Authorization header from the tool's identity,
// adds the tokens involved to the call's secrets and tells the engine
// which identity the call presents.
func (h *handler) authorize(ctx context.Context, hdr http.Header, sec *secrets) (*identity.Grant, error) {
	g, err := h.identity.Token(ctx)
	if err != nil {
		return nil, err
	}
	hdr.Set("Authorization", "Bearer "+g.Token)
	*sec = sec.with(g.Redactor)
	adapter.RecordDelegation(ctx, g.Delegation)
	return g, nil
}

func (h *handler) buildQuery(req *adapter.Request) (url.Values, error) {
	tool, err := h.query.eval(req.Eval)
	if err != nil {
		return nil, err
	}
	q := make(url.Values, len(h.baseQuery)+len(tool))
	for k, v := range h.baseQuery {
		q[k] = v
	}
	for k, v := range tool {
		q[k] = v // a tool's value replaces the backend's
	}
	return q, nil
}

// buildHeaders merges the backend's headers with the tool's (the tool's
// replace the backend's of the same name) and checks the tool's. It returns
// the values of sensitive headers computed for this call, to be redacted.
func (h *handler) buildHeaders(req *adapter.Request) (http.Header, secrets, error) {
	hdr := make(http.Header, len(h.baseHeaders)+4)
	for k, v := range h.baseHeaders {
		hdr[k] = v
	}
	if h.headers == nil {
		return hdr, secrets{}, nil
	}
	tool, err := h.headers.eval(req.Eval)
	if err != nil {
		return nil, secrets{}, err
	}
	var sec secrets
	for name, vals := range tool {
		if msg := checkHeaderName(name); msg != "" {
			return nil, secrets{}, fmt.Errorf("headers: %s", msg)
		}
		for _, v := range vals {
			if msg := checkHeaderValue(name, v); msg != "" {
				return nil, secrets{}, fmt.Errorf("headers: %s", msg)
			}
		}
		ck := http.CanonicalHeaderKey(name)
		hdr[ck] = vals
		if h.headers.static == nil && sensitiveHeaders[ck] {
			for _, v := range vals {
				sec.add(v)
			}
		}
	}
	if len(sec.vals) == 0 {
		return hdr, sec, nil
	}
	return hdr, sec.finish(), nil
}

// attempt sends the request once, under the tool's timeout, and reads the
// response body (at most maxBytes+1 bytes of it), in a buffer of bufs when
// it is large.
func (h *handler) attempt(ctx context.Context, target string, hdr http.Header, body []byte, form url.Values, bufs *resultbuf.Lease) (*response, *attemptError) {
	actx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()

	r := h.client.R()
	r.SetContext(actx)
	r.SetDoNotParseResponse(true)
	for k, v := range hdr {
		r.Header[k] = append([]string(nil), v...)
	}
	if body != nil {
		if r.Header.Get("Content-Type") == "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.SetBody(body)
	}
	if form != nil {
		r.SetFormDataFromValues(form)
	}
	resp, err := r.Execute(h.method, target)
	if err != nil {
		if resp != nil && resp.RawResponse != nil && resp.RawResponse.Body != nil {
			resp.RawResponse.Body.Close()
		}
		return nil, h.classify(err, ctx, actx, "")
	}
	raw := resp.RawResponse
	defer raw.Body.Close()
	data, truncated, lent, err := readLimited(raw, h.maxBytes, h.chunks, bufs)
	if err != nil {
		return nil, h.classify(err, ctx, actx, "reading the response: ")
	}
	return &response{
		status:     raw.StatusCode,
		statusLine: netmsg.StatusLine(raw),
		header:     raw.Header,
		body:       data,
		truncated:  truncated,
		lent:       lent,
	}, nil
}

// readLimited reads at most limit+1 bytes of the body, decompressing gzip
// when the transport did not (because the request set Accept-Encoding
// itself), so that the limit applies to what is kept, never to a
// compressed stream that could expand without bound.
//
// The body is read into chunks taken from pool (nil: new ones) and copied
// once into a buffer of its exact size: a buffer grown as it reads (a
// bytes.Buffer's) makes about twice the body in garbage, and under
// mcpd's GC policy garbage stays until the heap is five times what was
// live (cmd/mcpd/gc.go), so large bodies read at once made the process
// several times their size (BenchmarkResultMemory in engine/serve).
//
// With a lease (bufs, when the call's answer gives its buffers back), a
// large body is read straight into one lent buffer instead, and lent
// reports it: its length when the response gives it, else the limit's,
// once the body has outgrown one chunk. A lent buffer makes no garbage,
// so its spare room costs nothing past the call.
func readLimited(r *http.Response, limit int64, pool *sync.Pool, bufs *resultbuf.Lease) (data []byte, truncated, lent bool, err error) {
	var src io.Reader = r.Body
	length := r.ContentLength // of what is read: -1 when unknown
	if !r.Uncompressed && strings.EqualFold(strings.TrimSpace(r.Header.Get("Content-Encoding")), "gzip") {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, false, false, nil
			}
			return nil, false, false, fmt.Errorf("the gzip-encoded body is not valid: %w", err)
		}
		defer gz.Close()
		src = gz
		length = -1
		r.Header.Del("Content-Encoding")
	}
	src = io.LimitReader(src, limit+1)
	if bufs != nil && limit < resultbuf.MaxPooled {
		return readLent(src, length, limit, pool, bufs)
	}
	data, truncated, err = readChunks(src, limit, pool)
	return data, truncated, false, err
}

// readChunks is readLimited without a lease.
func readChunks(src io.Reader, limit int64, pool *sync.Pool) ([]byte, bool, error) {
	var chunks []*[]byte
	defer func() {
		for _, c := range chunks {
			if pool != nil {
				pool.Put(c) // never shared: data is a copy
			}
		}
	}()
	n := 0
	for {
		var c *[]byte
		if pool != nil {
			c, _ = pool.Get().(*[]byte)
		}
		if c == nil {
			b := make([]byte, bodyChunk)
			c = &b
		}
		chunks = append(chunks, c)
		k, err := io.ReadFull(src, *c)
		n += k
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
	}
	if n == 0 {
		return nil, false, nil
	}
	data := make([]byte, n)
	off := 0
	for _, c := range chunks {
		off += copy(data[off:], *c)
	}
	if int64(n) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// readLent is readLimited with a lease: a body of known length is read
// into a buffer of that length (plus the byte that would tell it was
// longer), lent when large; one of unknown length is read into a chunk,
// and only when it fills it, into a lent buffer of the limit's size.
func readLent(src io.Reader, length, limit int64, pool *sync.Pool, bufs *resultbuf.Lease) ([]byte, bool, bool, error) {
	size := limit + 1
	var buf []byte
	if length >= 0 && length < limit {
		size = length + 1
	} else {
		var c *[]byte
		if pool != nil {
			c, _ = pool.Get().(*[]byte)
		}
		if c == nil {
			b := make([]byte, bodyChunk)
			c = &b
		}
		if pool != nil {
			defer pool.Put(c) // never shared: what is kept is copied
		}
		k, err := io.ReadFull(src, *c)
		switch {
		case k == 0 && (err == io.EOF || err == io.ErrUnexpectedEOF):
			return nil, false, false, nil
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			if int64(k) > limit {
				return append([]byte(nil), (*c)[:limit]...), true, false, nil
			}
			return append([]byte(nil), (*c)[:k]...), false, false, nil
		case err != nil:
			return nil, false, false, err
		}
		buf = append(bufs.Buffer(int(size)), (*c)[:k]...)
	}
	if buf == nil {
		buf = bufs.Buffer(int(size))
	}
	lent := bufs.Lent(buf)
	k, err := io.ReadFull(src, buf[len(buf):size])
	n := len(buf) + k
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, false, false, err
	}
	if n == 0 {
		return nil, false, false, nil
	}
	if int64(n) > limit {
		return buf[:limit], true, lent, nil
	}
	return buf[:n], false, lent, nil
}

// bodyChunk is the size of the chunks readLimited reads a body into.
const bodyChunk = 64 << 10

// classify turns a failed attempt into a message that says what failed
// without the URL (the caller adds method and URL) and without headers.
func (h *handler) classify(err error, parent, actx context.Context, prefix string) *attemptError {
	if rerr := (*outbound.RedirectError)(nil); errors.As(err, &rerr) {
		// Shown as the policy said it, not as net/http wraps it (with
		// the Location's query string), and named.
		named := *rerr
		named.Who = h.who
		return &attemptError{kindRedirect, prefix + named.Error()}
	}
	if parent.Err() != nil {
		return &attemptError{kindCanceled, prefix + netmsg.Canceled(parent)}
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return &attemptError{kindTimeout, prefix + fmt.Sprintf("timed out after %s", h.timeout)}
	}
	inner := netmsg.UnwrapURLError(err)
	// Name resolution first: a DNS timeout is a resolution failure, and
	// the resolver's own error names the resolver's address, which is the
	// host's business, not the model's.
	var dnsErr *net.DNSError
	if errors.As(inner, &dnsErr) {
		return &attemptError{kindConnection, prefix + netmsg.DNS(dnsErr)}
	}
	var ne net.Error
	if errors.As(inner, &ne) && ne.Timeout() {
		return &attemptError{kindTimeout, prefix + "timed out connecting"}
	}
	var (
		verr  *tls.CertificateVerificationError
		uaerr x509.UnknownAuthorityError
		herr  x509.HostnameError
		cierr x509.CertificateInvalidError
		rherr tls.RecordHeaderError
	)
	if errors.As(inner, &verr) || errors.As(inner, &uaerr) || errors.As(inner, &herr) || errors.As(inner, &cierr) || errors.As(inner, &rherr) {
		return &attemptError{kindTLS, prefix + "TLS failed: " + inner.Error()}
	}
	if msg := netmsg.Conn(inner); msg != "" {
		return &attemptError{kindConnection, prefix + msg}
	}
	return &attemptError{kindConnection, prefix + "request failed: " + inner.Error()}
}

func (h *handler) retryable(res *response, aerr *attemptError) bool {
	if aerr != nil {
		switch aerr.kind {
		case kindTimeout:
			return h.retry.onTimeout
		case kindConnection:
			return h.retry.onConnection
		}
		return false
	}
	return !h.expected(res.status) && h.retry.retriesStatus(res.status)
}

// delay is the wait before retry n+1: backoff doubled for each retry, capped
// at max_backoff, with jitter (between half and all of it). A Retry-After
// header on a 429 or 503 lengthens the wait, up to max_backoff.
func (p retryPolicy) delay(n int, res *response) time.Duration {
	d := p.backoff
	for i := 1; i < n && d < p.maxBackoff; i++ {
		d *= 2
	}
	if d > p.maxBackoff {
		d = p.maxBackoff
	}
	if d > 1 {
		d = d/2 + rand.N(d/2+1)
	}
	if res != nil && (res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable) {
		if ra, ok := retryAfter(res.header.Get("Retry-After")); ok {
			if ra > p.maxBackoff {
				ra = p.maxBackoff
			}
			if ra > d {
				d = ra
			}
		}
	}
	return d
}

// retryAfter reads a Retry-After header (delay-seconds or an HTTP date),
// bounded by lifetime.Of like every lifetime a peer sends: a number of
// seconds too large for an int (or a time.Duration) is the maximum, not an
// overflow. ok is false for none, zero or a date already past.
func retryAfter(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, _ := strconv.ParseFloat(v, 64)
		return lifetime.Of(secs, time.Second)
	}
	if t, err := http.ParseTime(v); err == nil {
		return lifetime.Until(time.Now(), float64(t.Unix()))
	}
	return 0, false
}

func (h *handler) expected(status int) bool {
	if h.expect == nil {
		return status >= 200 && status <= 299
	}
	i := sort.SearchInts(h.expect, status)
	return i < len(h.expect) && h.expect[i] == status
}

func (h *handler) expectedText() string {
	if h.expect == nil {
		return "a 2xx status"
	}
	s := make([]string, len(h.expect))
	for i, c := range h.expect {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, " or ")
}

// excerpt is at most excerptBytes of the body, for error messages.
func (h *handler) excerpt(res *response, sec secrets) string {
	if len(res.body) == 0 {
		return ""
	}
	mt := mediaType(res.header.Get("Content-Type"))
	if isMedia(mt) || !utf8.Valid(adapter.TrimPartialRune(res.body)) {
		return fmt.Sprintf("(%d bytes of %s)", len(res.body), orUnknown(mt))
	}
	body := sec.redactBytes(res.body)
	if isJSONType(mt) {
		var buf bytes.Buffer
		if json.Compact(&buf, body) == nil {
			body = buf.Bytes()
		}
	}
	text := strings.Join(strings.Fields(string(body)), " ")
	if len(text) > excerptBytes {
		cut := excerptBytes
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return text
}

// output turns a successful response into the tool's Output.
func (h *handler) output(res *response, sec secrets, display string, bufs *resultbuf.Lease) (*adapter.Output, error) {
	headers := make(map[string]string, len(res.header))
	for k, v := range res.header {
		if len(v) > 0 {
			headers[strings.ToLower(k)] = sec.redact(v[0])
		}
	}
	vars := map[string]any{
		"status":    res.status,
		"headers":   headers,
		"body":      nil,
		"truncated": res.truncated,
	}
	out := &adapter.Output{Vars: vars}
	mt := mediaType(res.header.Get("Content-Type"))
	body := res.body

	if len(body) == 0 {
		out.Text = res.statusLine
		return out, nil
	}
	if isMedia(mt) {
		if res.truncated {
			return nil, errors.New(sec.redact(fmt.Sprintf("%s %s: the %s response is larger than max_response_bytes (%d bytes); raise max_response_bytes to receive it",
				h.method, display, mt, h.maxBytes)))
		}
		out.Media = []adapter.Media{{MIMEType: mt, Data: body}}
		return out, nil
	}
	body = sec.redactBytes(body)
	if !res.truncated && (isJSONType(mt) || (sniffable(mt) && looksLikeJSON(body))) {
		var v any
		if err := json.Unmarshal(body, &v); err == nil {
			v = sec.redactValue(v)
			vars["body"] = v
			switch x := v.(type) {
			case map[string]any:
				out.Structured = x
			case []any:
				out.Structured = map[string]any{"items": x}
			default:
				out.Structured = map[string]any{"value": x}
			}
			// The text shares the buffers, which are not written again: a
			// copy would double what the call holds. The compact form is
			// never longer than the body, so buf does not grow.
			buf := bytes.NewBuffer(bufs.Buffer(len(body)))
			if json.Compact(buf, body) == nil {
				out.Text = textOf(buf.Bytes(), bufs.Lent(buf.Bytes()))
			} else {
				out.Text = textOf(body, res.lent)
			}
			return out, nil
		}
	}
	check := body
	if res.truncated {
		check = adapter.TrimPartialRune(body)
	}
	if !isTextType(mt) && !utf8.Valid(check) {
		size := fmt.Sprintf("%d bytes", len(body))
		if res.truncated {
			size = fmt.Sprintf("more than %d bytes", h.maxBytes)
		}
		out.Text = fmt.Sprintf("[binary response omitted: %s, %s]", orUnknown(mt), size)
		return out, nil
	}
	text := strings.ToValidUTF8(textOf(check, res.lent), "\uFFFD")
	vars["body"] = text
	if res.truncated {
		text += fmt.Sprintf("\n[truncated: response exceeded %d bytes]", h.maxBytes)
	}
	out.Text = text
	return out, nil
}

// textOf is b as a string without a copy, whatever its spare room when
// it is in a lent buffer (given back with the call's answer, so its room
// costs nothing past it); else bytesString.
func textOf(b []byte, lent bool) string {
	if lent && len(b) > 0 {
		return unsafe.String(&b[0], len(b))
	}
	return bytesString(b)
}

// bytesString is b as a string without a copy: b must never be written
// again.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if cap(b)-len(b) > len(b)/4+4096 {
		// A body of unknown length read into a buffer that doubled: the
		// string would keep all of its array alive.
		return string(b)
	}
	return unsafe.String(&b[0], len(b))
}

// mediaType is the lower-case media type of a Content-Type header, without
// parameters.
func mediaType(ct string) string {
	if ct == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

func isJSONType(mt string) bool {
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

func isMedia(mt string) bool {
	return strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "audio/")
}

// sniffable types are sniffed for JSON: no Content-Type, or text/plain.
func sniffable(mt string) bool { return mt == "" || mt == "text/plain" }

func looksLikeJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

func isTextType(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+xml"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+yaml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-www-form-urlencoded", "application/yaml", "application/x-yaml", "application/toml",
		"application/graphql", "application/sql", "application/x-ndjson", "application/csv":
		return true
	}
	return false
}

func orUnknown(mt string) string {
	if mt == "" {
		return "unknown type"
	}
	return mt
}
