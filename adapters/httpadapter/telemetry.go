package httpadapter

import (
	"context"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/mcpd/mcpd/engine/adapter"
)

// The attributes of OpenTelemetry's semantic conventions for HTTP client
// spans (https://opentelemetry.io/docs/specs/semconv/http/http-spans/) that
// a call's span carries: the method and the server from the config
// (adapter.Remote), the URL and the response's status from each call
// (adapter.Annotate).

var _ adapter.Remote = (*handler)(nil)

// RemoteAttributes are http.request.method, server.address and
// server.port.
func (h *handler) RemoteAttributes() []adapter.Attribute {
	attrs := []adapter.Attribute{{Key: "http.request.method", Value: h.method}}
	host, port := h.origin.host, ""
	if hp, p, err := net.SplitHostPort(host); err == nil {
		host, port = hp, p
	}
	if host == "" {
		return attrs
	}
	attrs = append(attrs, adapter.Attribute{Key: "server.address", Value: strings.Trim(host, "[]")})
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[h.origin.scheme]
	}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, adapter.Attribute{Key: "server.port", Value: n})
	}
	return attrs
}

// annotate adds url.full, http.response.status_code (0: no response) and,
// after retries, http.request.resend_count to the call's span. url.full has
// no userinfo and the value of every query parameter is replaced by
// REDACTED, as the conventions advise: a backend's query often carries an
// API key. The secrets sec knows are redacted from the path too.
func annotate(ctx context.Context, u *url.URL, sec secrets, status, attempts int) {
	if !adapter.Annotating(ctx) {
		return
	}
	full := sec.redact(displayURL(u))
	if q := u.Query(); len(q) > 0 {
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = url.QueryEscape(k) + "=REDACTED"
		}
		full += "?" + strings.Join(parts, "&")
	}
	attrs := []adapter.Attribute{{Key: "url.full", Value: full}}
	if status > 0 {
		attrs = append(attrs, adapter.Attribute{Key: "http.response.status_code", Value: status})
	}
	if attempts > 1 {
		attrs = append(attrs, adapter.Attribute{Key: "http.request.resend_count", Value: attempts - 1})
	}
	adapter.Annotate(ctx, attrs...)
}
