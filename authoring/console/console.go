// Package console is mcpd's browser console (`mcpd serve --ui`): a page that
// lists the tools, resources and prompts, calls them through MCP itself (the
// same /mcp endpoint as every client), and shows the config's reload status
// and the recent calls live.
//
// The package serves the page's embedded assets and one server-sent event
// stream, /ui/events, of two kinds of event: "status" (the config's
// generation, files and the latest reload's diagnostics) and "call" (one
// answered call, from any client). Everything else the page shows it asks
// /mcp for, so there is no second API to drift from the first.
//
// The stream never holds up the server: an event is encoded once and put on
// each subscriber's bounded queue without waiting; a subscriber whose queue
// is full is dropped (the browser reconnects and starts from a fresh
// snapshot), and every write has a deadline.
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/snapshot"
)

//go:embed assets
var assets embed.FS

// ClientLabel is the label the console's calls carry under
// serve.ClientMetaKey, and so in the audit log's "client" field.
const ClientLabel = "console"

// Options configure a Console.
type Options struct {
	// Logger receives one line per call made from the console, marked
	// client=console, and the stream's warnings.
	Logger *slog.Logger
	// RecentCalls is how many calls the console keeps to show a page that
	// opens; default 100.
	RecentCalls int
	// QueueSize is how many events may wait for one subscriber before it is
	// dropped; default 256.
	QueueSize int
	// MaxSubscribers caps the event streams open at once; more get 503.
	// Default 32.
	MaxSubscribers int
	// WriteTimeout bounds one write to a subscriber; default 5s.
	WriteTimeout time.Duration
	// Heartbeat is how often an idle stream gets a comment line, so that
	// proxies keep it open and a dead client is noticed; default 15s.
	Heartbeat time.Duration
	// Toolsets, when not nil, names the toolsets of the config being
	// served, for the status the page is sent (see Status.Toolsets). It is
	// called with the status, so it must return at once.
	Toolsets func() []string
	// Current, when not nil, is the snapshot being served: its drifts from
	// the lock file are shown to admins, who may approve them (drift.go);
	// Reload then makes the server read the lock file again.
	Current func() *snapshot.Snapshot
	Reload  func()
}

// Console is the state behind the page: the latest config status, the
// recent calls and the open event streams.
type Console struct {
	opts Options

	mu     sync.Mutex
	status []byte // the latest Status, encoded; nil before the first
	drifts []byte // the latest Drifts, encoded; nil before the first
	calls  ring[*record]
	subs   map[*subscriber]struct{}
	closed bool
	tasks  TaskLister // tasks.go; nil: no tasks view
}

// New returns a console with no status yet; SetStatus gives it one.
func New(opts Options) *Console {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.RecentCalls <= 0 {
		opts.RecentCalls = 100
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 256
	}
	if opts.MaxSubscribers <= 0 {
		opts.MaxSubscribers = 32
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	return &Console{opts: opts, calls: newRing[*record](opts.RecentCalls), subs: map[*subscriber]struct{}{}}
}

// Status is the config part of the page, sent as a "status" event.
type Status struct {
	Generation int       `json:"generation"`
	LoadedAt   time.Time `json:"loaded_at"`
	Files      []string  `json:"files"`
	LastReload struct {
		Time   *time.Time `json:"time,omitempty"`
		Result string     `json:"result"` // none, success, failure (as /healthz)
		// Diagnostics are the errors of the latest reload when it failed,
		// each with its file, line, column and source line.
		Diagnostics []config.JSONDiagnostic `json:"diagnostics"`
	} `json:"last_reload"`
	// Pending says why a reload is held back while a file is being
	// written; empty otherwise.
	Pending string `json:"pending,omitempty"`
	// Toolsets are the names of the running config's toolsets, for the
	// page's toolset picker: it lists and calls through /mcp/NAME.
	Toolsets []string `json:"toolsets"`
}

// StatusOf converts the reloader's status.
func StatusOf(st reload.Status) Status {
	var s Status
	s.Generation, s.LoadedAt, s.Files, s.Pending = st.Generation(), st.LastOK, st.Files, st.Pending
	at, result := st.LastReload()
	s.LastReload.Result = result
	if !at.IsZero() {
		s.LastReload.Time = &at
	}
	s.LastReload.Diagnostics = []config.JSONDiagnostic{}
	if result == reload.ResultFailure {
		s.LastReload.Diagnostics = st.Diagnostics
	}
	if s.Files == nil {
		s.Files = []string{}
	}
	return s
}

// SetReloadStatus is reload.Reloader.OnStatus: it returns at once.
func (c *Console) SetReloadStatus(st reload.Status) {
	s := StatusOf(st)
	if c.opts.Toolsets != nil {
		s.Toolsets = c.opts.Toolsets()
	}
	if s.Toolsets == nil {
		s.Toolsets = []string{}
	}
	c.SetStatus(s)
	if c.opts.Current != nil {
		if snap := c.opts.Current(); snap != nil {
			c.SetDrifts(DriftsOf(snap))
		}
	}
}

// SetStatus records the config status and sends it to every page open.
func (c *Console) SetStatus(s Status) {
	data, err := json.Marshal(s)
	if err != nil {
		c.opts.Logger.Error("console: encoding the status", "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.status = data
	c.broadcast(message{name: "status", data: data})
}

// Call is one answered call as the page shows it, sent as a "call" event.
type Call struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	Principal  string    `json:"principal"`
	Client     string    `json:"client"`
	Transport  string    `json:"transport"`
	DurationMS float64   `json:"duration_ms"`
	// Outcome is the call's event.Outcome, or OutcomeInputRequired for a
	// round that asked the client for input instead of answering: the
	// call is not over, and the page must not show it as "ok".
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Toolset is the toolset the call came through; empty for /mcp
	// serving everything.
	Toolset string `json:"toolset,omitempty"`
	// Other marks a call by another principal than the page's, shown
	// without its principal, client label and error text (see record).
	Other bool `json:"other,omitempty"`
}

// Record is serve.Options.OnCall: it keeps the call and sends it to every
// page that may see it (see record.data), without waiting for any of
// them.
func (c *Console) Record(ev *event.Call) {
	call := Call{
		Time: ev.Time, Kind: ev.Kind, Name: ev.Target, Principal: ev.Principal, Client: ev.Client, Transport: ev.Transport,
		DurationMS: float64(ev.Duration.Microseconds()) / 1000, Outcome: ev.Outcome, Error: ev.Error, Toolset: ev.Toolset,
	}
	if ev.Outcome == event.OutcomeOK && ev.InputRequired {
		call.Outcome = OutcomeInputRequired
	}
	if ev.Client == ClientLabel {
		c.opts.Logger.Info("call from the console", "client", ev.Client, "kind", ev.Kind, "name", ev.Target,
			"principal", ev.Principal, "outcome", ev.Outcome, "took", ev.Duration)
	}
	data, err := json.Marshal(call)
	if err != nil {
		return // strings and numbers only: does not happen
	}
	rec := &record{call: call, full: data, caller: ev.Caller}
	if ev.Snapshot != nil {
		rec.sets = ev.Snapshot.Requires(ev.Kind, ev.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls.add(rec)
	for s := range c.subs {
		if data := rec.data(s.who); data != nil {
			c.send(s, message{name: "call", data: data})
		}
	}
}

// OutcomeInputRequired is the outcome the page is sent for a 2026-07-28
// round answered with an input_required result (see Call.Outcome).
const OutcomeInputRequired = "input_required"

// record is one call the console keeps, with what decides who sees it.
//
// A page sees a call only if its principal could see what was called:
// the tool, prompt or resource, with the scopes it holds (a call to a name
// the config does not declare, only the caller's own pages see). Of a call
// by another principal it sees when, what, how long and how it ended, but
// not who (the principal, the client label) nor the error text, which may
// hold that principal's data: it is marked Other. The local user's page
// (no authentication) sees the local user's calls in full, and those of
// authenticated principals (a reload that adds an auth block) as any
// other page does. See docs/security.md, "The console".
type record struct {
	call   Call
	full   []byte               // call, encoded
	anon   []byte               // call as others see it, encoded on first need
	caller *principal.Principal // nil: the local user
	sets   [][]string           // snapshot.Requires: who may see what was called
}

// data is what the page of who (nil: the local user) is sent of r: full,
// anonymous, or nil for nothing. The caller holds the console's mu.
func (r *record) data(who *principal.Principal) []byte {
	if sameCaller(r.caller, who) {
		return r.full
	}
	if !maySee(who, r.sets) {
		return nil
	}
	if r.anon == nil {
		a := r.call
		a.Principal, a.Client, a.Error, a.Other = "", "", "", true
		r.anon, _ = json.Marshal(a) // strings and numbers only
	}
	return r.anon
}

// sameCaller reports whether a and b (nil: the local user) are the same
// principal: the same name verified the same way.
func sameCaller(a, b *principal.Principal) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Method == b.Method && a.Name == b.Name
}

// maySee reports whether who (nil: the local user) holds every scope of
// one of sets.
func maySee(who *principal.Principal, sets [][]string) bool {
	for _, set := range sets {
		if who.HasScopes(set) {
			return true
		}
	}
	return false
}

// Handler serves the console under prefix (e.g. "/ui/"): the page, its
// assets, and the event stream at prefix+"events". The caller wraps it in
// the same Host/Origin guard and authentication as /mcp; the assets hold no
// data, the stream does.
func (c *Console) Handler(prefix string) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(prefix, http.FileServerFS(sub))
	mux := http.NewServeMux()
	mux.Handle("GET "+prefix+"events", http.HandlerFunc(c.serveEvents))
	mux.Handle("POST "+prefix+"lock/approve", http.HandlerFunc(c.serveApprove))
	mux.Handle("GET "+prefix+"tasks", http.HandlerFunc(c.serveTasks))
	mux.Handle("GET "+prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page is small and changes with the binary: no caching
		// surprises after an upgrade, and no framing by other sites.
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; media-src data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		files.ServeHTTP(w, r)
	}))
	return mux
}

// Close ends every event stream (for a shutdown) and refuses new ones.
func (c *Console) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for s := range c.subs {
		c.drop(s)
	}
}
