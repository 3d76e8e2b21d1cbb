package serve

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How notifications reach clients, and why it is built this way.
//
// The SDK (v1.8.0) fans a list_changed or resources/updated notification out
// to its sessions one after the other, and each send is a blocking write to
// the client's event stream: it ignores the context it is given, and a
// client that does not read its stream (a full socket) blocks the write, and
// the whole fan-out behind it, for ever. The SDK's Server.ResourceUpdated even
// runs the fan-out on the caller's goroutine, which was the reloader holding
// its lock; list_changed runs it on a timer's goroutine, where the next
// fan-outs queue up behind the stuck one.
// So mcpd never lets the SDK write a fan-out notification on the caller's
// goroutine:
//
//   - Notify and ResourceUpdated only record what is pending and return; one
//     goroutine (running only while there is work) hands it to the SDK, so
//     kinds and URIs pending at once are coalesced.
//   - A sending middleware takes each fan-out notification the SDK sends to a
//     session and puts it on that session's queue, where a duplicate of a
//     notification still waiting is dropped (one list_changed says it all);
//     each queue has its own goroutine, so one stuck client delays only
//     itself. A session with more than maxPending notifications waiting is
//     closed.
//   - Writes to an HTTP event stream that carries notifications (a legacy
//     session's GET stream, a 2026 subscriptions/listen stream) carry a
//     deadline (Options.SlowClientTimeout): a client that has not taken a
//     notification for that long gets its stream broken and its session
//     closed, which is logged and counted (Stats). That is what frees a
//     write blocked on a full socket; nothing else can.
//
// stdio has no write deadline (stdout is a pipe that the host may leave
// unread): a blocked write there holds only the stdio session's queue, which
// coalesces, and is logged; reloads and other clients carry on.

// DefaultSlowClientTimeout is Options.SlowClientTimeout's default.
const DefaultSlowClientTimeout = 10 * time.Second

// maxPending bounds a session's queue of notifications not yet written.
// Duplicates coalesce, so only a client subscribed to more resources than this
// that stopped reading can reach it.
const maxPending = 1024

// NotifyStats counts what became of the notifications sent to clients, for
// metrics.
type NotifyStats struct {
	// Sent is the number of notifications written to a client.
	Sent uint64
	// Failed is the number that could not be written (the client's stream
	// was closed or broken).
	Failed uint64
	// Coalesced is the number dropped because the same one was still waiting
	// to be written to that client.
	Coalesced uint64
	// SlowClients is the number of sessions and streams closed because
	// their client stopped reading: a write blocked for SlowClientTimeout,
	// or more than maxPending notifications waited.
	SlowClients uint64
}

// Stats returns the notification counters since the server started.
func (s *Server) Stats() NotifyStats {
	n := s.notes
	return NotifyStats{Sent: n.sent.Load(), Failed: n.failed.Load(), Coalesced: n.coalesced.Load(), SlowClients: n.slow.Load()}
}

// notifier holds the pending notifications and the per-session queues.
// There is one SDK server per endpoint (/mcp, and each toolset's; see
// toolset.go), each with its own sessions: notifications are pending per
// server, so that only the clients of an endpoint whose lists changed hear
// of it.
type notifier struct {
	logger  *slog.Logger
	timeout time.Duration
	// sessions lists the sessions of every endpoint.
	sessions func() iter.Seq[*mcp.ServerSession]
	// muted reports the subscriptions whose resources/updated a session
	// must not get (subscribe.go); nil: none.
	muted func(ss *mcp.ServerSession, uri string) bool
	// listens are the open 2026-07-28 listens, to which mcpd sends
	// list_changed itself (listens.go).
	listens *listens

	mu      sync.Mutex
	running bool                          // the dispatch goroutine is running
	pending map[*mcp.Server]*pendingNotes // per endpoint's server
	queues  map[*mcp.ServerSession]*sessionQueue

	sent, failed, coalesced, slow atomic.Uint64
}

// pendingNotes are one server's notifications not yet handed to the SDK.
type pendingNotes struct {
	kinds  [3]bool         // list_changed pending: tools, prompts, resources
	uris   []string        // resources/updated pending, in order
	uriSet map[string]bool // the members of uris
}

// sessionQueue is one session's notifications waiting to be written.
type sessionQueue struct {
	items  []queued
	keys   map[string]bool // keys of items
	closed bool            // the session is being closed; drop new items
}

type queued struct {
	key  string
	send func(context.Context) error
}

func newNotifier(logger *slog.Logger, timeout time.Duration) *notifier {
	if timeout <= 0 {
		timeout = DefaultSlowClientTimeout
	}
	return &notifier{logger: logger, timeout: timeout, listens: newListens(), pending: map[*mcp.Server]*pendingNotes{}, queues: map[*mcp.ServerSession]*sessionQueue{}}
}

// schedule records list_changed kinds and updated URIs as pending for the
// sessions of srv and makes sure the dispatch goroutine runs. It never
// blocks on a client.
func (n *notifier) schedule(srv *mcp.Server, kinds [3]bool, uris ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.pending[srv]
	if p == nil {
		p = &pendingNotes{uriSet: map[string]bool{}}
		n.pending[srv] = p
	}
	for i, k := range kinds {
		p.kinds[i] = p.kinds[i] || k
	}
	for _, u := range uris {
		if !p.uriSet[u] {
			p.uriSet[u] = true
			p.uris = append(p.uris, u)
		}
	}
	if !n.running {
		n.running = true
		go n.dispatch()
	}
}

// dispatch hands pending notifications to the SDK until none is left. The
// SDK's fan-out lands in sending, which queues per session, so this does not
// wait for any client either.
func (n *notifier) dispatch() {
	for {
		n.mu.Lock()
		pending := n.pending
		n.pending = map[*mcp.Server]*pendingNotes{}
		if len(pending) == 0 {
			n.running = false
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		for srv, p := range pending {
			touchMarkers(srv, p.kinds)
			for ss, items := range n.listens.listChanged(srv, p.kinds) {
				for _, item := range items {
					n.enqueue(ss, item)
				}
			}
			for _, uri := range p.uris {
				if err := srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
					n.logger.Warn("notifying resource update", "uri", uri, "err", err)
				}
			}
		}
	}
}

// fanOutKey names the notifications the SDK fans out to every session (or
// every subscriber), which are the ones queued; a duplicate key waiting in a
// queue is dropped. Other messages (progress, log messages, requests to the
// client) belong to a request in flight and are sent as the SDK does.
func fanOutKey(method string, req mcp.Request) (string, bool) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return method, true
	case "notifications/resources/updated":
		if p, ok := req.GetParams().(*mcp.ResourceUpdatedNotificationParams); ok && p != nil {
			return method + " " + p.URI, true
		}
	}
	return "", false
}

// sending is the SDK sending middleware that queues fan-out notifications.
func (n *notifier) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if n.listens.sent(ctx, method, req) {
			return nil, nil
		}
		key, ok := fanOutKey(method, req)
		ss, isServer := req.GetSession().(*mcp.ServerSession)
		if !ok || !isServer {
			return next(ctx, method, req)
		}
		if p, ok := req.GetParams().(*mcp.ResourceUpdatedNotificationParams); ok && p != nil && n.muted != nil && n.muted(ss, p.URI) {
			return nil, nil
		}
		// The write happens later, under deliver's context: the SDK's ctx
		// (a bare timeout) ends when its fan-out returns, which is now.
		n.enqueue(ss, queued{key: key, send: func(wctx context.Context) error {
			_, err := next(wctx, method, req)
			return err
		}})
		return nil, nil
	}
}

func (n *notifier) enqueue(ss *mcp.ServerSession, item queued) {
	n.mu.Lock()
	q := n.queues[ss]
	if q == nil {
		q = &sessionQueue{keys: map[string]bool{}}
		n.queues[ss] = q
		go n.deliver(ss, q)
	}
	switch {
	case q.closed:
		n.mu.Unlock()
		n.failed.Add(1)
		return
	case q.keys[item.key]:
		n.mu.Unlock()
		n.coalesced.Add(1)
		return
	case len(q.items) >= maxPending:
		q.closed = true
		dropped := len(q.items)
		q.items, q.keys = nil, map[string]bool{}
		n.mu.Unlock()
		n.failed.Add(uint64(dropped) + 1)
		n.disconnect(ss, ss.ID(), fmt.Sprintf("%d notifications waiting", dropped))
		return
	}
	q.items = append(q.items, item)
	q.keys[item.key] = true
	n.mu.Unlock()
}

// deliver writes one session's queue in order, and ends when it is empty.
func (n *notifier) deliver(ss *mcp.ServerSession, q *sessionQueue) {
	for {
		n.mu.Lock()
		if len(q.items) == 0 {
			delete(n.queues, ss)
			n.mu.Unlock()
			return
		}
		item := q.items[0]
		q.items = q.items[1:]
		delete(q.keys, item.key)
		n.mu.Unlock()

		// The deadline that frees a blocked write is the stream's (see
		// deadlineStream); the SDK does not honour this context's. The timer
		// only says so when a transport without one (stdio) is stuck.
		ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
		stuck := time.AfterFunc(n.timeout, func() {
			n.logger.Warn("a client has not taken a notification for a while; it is not reading its stream", "session", ss.ID(), "waited", n.timeout, "notification", item.key)
		})
		err := item.send(ctx)
		stuck.Stop()
		cancel()
		if err != nil {
			n.failed.Add(1)
			n.logger.Debug("sending notification", "session", ss.ID(), "notification", item.key, "err", err)
		} else {
			n.sent.Add(1)
		}
	}
}

// disconnect closes a session whose client stopped reading, and counts it.
// ss may be nil when only the session ID is known.
func (n *notifier) disconnect(ss *mcp.ServerSession, id, reason string) {
	n.logger.Warn("closing the session of a client that stopped reading its event stream", "session", id, "reason", reason)
	// Counted after it is logged, so that whoever sees the count sees the
	// log line too.
	n.slow.Add(1)
	if ss == nil && id != "" {
		for s := range n.sessions() {
			if s.ID() == id {
				ss = s
				break
			}
		}
	}
	if ss == nil {
		return
	}
	// Close waits for the session's writes in flight to finish, one of
	// which may be the caller's, or one blocked until its stream's write
	// deadline (HTTP) or until the pipe is read or closed (stdio).
	go ss.Close()
}

// deadlineStream puts a write deadline on the response of a request whose
// stream carries notifications: a legacy session's GET stream, or a 2026
// subscriptions/listen. Other responses are returned unchanged: their writes
// hold up only their own request, and a large result over a slow link may
// rightly take long.
func (s *Server) deadlineStream(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if r.Method != http.MethodGet && r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		return w
	}
	return &streamWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: s.notes.timeout, onTimeout: func(err error) {
		s.notes.disconnect(nil, r.Header.Get("Mcp-Session-Id"), err.Error())
	}}
}

// streamWriter gives each write and flush of a response timeout to
// complete. A write that misses it fails, which makes net/http break the
// connection and end the request's context: the SDK then lets go of the
// stream.
type streamWriter struct {
	http.ResponseWriter
	rc        *http.ResponseController
	timeout   time.Duration
	onTimeout func(error)
	once      sync.Once
}

func (d *streamWriter) withDeadline(op func() error) error {
	// Setting the deadline fails when the writer beneath does not support
	// it; the write then has no deadline, as before.
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.timeout))
	err := op()
	// Clear it: the connection may serve other requests after this one, and
	// net/http does not reset a deadline between requests (unless
	// http.Server.WriteTimeout is set).
	_ = d.rc.SetWriteDeadline(time.Time{})
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		d.once.Do(func() { d.onTimeout(err) })
	}
	return err
}

func (d *streamWriter) Write(b []byte) (int, error) {
	var n int
	err := d.withDeadline(func() (err error) {
		n, err = d.ResponseWriter.Write(b)
		return err
	})
	return n, err
}

// FlushError is what http.ResponseController.Flush calls.
func (d *streamWriter) FlushError() error {
	return d.withDeadline(func() error { return http.NewResponseController(d.ResponseWriter).Flush() })
}

func (d *streamWriter) Flush() { _ = d.FlushError() }

// Unwrap lets http.ResponseController reach the writer's other methods.
func (d *streamWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }
