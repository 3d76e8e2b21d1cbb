package mcpadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/outbound"
)

// Supervision: how a dead upstream is brought back.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
	// stableAfter is how long a connection must have lived for the next
	// failure to start again from minBackoff.
	stableAfter = 30 * time.Second
	// stopGrace is how long a stdio upstream has to exit after its stdin
	// is closed before its process group is killed.
	stopGrace = 2 * time.Second
)

// upstream is the live side of one mcp_server block: a supervisor that
// keeps one client session to the server, and what is known of it. It is
// shared by every snapshot whose config declares the same settings.
type upstream struct {
	cfg    *serverConfig
	log    *slog.Logger
	client *mcp.Client

	ctx    context.Context // ended by Close
	cancel context.CancelFunc
	start  sync.Once
	done   chan struct{} // closed when the supervisor has stopped

	mu       sync.Mutex
	cs       *mcp.ClientSession // nil while not connected
	lastErr  error              // why the latest connection failed or ended
	changed  chan struct{}      // closed (and replaced) when cs or lastErr changes
	restarts int                // connections lost and made again
	state    string             // "idle", "connecting", "up", "down", "closed"
	attempt  time.Time          // when the latest connection attempt began
	// unauthorized: the latest connection was refused with HTTP 401.
	unauthorized bool

	// The latest listings (expose.go), and who to tell when they change.
	listing  listing
	listed   bool       // a listing succeeded at least once
	relists  relistings // one listing at a time, one more pending (expose.go)
	watchers map[int]func()
	nextW    int

	calls atomic.Int64
	relay *relays     // the calls in flight, and what the upstream sends that is theirs (relay.go)
	holds holds       // calls held for their clients' answers (held.go)
	pool  sessionPool // sessions of calls whose client can be asked (pool.go)
	// auth is the identity the requests carry (identity.go); nil: the
	// block's headers only.
	auth    upstreamAuth
	callers callerSessions // each caller's session, for a per-caller identity (callers.go)
	// sessionHTTP carries the pool's and the callers' sessions, each
	// with a client of its own (dialSession).
	sessionHTTPOnce sync.Once
	sessionHTTP     http.RoundTripper
	failures        atomic.Int64
	output          *outputLog // its stderr and stray stdout lines, bounded (output.go)

	fast fastPath      // calls mcpd sends itself (fastcall.go)
	subs subscriptions // resource subscriptions of mcpd's clients (forward.go)
	user *userAuth     // the per-user connect flow, also u.auth (userauth.go); nil without it
	gate *admitter     // what it sends, checked; what is left out, counted (admit.go, drop.go)
}

// Open builds the live upstream. It does not connect: the first call (or
// listing, or, once served, the first Watch of a block with start = "load"
// or expose) does, in the background.
func (c *serverConfig) Open() (adapter.Backend, error) {
	ctx, cancel := context.WithCancel(context.Background())
	u := &upstream{
		cfg:      c,
		log:      slog.Default().With("upstream", c.name),
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		state:    "idle",
		watchers: map[int]func(){},
	}
	u.holds = holds{name: c.name, answerTimeout: c.answerTimeout}
	u.gate = &admitter{name: c.name, log: u.log}
	u.relay = newRelays(c.name, u.log, u.redact, u.gate.checkForm)
	u.pool = sessionPool{maxIdle: c.maxIdle, idleTimeout: c.idleTimeout, dial: u.dialPooled, log: u.log, redact: u.redact}
	if c.identity != nil {
		u.auth = identityAuth{identity.New(c.identity, c.tokens)}
	}
	if c.user != nil {
		if err := u.openUserAuth(c.connect); err != nil { // userauth.go
			cancel()
			return nil, err
		}
	}
	u.callers = callerSessions{dial: u.dialCaller, idleTimeout: c.idleTimeout, max: maxCallerSessions}
	u.output = newOutputLog(u.log, u.redact)
	u.client = mcp.NewClient(&mcp.Implementation{Name: "mcpd", Version: buildinfo.Read("", "").Version}, &mcp.ClientOptions{
		ProgressNotificationHandler: u.relay.onProgress,
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { u.relist(listTools) },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { u.relist(listPrompts) },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { u.relist(listResources) },
		LoggingMessageHandler:       u.relay.onLog,
		ResourceUpdatedHandler:      u.onResourceUpdated,
		// Elicitation, sampling and roots are relayed to the client of
		// the call (relay.go); the SDK declares elicitation (form) and
		// sampling for their handlers, roots from RootsV2.
		ElicitationHandler:   u.relay.onElicit,
		CreateMessageHandler: u.relay.onSample,
		Capabilities:         &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
		// A 2026-07-28 upstream's input_required rounds are answered by
		// callTool, through the same relay: the SDK's own loop would
		// answer roots/list from the client's fixed list.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	u.client.AddReceivingMiddleware(u.relay.relayRoots, u.relay.relayElicit)
	// start = "load" is honoured by Watch, not here: every build opens
	// its backends, a check-only one too (validate, list, the editor's
	// diagnostics), and only a served config is watched.
	return u, nil
}

func (u *upstream) String() string { return u.cfg.String() }

// ensureStarted starts the supervisor once.
func (u *upstream) ensureStarted() {
	u.start.Do(func() {
		u.mu.Lock()
		if u.state == "closed" {
			u.mu.Unlock()
			close(u.done)
			return
		}
		u.state = "connecting"
		u.attempt = time.Now()
		u.mu.Unlock()
		go u.supervise()
	})
}

// supervise keeps one session to the upstream until Close: connect, serve
// until the connection ends (the program died, the HTTP session broke),
// then connect again after a backoff that doubles up to maxBackoff.
func (u *upstream) supervise() {
	defer close(u.done)
	backoff := minBackoff
	for {
		began := time.Now()
		u.mu.Lock()
		u.attempt = began
		u.mu.Unlock()
		cs, stop, err := u.connect()
		u.mu.Lock()
		u.unauthorized = errors.Is(err, errUnauthorized)
		u.mu.Unlock()
		if err == nil {
			// The level first: a call that starts once the session is
			// set may log at once, and the upstream drops records until
			// a level is set.
			u.setUpstreamLogLevel(u.ctx, cs)
			u.setSession(cs, nil)
			u.log.Info("upstream connected", "transport", u.cfg.transport(), "protocol", protocolOf(cs))
			u.relist(listAll)
			go u.resubscribe()
			err = cs.Wait()
			u.setSession(nil, connectionEnded(err))
			stop()
			if u.ctx.Err() != nil {
				return
			}
			if time.Since(began) > stableAfter {
				backoff = minBackoff
			}
			u.log.Warn("upstream connection ended; reconnecting", "after", backoff, "err", u.redact(fmt.Sprint(connectionEnded(err))))
		} else {
			if u.ctx.Err() != nil {
				u.setSession(nil, errClosed)
				return
			}
			u.setSession(nil, err)
			u.log.Warn("upstream connection failed; retrying", "after", backoff, "err", u.redact(err.Error()))
		}
		select {
		case <-u.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

var errClosed = errors.New("the upstream was stopped (config reloaded or mcpd shutting down)")

func connectionEnded(err error) error {
	if err == nil || errors.Is(err, io.EOF) {
		return errors.New("the upstream closed the connection")
	}
	return fmt.Errorf("the connection to the upstream ended: %w", err)
}

func protocolOf(cs *mcp.ClientSession) string {
	if r := cs.InitializeResult(); r != nil {
		return r.ProtocolVersion
	}
	return ""
}

// setSession records the session (nil: none) and why there is none, and
// wakes the calls waiting for it.
func (u *upstream) setSession(cs *mcp.ClientSession, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if cs != nil && u.cs == nil && u.lastErr != nil && u.state == "down" {
		u.restarts++
	}
	wasUp := u.state == "up"
	defer func() {
		// A block that hides its tools while the upstream is down changes
		// what it contributes with the state.
		if e := u.cfg.expose; e != nil && e.hideWhenDown && wasUp != (u.state == "up") {
			go u.notify()
		}
	}()
	u.cs, u.lastErr = cs, err
	switch {
	case u.state == "closed":
	case cs != nil:
		u.state = "up"
	default:
		u.state = "down"
	}
	close(u.changed)
	u.changed = make(chan struct{})
}

// connect makes one session: it starts the program of a stdio upstream,
// or opens the HTTP transport, and runs the handshake within
// connect_timeout. stop ends what connect started.
func (u *upstream) connect() (cs *mcp.ClientSession, stop func(), err error) {
	ctx, cancel := context.WithTimeout(withHTTPAnswer(u.ctx), u.cfg.connectTimeout)
	defer cancel()
	var t mcp.Transport
	stop = func() {}
	if u.cfg.url != "" {
		t = u.streamable(u.httpClient(u.newHeaderTransport(), u.supervisorAuth()))
	} else {
		u.log.Info("starting upstream", "command", filepath.Base(u.cfg.command[0]))
		notice := time.AfterFunc(slowStart, u.stillStarting)
		defer notice.Stop()
		p, err := startProcess(u.cfg, u.output.stderrWriter())
		if err != nil {
			return nil, nil, err
		}
		// Messages nested deeper than the SDK decodes are mended first
		// (deep.go): the SDK's decoder, which tells messages from stray
		// lines, refuses them whole. Then lines that are not messages are
		// skipped before the progress scanner counts what the SDK will
		// read (progress.go).
		mended := &deepLines{r: p.stdout, report: u.gate.droppedDeep, max: maxUpstreamMessage}
		stdout := &progressScanner{r: newMessageLines(mended, maxUpstreamMessage, u.output.strayLine), pending: &u.relay.pending}
		t, stop = &mcp.IOTransport{Reader: stdout, Writer: p.stdin, MaxLineLength: maxUpstreamMessage}, p.stop
	}
	cs, err = u.client.Connect(ctx, t, u.sessionOptions())
	if err != nil {
		stop()
		if ctx.Err() != nil && u.ctx.Err() == nil {
			return nil, nil, fmt.Errorf("the handshake (%s) did not complete within connect_timeout %s", u.handshake(), u.cfg.connectTimeout)
		}
		failed := fmt.Errorf("the handshake (%s) failed: %s", u.handshake(), u.transportFailure(ctx, err))
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
func (u *upstream) supervisorAuth() *sessionAuth {
	switch {
	case u.auth == nil:
		return nil
	case u.auth.perCaller():
		return &sessionAuth{owner: supervisorSession}
	}
	return &sessionAuth{auth: u.auth}
}

// slowStart is how long a stdio upstream's start may take before mcpd
// says it is still starting.
const slowStart = 3 * time.Second

// stillStarting says that a stdio upstream has not answered its handshake
// yet, and why it may take a while: a package runner's first start
// downloads the server.
func (u *upstream) stillStarting() {
	if u.cfg.runner != "" {
		u.log.Info("upstream still starting", "after", slowStart, "connect_timeout", u.cfg.connectTimeout,
			"why", u.cfg.runner+" downloads the server on its first start, which can take 10-30 s; later starts take a second or two")
		return
	}
	u.log.Info("upstream still starting", "after", slowStart, "connect_timeout", u.cfg.connectTimeout)
}

// dialPooled connects a session for the pool (pool.go), bound to the
// identity of the call under ctx.
func (u *upstream) dialPooled(ctx context.Context) (*mcp.ClientSession, error) {
	return u.dialSession(ctx, callTokenOf(ctx), "connecting a session for the call")
}

// dialCaller connects the session of tok's owner (callers.go).
func (u *upstream) dialCaller(ctx context.Context, tok *callToken) (*mcp.ClientSession, error) {
	return u.dialSession(ctx, tok, "connecting the caller's session")
}

// dialSession connects a session bound to tok's identity (nil: the
// upstream has none), whose HTTP connections the pool's and the callers'
// sessions share.
func (u *upstream) dialSession(ctx context.Context, tok *callToken, what string) (*mcp.ClientSession, error) {
	u.sessionHTTPOnce.Do(func() {
		u.sessionHTTP = u.newHeaderTransport()
	})
	var sa *sessionAuth
	if u.auth != nil {
		sa = &sessionAuth{auth: u.auth}
		if u.auth.perCaller() {
			if tok == nil {
				return nil, fmt.Errorf("upstream %s: %s: %w", u.cfg.name, what, errNoCallToken)
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
	cctx, cancel := context.WithTimeout(withHTTPAnswer(u.ctx), u.cfg.connectTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	cs, err := u.client.Connect(cctx, u.streamable(u.httpClient(u.sessionHTTP, sa)), u.sessionOptions())
	if err != nil {
		u.failures.Add(1)
		why := "the handshake (" + u.handshake() + ") failed: " + u.transportFailure(cctx, err)
		if cctx.Err() != nil {
			why = fmt.Sprintf("the handshake (%s) did not complete within %s (connect_timeout %s)",
				u.handshake(), time.Since(began).Round(time.Millisecond), u.cfg.connectTimeout)
		}
		// Reported as it is, even when the call's timeout ended the wait
		// (adapter.UnavailableError).
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s: %s: %s", u.cfg.name, what, why)}
	}
	u.setUpstreamLogLevel(cctx, cs)
	return cs, nil
}

// streamable is a transport to the HTTP upstream through client.
func (u *upstream) streamable(client *http.Client) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint:     u.cfg.url,
		HTTPClient:   client,
		MaxRetries:   2,
		MaxEventSize: maxUpstreamMessage,
	}
}

func (u *upstream) sessionOptions() *mcp.ClientSessionOptions {
	if u.cfg.protocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: u.cfg.protocolVersion}
}

// session returns the connected session, starting the upstream if it was
// not and waiting for a connection up to connect_timeout (or ctx).
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.ensureStarted()
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs != nil { // the usual case: no timer to make
		return cs, nil
	}
	timer := time.NewTimer(u.cfg.connectTimeout)
	defer timer.Stop()
	for {
		u.mu.Lock()
		cs, err, changed, state := u.cs, u.lastErr, u.changed, u.state
		u.mu.Unlock()
		if cs != nil {
			return cs, nil
		}
		if state == "closed" {
			return nil, errClosed
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		case <-timer.C:
		}
		// The call's own timeout may have ended the wait: the error says
		// what failed, which the engine reports as it is
		// (adapter.UnavailableError), not as the tool's timeout.
		if err == nil {
			u.mu.Lock()
			attempt := u.attempt
			u.mu.Unlock()
			err = fmt.Errorf("the handshake (%s) has not completed after %s (connect_timeout %s)",
				u.handshake(), time.Since(attempt).Round(time.Millisecond), u.cfg.connectTimeout)
		}
		return nil, &adapter.UnavailableError{Err: fmt.Errorf("upstream %s is not connected: %s", u.cfg.name, u.redact(err.Error()))}
	}
}

// handshake names what connecting sends, for errors: the SDK tries
// server/discover first, then initialize, unless told an older version.
func (u *upstream) handshake() string {
	if v := u.cfg.protocolVersion; v != "" && v < "2026-07-28" {
		return "initialize"
	}
	return "server/discover, then initialize"
}

// broken closes a session whose transport failed, so that the supervisor
// connects again (an HTTP server restarted and forgot the session).
func (u *upstream) broken(cs *mcp.ClientSession) {
	if u.callers.broken(cs) {
		return
	}
	u.mu.Lock()
	current := u.cs == cs
	u.mu.Unlock()
	if current {
		_ = cs.Close()
	}
}

// Close stops the supervisor: the session is closed and a stdio upstream's
// process group killed. It waits a bounded time for that.
func (u *upstream) Close() error {
	u.mu.Lock()
	cs := u.cs
	u.state = "closed"
	u.mu.Unlock()
	// What the program writes while mcpd stops it (Node's EPIPE stack
	// trace for a write to the closed stdout) is no trouble to report.
	u.output.stopping.Store(true)
	u.cancel()
	u.holds.close()
	u.pool.close()
	u.callers.close()
	u.closeUserAuth()
	u.fast.close()
	u.ensureStarted() // never started: done is closed by it
	if cs != nil {
		_ = cs.Close()
	}
	select {
	case <-u.done:
	case <-time.After(stopGrace + 3*time.Second):
		u.log.Warn("upstream did not stop in time")
	}
	u.mu.Lock()
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
	return nil
}

// Ping checks that the upstream answers (adapter.Pinger, for /readyz).
// With a per-caller identity, mcpd has no identity of its own to ask
// with: the supervisor's session is pinged only when it was started (by
// expose, start = "load" or a subscription), and an upstream that refuses
// it for want of a caller's token (HTTP 401) has answered.
func (u *upstream) Ping(ctx context.Context) error {
	if u.perCaller() {
		u.mu.Lock()
		idle, unauthorized := u.state == "idle", u.unauthorized
		u.mu.Unlock()
		if idle || unauthorized {
			return nil
		}
	}
	cs, err := u.session(ctx)
	if err != nil {
		return err
	}
	if protocolOf(cs) >= "2026-07-28" {
		// ping is gone from the stateless era: a listing is the cheapest
		// request that proves the server answers.
		_, err = cs.ListTools(ctx, nil)
	} else {
		err = cs.Ping(ctx, nil)
	}
	if err != nil {
		return fmt.Errorf("upstream %s: %s", u.cfg.name, u.redact(err.Error()))
	}
	return nil
}

// ServiceStatus reports the upstream's state, for metrics
// (adapter.ServiceReporter).
func (u *upstream) ServiceStatus() adapter.ServiceStatus {
	idle, busy, connects := u.pool.state()
	u.mu.Lock()
	defer u.mu.Unlock()
	st := adapter.ServiceStatus{Name: u.cfg.name, Transport: u.cfg.transport(), State: u.state, Restarts: u.restarts,
		Calls: u.calls.Load(), Failures: u.failures.Load(), Tools: len(u.listing.tools), Dropped: u.gate.drops.snapshot(),
		IdleSessions: idle, BusySessions: busy, SessionConnects: connects,
		UnattributedRequests: u.relay.unattributed.requests.Load(), UnattributedRecords: u.relay.unattributed.records.Load(),
		UnattributedProgress: u.relay.unattributed.progress.Load()}
	if u.output != nil {
		st.StderrDropped, st.StrayLines = u.output.stderrDropped.Load(), u.output.strayLines.Load()
	}
	if st.State == "idle" && u.perCaller() && u.callers.count() > 0 {
		// With a per-caller identity mcpd's own session may never start:
		// the callers' sessions say the upstream is up.
		st.State = "up"
	}
	return st
}

// redact replaces the block's secrets (header values, env values) in s.
func (u *upstream) redact(s string) string {
	for _, sec := range u.cfg.secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// httpTransport is the upstream's connection pool: one per upstream, with
// room for many idle connections, since concurrent calls each hold one
// (net/http's default keeps 2 per host, and a burst of calls would open
// and close connections on every call).
func (u *upstream) httpTransport() http.RoundTripper {
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
func (u *upstream) httpClient(rt http.RoundTripper, sa *sessionAuth) *http.Client {
	origin, _ := url.Parse(u.cfg.url) // checked at load
	if sa != nil {
		rt = &authTransport{session: sa, origin: origin, next: rt}
	}
	return outbound.Client(fmt.Sprintf("upstream %q", u.cfg.name), rt)
}

// newHeaderTransport is a connection pool to the HTTP upstream whose
// requests carry the block's headers.
func (u *upstream) newHeaderTransport() http.RoundTripper {
	origin, _ := url.Parse(u.cfg.url) // checked at load
	return &headerTransport{headers: u.cfg.headers, origin: origin, base: u.httpTransport(), max: maxUpstreamMessage, pending: &u.relay.pending, deep: u.gate.droppedDeep}
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

// process is a stdio upstream's running program.
type process struct {
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stop   func()
}
