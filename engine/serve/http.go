package serve

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// AllowedHosts are the Host header values (without port) accepted besides
	// the loopback names; "*" accepts any, for a server behind a proxy that
	// checks Host itself.
	AllowedHosts []string
	// AllowedOrigins are the Origin values (scheme://host[:port]) accepted
	// besides loopback origins; "*" accepts any.
	AllowedOrigins []string
	// JSONResponse answers plain requests with application/json instead of
	// an SSE stream. Cheaper, but progress notifications of a legacy session
	// then travel on its GET stream.
	JSONResponse bool
	// SessionTimeout closes legacy sessions idle for this long.
	SessionTimeout time.Duration
}

// protocol2026 is the first protocol version served statelessly.
const protocol2026 = "2026-07-28"

// HTTPHandler returns the /mcp endpoint, serving both protocol eras. The SDK
// accepts 2026-07-28 requests only from a stateless handler, and a stateless
// handler gives legacy clients no GET stream (so no list_changed), so two SDK
// handlers share one server and each request is routed to its era's: a
// modern request announces itself with the Mcp-Method header or its
// MCP-Protocol-Version; everything else (initialize, Mcp-Session-Id, GET,
// DELETE) is legacy.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	getServer := func(*http.Request) *mcp.Server { return s.mcp }
	// guard checks Host for every request, with --allowed-host; the SDK's
	// own check (loopback connections only) would refuse the allowed hosts
	// a local reverse proxy forwards, so it is turned off.
	legacy := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		JSONResponse:               opts.JSONResponse,
		SessionTimeout:             opts.SessionTimeout,
		Logger:                     s.opts.Logger,
		DisableLocalhostProtection: true,
	})
	modern := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               opts.JSONResponse,
		Logger:                     s.opts.Logger,
		DisableLocalhostProtection: true,
		// In 2026-07-28 the POST is the whole request: a client that closes
		// the response stream has cancelled the call, and its handler's
		// context must end (the SDK does not tie them by default).
		PropagateRequestCancellation: true,
	})
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w = deferResponseFlush(w)
		}
		if isModern(r) {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	})
	return guard(opts, s.countHTTP(route))
}

// HostGuard applies the Host and Origin checks of the /mcp endpoint to
// another handler, e.g. health and metrics served on the same listener.
func HostGuard(opts HTTPOptions, next http.Handler) http.Handler { return guard(opts, next) }

func isModern(r *http.Request) bool {
	if r.Header.Get("Mcp-Method") != "" {
		return true
	}
	v := r.Header.Get("MCP-Protocol-Version")
	return v != "" && v >= protocol2026 && r.Header.Get("Mcp-Session-Id") == ""
}

// guard rejects requests whose Host or Origin is not one this server answers
// to, with 403: a web page must not reach a local server through DNS
// rebinding or a cross-origin request. The SDK checks Host only for loopback
// connections and Origin not at all.
func guard(opts HTTPOptions, next http.Handler) http.Handler {
	hosts := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	anyHost := false
	for _, h := range opts.AllowedHosts {
		if h == "*" {
			anyHost = true
		}
		hosts[strings.ToLower(h)] = true
	}
	origins := map[string]bool{}
	anyOrigin := false
	for _, o := range opts.AllowedOrigins {
		if o == "*" {
			anyOrigin = true
		}
		origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !anyHost && !hosts[hostOnly(r.Host)] {
			http.Error(w, "Forbidden: Host "+r.Host+" is not allowed (see --allowed-host)", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !anyOrigin && !originAllowed(o, hosts, origins) {
			http.Error(w, "Forbidden: Origin "+o+" is not allowed (see --allowed-origin)", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, hosts, origins map[string]bool) bool {
	lo := strings.ToLower(origin)
	if origins[lo] {
		return true
	}
	u, err := url.Parse(lo)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	// Loopback origins are allowed: a page served from this machine is no
	// more privileged than the user who started mcpd.
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1" || (hosts[h] && h != "*")
}

func hostOnly(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.ToLower(strings.Trim(h, "[]"))
}
