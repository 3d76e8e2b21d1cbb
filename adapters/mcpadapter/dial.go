package mcpadapter

import (
	"context"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/outbound"
)

// dialer makes the upstream's sessions: the supervisor's (connect: a stdio
// program started, or the HTTP transport opened), and the sessions of the
// pool and of the callers (dialSession), each bound to an identity; and
// the HTTP clients and transports they and the fast path go through.
type dialer struct {
	cfg    *serverConfig
	log    *slog.Logger
	ctx    context.Context // the upstream's, ended by Close
	client *mcp.Client     // set once, before the first dial
	// auth is the identity the requests carry (identity.go); nil: the
	// block's headers only.
	auth    upstreamAuth
	pending *pendingProgress // the relay's, counted as event streams are read (progress.go)
	gate    *admitter        // told what was left out of a message too deep (deep.go)
	output  *outputLog       // a stdio upstream's stderr and stray stdout lines (output.go)
	// failures counts the sessions that could not be made.
	failures *atomic.Int64
	// failure says why a request got no usable answer (failure.go);
	// setLogLevel asks a new session for every log record (logging.go).
	failure     func(ctx context.Context, err error) string
	setLogLevel func(ctx context.Context, cs *mcp.ClientSession)
	// sessionHTTP carries the pool's and the callers' sessions, each
	// with a client of its own (dialSession).
	sessionHTTPOnce sync.Once
	sessionHTTP     http.RoundTripper
}

// connect makes one session: it starts the program of a stdio upstream,
// or opens the HTTP transport, and runs the handshake within
// connect_timeout. stop ends what connect started.
func (d *dialer) connect() (cs *mcp.ClientSession, stop func(), err error) {
	ctx, cancel := context.WithTimeout(withHTTPAnswer(d.ctx), d.cfg.connectTimeout)
	defer cancel()
	var t mcp.Transport
	stop = func() {}
	if d.cfg.url != "" {
		t = d.streamable(d.httpClient(d.newHeaderTransport(), d.supervisorAuth()))
	} else {
		d.log.Info("starting upstream", "command", filepath.Base(d.cfg.command[0]))
		notice := time.AfterFunc(slowStart, d.stillStarting)
		defer notice.Stop()
		p, err := startProcess(d.cfg, d.output.stderrWriter())
		if err != nil {
			return nil, nil, err
		}
		// Messages nested deeper than the SDK decodes are mended first
		// (deep.go): the SDK's decoder, which tells messages from stray
		// lines, refuses them whole. Then lines that are not messages are
		// skipped before the progress scanner counts what the SDK will
		// read (progress.go).
		mended := &deepLines{r: p.stdout, report: d.gate.droppedDeep, max: maxUpstreamMessage}
		stdout := &progressScanner{r: newMessageLines(mended, maxUpstreamMessage, d.output.strayLine), pending: d.pending}
		t, stop = &mcp.IOTransport{Reader: stdout, Writer: p.stdin, MaxLineLength: maxUpstreamMessage}, p.stop
	}
	cs, err = d.client.Connect(ctx, t, d.sessionOptions())
	if err != nil {
		stop()
		if ctx.Err() != nil && d.ctx.Err() == nil {
			return nil, nil, fmt.Errorf("the handshake (%s) did not complete within connect_timeout %s", d.cfg.handshake(), d.cfg.connectTimeout)
		}
		failed := fmt.Errorf("the handshake (%s) failed: %s", d.cfg.handshake(), d.failure(ctx, err))
		if answerStatus(ctx) == http.StatusUnauthorized {
			failed = unauthorizedError{failed}
		}
		return nil, nil, failed
	}
	stopProcess := stop
	return cs, func() { _ = cs.Close(); stopProcess() }, nil
}

// supervisorAuth is the identity of the supervisor's session: mcpd's own
// (client_credentials), or none: with a per-caller identity, what mcpd
// does on its own (listing, watching, subscriptions) carries no caller's
// token.
func (d *dialer) supervisorAuth() *sessionAuth {
	switch {
	case d.auth == nil:
		return nil
	case d.auth.perCaller():
		return &sessionAuth{owner: supervisorSession}
	}
	return &sessionAuth{auth: d.auth}
}

// slowStart is how long a stdio upstream's start may take before mcpd
// says it is still starting.
const slowStart = 3 * time.Second

// stillStarting says that a stdio upstream has not answered its handshake
// yet, and why it may take a while: a package runner's first start
// downloads the server.
func (d *dialer) stillStarting() {
	if d.cfg.runner != "" {
		d.log.Info("upstream still starting", "after", slowStart, "connect_timeout", d.cfg.connectTimeout,
			"why", d.cfg.runner+" downloads the server on its first start, which can take 10-30 s; later starts take a second or two")
		return
	}
	d.log.Info("upstream still starting", "after", slowStart, "connect_timeout", d.cfg.connectTimeout)
}

// dialPooled connects a session for the pool (pool.go), bound to the
// identity of the call under ctx.
func (d *dialer) dialPooled(ctx context.Context) (*mcp.ClientSession, error) {
	return d.dialSession(ctx, callTokenOf(ctx), "connecting a session for the call")
}

// dialCaller connects the session of tok's owner (callers.go).
func (d *dialer) dialCaller(ctx context.Context, tok *callToken) (*mcp.ClientSession, error) {
	return d.dialSession(ctx, tok, "connecting the caller's session")
}

// dialSession connects a session bound to tok's identity (nil: the
// upstream has none), whose HTTP connections the pool's and the callers'
// sessions share.
func (d *dialer) dialSession(ctx context.Context, tok *callToken, what string) (*mcp.ClientSession, error) {
	d.sessionHTTPOnce.Do(func() {
		d.sessionHTTP = d.newHeaderTransport()
	})
	var sa *sessionAuth
	if d.auth != nil {
		sa = &sessionAuth{auth: d.auth}
		if d.auth.perCaller() {
			if tok == nil {
				return nil, fmt.Errorf("upstream %s: %s: %w", d.cfg.name, what, errNoCallToken)
			}
			sa.owner = tok.owner
			sa.latest.Store(tok)
		}
	}
	// The session outlives the request, and must not inherit what the
	// SDK's server put in the request's context (its protocol version
	// would go to the upstream): it is made under the upstream's context,
	// ended by the request's.
	began := time.Now()
	cctx, cancel := context.WithTimeout(withHTTPAnswer(d.ctx), d.cfg.connectTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	cs, err := d.client.Connect(cctx, d.streamable(d.httpClient(d.sessionHTTP, sa)), d.sessionOptions())
	if err != nil {
		d.failures.Add(1)
		why := "the handshake (" + d.cfg.handshake() + ") failed: " + d.failure(cctx, err)
		if cctx.Err() != nil {
			why = fmt.Sprintf("the handshake (%s) did not complete within %s (connect_timeout %s)",
				d.cfg.handshake(), time.Since(began).Round(time.Millisecond), d.cfg.connectTimeout)
		}
		// Reported as it is, even when the call's timeout ended the wait
		// (adapter.UnavailableError).
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s: %s: %s", d.cfg.name, what, why)}
	}
	d.setLogLevel(cctx, cs)
	return cs, nil
}

// streamable is a transport to the HTTP upstream through client.
func (d *dialer) streamable(client *http.Client) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint:     d.cfg.url,
		HTTPClient:   client,
		MaxRetries:   2,
		MaxEventSize: maxUpstreamMessage,
	}
}

func (d *dialer) sessionOptions() *mcp.ClientSessionOptions {
	if d.cfg.protocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: d.cfg.protocolVersion}
}

// httpTransport is the upstream's connection pool: one per upstream, with
// room for many idle connections, since concurrent calls each hold one
// (net/http's default keeps 2 per host, and a burst of calls would open
// and close connections on every call).
func httpTransport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return t
}

// httpClient is a client of the HTTP upstream through rt, for one
// session whose requests carry sa's identity (nil: none; identity.go). A
// redirect is refused, not followed (the headers and the token are the
// upstream's secrets, and what another address answers must not be
// served as the upstream's tools). The error names the upstream and the
// Location, so that the operator can set url to it.
func (d *dialer) httpClient(rt http.RoundTripper, sa *sessionAuth) *http.Client {
	origin, _ := url.Parse(d.cfg.url) // checked at load
	if sa != nil {
		rt = &authTransport{session: sa, origin: origin, next: rt}
	}
	return outbound.Client(fmt.Sprintf("upstream %q", d.cfg.name), rt)
}

// newHeaderTransport is a connection pool to the HTTP upstream whose
// requests carry the block's headers.
func (d *dialer) newHeaderTransport() http.RoundTripper {
	origin, _ := url.Parse(d.cfg.url) // checked at load
	return &headerTransport{headers: d.cfg.headers, origin: origin, base: httpTransport(), max: maxUpstreamMessage, pending: d.pending, deep: d.gate.droppedDeep}
}

// headerTransport adds the block's headers to every request to the
// upstream's origin; a request to any other origin gets none (should a
// redirect ever be followed, the secrets stay with the upstream).
type headerTransport struct {
	headers map[string]string
	origin  *url.URL // of the block's url; nil: no request gets headers
	base    http.RoundTripper
	max     int64 // the most one answer's message may hold (limitBody)
	// pending counts the progress notifications and log records of the
	// event streams read (progress.go).
	pending *pendingProgress
	// deep is told what was left out of a message too deep for the SDK
	// (deep.go); nil: messages are passed on as they are.
	deep deepReport
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h := handoverOf(r.Context()); h != nil { // the SDK's requests of a fast-path call (handover.go)
		return h.roundTrip(r, t)
	}
	if len(t.headers) > 0 && t.origin != nil && outbound.SameOrigin(r.URL, t.origin) {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	res, err := t.base.RoundTrip(r)
	limitBody(res, t.max)
	recordHTTPAnswer(r, res) // why a request failed (failure.go)
	if err == nil && t.deep != nil && res.Body != nil {
		switch ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); ct {
		case "text/event-stream":
			res.Body = &deepLines{r: res.Body, report: t.deep, sse: true, max: maxUpstreamMessage}
		case "application/json":
			res.Body = &deepBody{r: res.Body, report: t.deep}
		}
	}
	if err == nil && t.pending != nil && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		res.Body = &progressScanner{r: res.Body, pending: t.pending, sse: true}
	}
	return res, err
}

// handshake names what connecting sends, for errors: the SDK tries
// server/discover first, then initialize, unless told an older version.
func (c *serverConfig) handshake() string {
	if v := c.protocolVersion; v != "" && v < "2026-07-28" {
		return "initialize"
	}
	return "server/discover, then initialize"
}

// redact replaces the block's secrets (header values, env values) in s.
func (c *serverConfig) redact(s string) string {
	for _, sec := range c.secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}
