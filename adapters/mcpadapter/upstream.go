package mcpadapter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/buildinfo"
)

// upstream is the live side of one mcp_server block, shared by every
// snapshot whose config declares the same settings. It coordinates the
// roles, each of its own file: the supervisor's session (connection.go),
// how sessions are made (dial.go), what the upstream listed (catalog.go),
// the pool of call sessions (pool.go) and the callers' (callers.go), the
// relay of what the upstream sends during calls (relay.go), the calls
// held for their clients' answers (held.go), the subscriptions
// (forward.go), the gate (admit.go) and the fast path (fastcall.go).
type upstream struct {
	cfg *serverConfig
	log *slog.Logger

	ctx    context.Context // ended by Close
	cancel context.CancelFunc

	conn    *connection // the supervisor's session (connection.go)
	dial    *dialer     // makes sessions (dial.go)
	catalog *catalog    // the latest listings, and who to tell when they change (catalog.go)

	calls atomic.Int64
	relay *relays     // the calls in flight, and what the upstream sends that is theirs (relay.go)
	holds holds       // calls held for their clients' answers (held.go)
	pool  sessionPool // sessions of calls whose client can be asked (pool.go)
	// auth is the identity the requests carry (identity.go); nil: the
	// block's headers only.
	auth     upstreamAuth
	callers  callerSessions // each caller's session, for a per-caller identity (callers.go)
	failures atomic.Int64
	output   *outputLog // its stderr and stray stdout lines, bounded (output.go)

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
		cfg:    c,
		log:    slog.Default().With("upstream", c.name),
		ctx:    ctx,
		cancel: cancel,
	}
	u.holds = holds{name: c.name, answerTimeout: c.answerTimeout}
	u.gate = &admitter{name: c.name, log: u.log}
	u.relay = newRelays(c.name, u.log, u.redact, u.gate.checkForm)
	u.output = newOutputLog(u.log, u.redact)
	u.dial = &dialer{cfg: c, log: u.log, ctx: ctx, pending: &u.relay.pending, gate: u.gate, output: u.output,
		failures: &u.failures, failure: u.transportFailure, setLogLevel: u.setUpstreamLogLevel}
	u.pool = sessionPool{maxIdle: c.maxIdle, idleTimeout: c.idleTimeout, dial: u.dial.dialPooled, log: u.log, redact: u.redact}
	if c.identity != nil {
		u.auth = identityAuth{identity.New(c.identity, c.tokens)}
	}
	if c.user != nil {
		if err := u.openUserAuth(c.connect); err != nil { // userauth.go
			cancel()
			return nil, err
		}
	}
	u.dial.auth = u.auth
	u.callers = callerSessions{dial: u.dial.dialCaller, idleTimeout: c.idleTimeout, max: maxCallerSessions}
	u.conn = newConnection(c, u.log, ctx)
	u.conn.dial = u.dial.connect
	// The level first: a call that starts once the session is set may
	// log at once, and the upstream drops records until a level is set.
	u.conn.connected = func(cs *mcp.ClientSession) { u.setUpstreamLogLevel(ctx, cs) }
	u.conn.ready = func(*mcp.ClientSession) {
		u.catalog.relist(listAll)
		go u.resubscribe()
	}
	u.catalog = &catalog{cfg: c, log: u.log, ctx: ctx, gate: u.gate, session: u.conn.current}
	if e := c.expose; e != nil && e.hideWhenDown {
		// A block that hides its tools while the upstream is down changes
		// what it contributes with the state.
		u.conn.upDown = u.catalog.notify
	}
	u.dial.client = mcp.NewClient(&mcp.Implementation{Name: "mcpd", Version: buildinfo.Read("", "").Version}, &mcp.ClientOptions{
		ProgressNotificationHandler: u.relay.onProgress,
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { u.catalog.relist(listTools) },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { u.catalog.relist(listPrompts) },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { u.catalog.relist(listResources) },
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
	u.dial.client.AddReceivingMiddleware(u.relay.relayRoots, u.relay.relayElicit)
	addTaskMethods(u.dial.client) // taskrelay.go
	// start = "load" is honoured by Watch, not here: every build opens
	// its backends, a check-only one too (validate, list, the editor's
	// diagnostics), and only a served config is watched.
	return u, nil
}

func (u *upstream) String() string { return u.cfg.String() }

// Watch registers changed, called when the upstream's listing changes or,
// for a block that hides tools while it is down, when it goes down or
// comes back (adapter.Watcher). The first Watch starts the upstream:
// only a served config watches, so validate and lint start nothing.
func (u *upstream) Watch(changed func()) (stop func()) {
	stop = u.catalog.watch(changed)
	if u.cfg.expose != nil || u.cfg.eager {
		u.conn.ensureStarted()
	}
	return stop
}

// session returns the supervisor's session, waiting for it up to
// connect_timeout (connection.go).
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	return u.conn.session(ctx)
}

// broken closes a session whose transport failed, so that the supervisor
// connects again (an HTTP server restarted and forgot the session).
func (u *upstream) broken(cs *mcp.ClientSession) {
	if u.callers.broken(cs) {
		return
	}
	u.conn.broken(cs)
}

// Close stops the supervisor: the session is closed and a stdio upstream's
// process group killed. It waits a bounded time for that.
func (u *upstream) Close() error {
	cs := u.conn.markClosed()
	// What the program writes while mcpd stops it (Node's EPIPE stack
	// trace for a write to the closed stdout) is no trouble to report.
	u.output.stopping.Store(true)
	u.cancel()
	u.holds.close()
	u.pool.close()
	u.callers.close()
	u.closeUserAuth()
	u.fast.close()
	u.conn.stop(cs)
	return nil
}

// Ping checks that the upstream answers (adapter.Pinger, for /readyz).
// With a per-caller identity, mcpd has no identity of its own to ask
// with: the supervisor's session is pinged only when it was started (by
// expose, start = "load" or a subscription), and an upstream that refuses
// it for want of a caller's token (HTTP 401) has answered.
func (u *upstream) Ping(ctx context.Context) error {
	if u.perCaller() && u.conn.idleOrRefused() {
		return nil
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
	state, restarts := u.conn.stats()
	st := adapter.ServiceStatus{Name: u.cfg.name, Transport: u.cfg.transport(), State: state, Restarts: restarts,
		Calls: u.calls.Load(), Failures: u.failures.Load(), Tools: len(u.catalog.current().tools), Dropped: u.gate.drops.snapshot(),
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
func (u *upstream) redact(s string) string { return u.cfg.redact(s) }

// httpClient and newHeaderTransport are the dialer's, for the fast path
// (fastcall.go).
func (u *upstream) httpClient(rt http.RoundTripper, sa *sessionAuth) *http.Client {
	return u.dial.httpClient(rt, sa)
}

func (u *upstream) newHeaderTransport() http.RoundTripper { return u.dial.newHeaderTransport() }

// process is a stdio upstream's running program.
type process struct {
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stop   func()
}
