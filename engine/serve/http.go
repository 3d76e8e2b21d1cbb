package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/principal"
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
	// then travel on its GET stream, and those of a 2026-07-28 call, which
	// has no other stream, are dropped.
	JSONResponse bool
	// SessionTimeout closes legacy sessions idle for this long.
	SessionTimeout time.Duration
	// MaxSessions caps the legacy sessions open at once: opening one more
	// closes the one idle the longest. 0: no cap.
	MaxSessions int
	// MaxInflight caps the POST requests served at once; more are refused
	// with 503 and Retry-After. 0: no cap.
	MaxInflight int
	// MaxBody caps a request body, refused with 413 past it. 0: the SDK's
	// default (4 MiB).
	MaxBody int64
	// MaxInflightBytes caps the body bytes of the POST requests served at
	// once; a request that would pass it is refused with 503 and
	// Retry-After, unless it is the only one. 0: no cap.
	MaxInflightBytes int64
	// ReadTimeout bounds reading a request body, from the end of its
	// headers. 0: no bound.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response: a client that reads
	// nothing for this long is cut off. Streams and long calls that keep
	// writing are not cut. 0: no bound.
	WriteTimeout time.Duration
	// NoFastPath turns off the stateless fast path (fastpath.go): every
	// 2026-07-28 request is then served by the SDK's handler, as before.
	// The answers are the same either way; this is for comparing the two
	// and for ruling the fast path out.
	NoFastPath bool
	// NoLegacyFastPath turns off the fast path of 2025-11-25 sessions
	// (fastlegacy.go): every request of a session is then served by the
	// SDK's handler, which also keeps the idle timeout. The answers are the
	// same either way.
	NoLegacyFastPath bool
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
//
// Besides /mcp, the handler serves each toolset on /mcp/<toolset>, with the
// same guard, limits and streams, and sessions of its own (see toolset.go).
// Any path other than /mcp/<name> is served as /mcp.
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	f := &front{s: s, opts: opts, guard: newHostGuard(opts), limits: newRequestLimits(opts), eras: map[string]*eraHandlers{}}
	if opts.MaxSessions > 0 {
		f.sessions = newSessionCap(opts.MaxSessions, s.allSessions)
	}
	f.root = f.erasOf("")
	return f
}

// eraHandlers are the SDK's two handlers of one endpoint, and the fast
// path in front of the modern one (fastpath.go).
type eraHandlers struct {
	legacy, modern http.Handler
	fast           *fastPath // nil: HTTPOptions.NoFastPath
}

// erasOf returns the SDK handlers of the endpoint of toolset ("" for
// /mcp), making them on first use.
func (f *front) erasOf(toolset string) *eraHandlers {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h := f.eras[toolset]; h != nil {
		return h
	}
	srv := f.s.endpoint(toolset).srv
	getServer := func(*http.Request) *mcp.Server { return srv }
	opts := f.opts
	// guard checks Host for every request, with --allowed-host; the SDK's
	// own check (loopback connections only) would refuse the allowed hosts
	// a local reverse proxy forwards, so it is turned off.
	h := &eraHandlers{
		modern: mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:                  true,
			JSONResponse:               opts.JSONResponse,
			Logger:                     f.s.sdkLogger,
			DisableLocalhostProtection: true,
			MaxRequestBodyBytes:        opts.MaxBody,
			// In 2026-07-28 the POST is the whole request: a client that closes
			// the response stream has cancelled the call, and its handler's
			// context must end (the SDK does not tie them by default).
			PropagateRequestCancellation: true,
		}),
	}
	if !opts.NoFastPath {
		h.fast = newFastPath(f.s, opts, f.s.endpoint(toolset))
		h.fast.served = f.onFast
	}
	legacy := &mcp.StreamableHTTPOptions{
		JSONResponse:               opts.JSONResponse,
		SessionTimeout:             opts.SessionTimeout,
		Logger:                     f.s.sdkLogger,
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        opts.MaxBody,
	}
	// 2025-11-25's tasks (tasks_legacy_wire.go) in front of the SDK.
	legacySDK := func() http.Handler {
		return &legacyTaskFront{s: f.s, next: mcp.NewStreamableHTTPHandler(getServer, legacy), maxBody: opts.MaxBody}
	}
	if opts.NoLegacyFastPath {
		h.legacy = legacySDK()
	} else {
		// fastlegacy.go keeps the sessions' idle timeout, for the POSTs
		// it serves too: the SDK's would close a session busy there.
		legacy.SessionTimeout = 0
		lf := newLegacyFast(f.s, opts, f.s.endpoint(toolset), legacySDK())
		lf.fp.served = f.onFast
		h.legacy = lf
	}
	f.eras[toolset] = h
	return h
}

// toolsetPath returns the toolset a request path names: "" for /mcp (or
// any path that is not under /mcp/), the name for /mcp/<name>; ok is false
// for a path under /mcp/ that names no toolset (empty, or deeper).
func toolsetPath(path string) (name string, ok bool) {
	rest, under := strings.CutPrefix(path, "/mcp/")
	if !under {
		return "", true
	}
	if rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	return rest, true
}

// admitToolset checks that the toolset a request's path names exists and
// that its caller holds the toolset's scopes; it answers the request when
// not: 404 for a toolset not declared, 403 with an insufficient_scope
// challenge for missing scopes (as the auth block's own scopes are).
func (f *front) admitToolset(w http.ResponseWriter, r *http.Request, toolset string) bool {
	snap := f.s.current.Load()
	ts, all, ok := resolveToolset(snap, toolset)
	if !ok {
		http.Error(w, fmt.Sprintf("Not Found: no toolset is named %q", toolset), http.StatusNotFound)
		return false
	}
	if all {
		return true
	}
	caller := principal.FromTokenInfo(sdkauth.TokenInfoFromContext(r.Context()))
	if !ts.Allows(caller) {
		snap.Auth.InsufficientScope(w, ts.Scopes, fmt.Sprintf("insufficient scope: toolset %q needs the scopes %q", ts.Name, strings.Join(ts.Scopes, " ")))
		return false
	}
	return true
}

// front is the /mcp endpoint in front of the SDK's two handlers: the Host
// and Origin guard, the drain's count, the per-request limits, the deadlines
// of the response writer, and the routing of the two eras, in that order.
// They are one handler, and the writer's deadlines one allocation, because
// they run for every request: each layer of handlers and writers would add
// a frame to a connection's stack, under which the SDK decodes and writes,
// and an allocation, on every request.
type front struct {
	s        *Server
	opts     HTTPOptions
	guard    hostGuard
	limits   *requestLimits
	root     *eraHandlers // /mcp's
	sessions *sessionCap  // nil: no cap

	mu     sync.Mutex
	eras   map[string]*eraHandlers // by toolset, made on first use
	onFast func(method string)     // tests: see fastPath.served
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.guard.allow(w, r) {
		return
	}
	if toolset, ok := cardPath(r.URL.Path); ok { // servercard.go
		f.serveCard(w, r, toolset)
		return
	}
	toolset, ok := toolsetPath(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if !f.admitToolset(w, r, toolset) {
		return
	}
	eras := f.root
	if toolset != "" {
		eras = f.erasOf(toolset)
	}
	post := r.Method == http.MethodPost
	// A stream by its headers only when the SDK holds the body to them:
	// it checks Mcp-Method against the body for 2026-07-28 requests alone,
	// so a tools/call that merely says "subscriptions/listen" without that
	// version would otherwise pass as a stream, around the in-flight
	// limits (TestListenHeaderIsNoExemption).
	listen := post && r.Header.Get("Mcp-Method") == methodListen && r.Header.Get("MCP-Protocol-Version") >= protocol2026
	// countHTTP: each POST (a request, or a batch of them) is busy while it
	// is served, so that a drain waits for its answer to be written; each
	// GET (a 2025 session's notification stream) is an open stream. A 2026
	// subscriptions/listen POST is a stream, counted by observe. Streams
	// are bounded per caller and in total (streams.go).
	switch {
	case r.Method == http.MethodGet:
		// A GET without a session is no stream: the SDK refuses it.
		if r.Header.Get("Mcp-Session-Id") != "" {
			release := f.s.admitStream(w, r, StreamGet)
			if release == nil {
				return
			}
			defer release()
		}
		defer f.s.opts.Metrics.StreamOpened("get")()
	case listen:
		release := f.s.admitStream(w, r, StreamListen)
		if release == nil {
			return
		}
		defer release()
	case post:
		f.s.drain.add(1)
		defer f.s.drain.add(-1)
	}
	l := f.limits
	// Every POST except a 2026 subscriptions/listen stream, which stays
	// open for as long as the client listens (like a legacy GET stream,
	// which does not count either), counts against the in-flight limits.
	if post && !listen {
		if l.slots != nil {
			select {
			case l.slots <- struct{}{}:
				if isModern(r) {
					defer func() { <-l.slots }()
				} else {
					// A call it carries may give the slot back while it
					// waits for its user (park.go).
					f.s.posts.start(r.Header, l.slots)
					defer f.s.posts.end(r.Header)
				}
			default:
				l.busy(w, strconv.Itoa(l.opts.MaxInflight)+" requests are in flight (--max-inflight)")
				return
			}
		}
		if n, ok := l.reserveBody(w, r); !ok {
			return
		} else if n > 0 {
			defer l.bodies.Add(-n)
		}
		// budget.go: the output budget of the calls it carries is given
		// back once it has been answered.
		if f.s.holdOutput(r.Header) {
			defer f.s.endHold(r.Header)
		}
	}
	rw := l.wrap(w, r, post)
	if rw.deadline > 0 {
		// net/http writes what is buffered once the handler returns:
		// that write gets a deadline too.
		defer rw.extend()
	}
	w = f.s.deadlineStream(rw, r) // notify.go: a client must read its event stream
	if isModern(r) {
		if !taskHeaders(w, r, f.opts.MaxBody) {
			return
		}
		if eras.fast != nil && eras.fast.serve(w, r) {
			return
		}
		eras.modern.ServeHTTP(w, r)
		return
	}
	if f.sessions != nil {
		f.sessions.serve(w, r, eras.legacy)
		return
	}
	eras.legacy.ServeHTTP(w, r)
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
// connections and Origin not at all. It also refuses, with 400, a request
// that repeats an MCP header with different values (see conflictingHeader).
func guard(opts HTTPOptions, next http.Handler) http.Handler {
	g := newHostGuard(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.allow(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// hostGuard is guard's check, for handlers that run it inline.
type hostGuard struct {
	hosts, origins     map[string]bool
	anyHost, anyOrigin bool
}

func newHostGuard(opts HTTPOptions) hostGuard {
	g := hostGuard{hosts: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}, origins: map[string]bool{}}
	for _, h := range opts.AllowedHosts {
		if h == "*" {
			g.anyHost = true
			continue
		}
		g.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	for _, o := range opts.AllowedOrigins {
		if o == "*" {
			g.anyOrigin = true
		}
		g.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	return g
}

// allow reports whether r may be served, and answers it when not.
func (g *hostGuard) allow(w http.ResponseWriter, r *http.Request) bool {
	if !g.anyHost && !g.hostAllowed(r.Host) {
		http.Error(w, "Forbidden: Host "+strconv.Quote(r.Host)+" is not allowed (see --allowed-host)", http.StatusForbidden)
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && !g.anyOrigin && !originAllowed(o, g.hosts, g.origins) {
		http.Error(w, "Forbidden: Origin "+strconv.Quote(o)+" is not allowed (see --allowed-origin)", http.StatusForbidden)
		return false
	}
	if name, ok := conflictingHeader(r.Header); ok {
		writeJSONRPCError(w, http.StatusBadRequest, mcp.CodeHeaderMismatch,
			fmt.Sprintf("the %s header is given more than once with different values; send it once", name))
		return false
	}
	return true
}

func (g *hostGuard) hostAllowed(hostport string) bool {
	host, ok := parseHost(hostport)
	return ok && g.hosts[host]
}

// conflictingHeader finds an MCP header given twice with different values.
// The SDK and mcpd read the first; a gateway in front that authorises on the
// last (or on all) would approve one tool while another runs. Identical
// repeats are harmless and accepted.
func conflictingHeader(h http.Header) (string, bool) {
	for name, vals := range h {
		if len(vals) < 2 || !mcpHeader(name) {
			continue
		}
		for _, v := range vals[1:] {
			if v != vals[0] {
				return name, true
			}
		}
	}
	return "", false
}

// mcpHeader reports whether a canonical header name is one that selects
// what a request does: the session, the protocol version, the method, its
// target, and the arguments mirrored in Mcp-Param-* headers; or Origin,
// which guard checks.
func mcpHeader(name string) bool {
	switch name {
	case "Mcp-Name", "Mcp-Method", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-Id", "Origin":
		return true
	}
	return strings.HasPrefix(name, "Mcp-Param-")
}

// writeJSONRPCError answers an HTTP request with a JSON-RPC error and no id
// (the body has not been read), in the shape of the SDK's header errors.
func writeJSONRPCError(w http.ResponseWriter, status int, code int64, msg string) {
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// originAllowed reports whether an Origin header (scheme://host[:port], no
// path) names an allowed origin, a loopback origin or an allowed host.
func originAllowed(origin string, hosts, origins map[string]bool) bool {
	lo := strings.ToLower(origin)
	if origins[lo] {
		return true
	}
	scheme, hostport, ok := strings.Cut(lo, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return false
	}
	h, ok := parseHost(hostport)
	if !ok {
		return false
	}
	// Loopback origins are allowed: a page served from this machine is no
	// more privileged than the user who started mcpd.
	return h == "localhost" || h == "127.0.0.1" || h == "::1" || hosts[h]
}

// parseHost parses a Host header value (or an origin's authority) strictly:
// a host name or IPv4 address, or an IPv6 address in brackets, then an
// optional port of 1 to 65535. Anything else (userinfo, a path, a port that
// is not a number such as "127.0.0.1:80.evil.example", an empty host) is
// refused: a lenient parser would read a host that some other component
// reads differently. The host is returned in lower case, IPv6 addresses in
// their canonical form without brackets.
func parseHost(hostport string) (string, bool) {
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", false
		}
		host, port = hostport[1:end], hostport[end+1:]
		if port != "" {
			if port[0] != ':' {
				return "", false
			}
			port = port[1:]
			if !validPort(port) {
				return "", false
			}
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
		return a.String(), true
	}
	if i := strings.IndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
		if !validPort(port) {
			return "", false
		}
	}
	if host == "" || len(host) > 253 {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", false
		}
	}
	return strings.ToLower(host), true
}

// validPort reports whether p is a decimal port number from 1 to 65535.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}
