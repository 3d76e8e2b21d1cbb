package console

import (
	"bytes"
	"net/http"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpd/mcpd/engine/principal"
)

// message is one server-sent event, its data encoded once for every
// subscriber.
type message struct {
	name string
	data []byte
}

// subscriber is one open event stream.
type subscriber struct {
	who     *principal.Principal // the page's verified caller; nil: the local user
	queue   chan message
	dropped chan struct{} // closed when the console lets go of it
}

// broadcast queues ev for every subscriber without waiting. The caller
// holds c.mu.
func (c *Console) broadcast(ev message) {
	for s := range c.subs {
		c.send(s, ev)
	}
}

// send queues ev for s without waiting: a subscriber whose queue is full
// is not reading, and is dropped. The caller holds c.mu.
func (c *Console) send(s *subscriber, ev message) {
	select {
	case s.queue <- ev:
	default:
		c.opts.Logger.Warn("console: dropping an event stream that does not keep up; the page reconnects", "queued", len(s.queue))
		c.drop(s)
	}
}

// drop forgets s and tells its stream to end. The caller holds c.mu.
func (c *Console) drop(s *subscriber) {
	if _, ok := c.subs[s]; ok {
		delete(c.subs, s)
		close(s.dropped)
	}
}

// subscribe registers a new stream of the local user; see subscribeAs.
func (c *Console) subscribe() (*subscriber, []message, bool) { return c.subscribeAs(nil) }

// subscribeAs registers a new stream for who (nil: the local user) and
// returns it with what it starts from: the current status and the recent
// calls who may see, oldest first. Nothing can happen between the snapshot
// and the registration.
func (c *Console) subscribeAs(who *principal.Principal) (*subscriber, []message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || len(c.subs) >= c.opts.MaxSubscribers {
		return nil, nil, false
	}
	s := &subscriber{who: who, queue: make(chan message, c.opts.QueueSize), dropped: make(chan struct{})}
	c.subs[s] = struct{}{}
	var start []message
	if c.status != nil {
		start = append(start, message{name: "status", data: c.status})
	}
	if c.drifts != nil && isAdmin(who) {
		start = append(start, message{name: "drift", data: c.drifts})
	}
	c.calls.each(func(r *record) {
		if data := r.data(who); data != nil {
			start = append(start, message{name: "call", data: data})
		}
	})
	return s, start, true
}

func (c *Console) unsubscribe(s *subscriber) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(s)
}

// serveEvents streams status and call events to one page until it goes,
// the console drops it, or the server shuts down.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request) {
	// The page sees what its token may see (see record); the auth layer
	// in front put the verified caller where the SDK's would.
	s, start, ok := c.subscribeAs(principal.FromTokenInfo(sdkauth.TokenInfoFromContext(r.Context())))
	if !ok {
		http.Error(w, "too many console event streams open; close a console tab", http.StatusServiceUnavailable)
		return
	}
	defer c.unsubscribe(s)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	var buf bytes.Buffer
	write := func(evs ...message) bool {
		buf.Reset()
		for _, ev := range evs {
			buf.WriteString("event: ")
			buf.WriteString(ev.name)
			buf.WriteString("\ndata: ")
			buf.Write(ev.data) // JSON: no newline inside
			buf.WriteString("\n\n")
		}
		if len(evs) == 0 {
			buf.WriteString(": keep-alive\n\n")
		}
		_ = rc.SetWriteDeadline(time.Now().Add(c.opts.WriteTimeout))
		_, err := w.Write(buf.Bytes())
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			// Gone, or not reading for WriteTimeout: either way, done.
			c.opts.Logger.Debug("console: closing an event stream", "remote", r.RemoteAddr, "err", err)
			return false
		}
		return true
	}
	// A first frame even with nothing to say, so the page knows the
	// stream is up.
	if !write(append([]message{{name: "hello", data: []byte("{}")}}, start...)...) {
		return
	}
	beat := time.NewTicker(c.opts.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case ev := <-s.queue:
			evs := []message{ev}
			for len(evs) < 64 && len(s.queue) > 0 {
				evs = append(evs, <-s.queue)
			}
			if !write(evs...) {
				return
			}
		case <-beat.C:
			if !write() {
				return
			}
		case <-s.dropped:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// ring keeps the latest n calls.
type ring[T any] struct {
	items []T
	next  int
	full  bool
}

func newRing[T any](n int) ring[T] { return ring[T]{items: make([]T, n)} }

func (r *ring[T]) add(b T) {
	r.items[r.next] = b
	r.next++
	if r.next == len(r.items) {
		r.next, r.full = 0, true
	}
}

// each calls f for every item, oldest first.
func (r *ring[T]) each(f func(T)) {
	if r.full {
		for _, b := range r.items[r.next:] {
			f(b)
		}
	}
	for _, b := range r.items[:r.next] {
		f(b)
	}
}
