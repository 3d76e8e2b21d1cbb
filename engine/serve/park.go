package serve

import (
	"context"
	"net/http"
	"sync"
	"unsafe"
)

// A call parked on its user.
//
// A 2025-11-25 session's call that asks its user (an ask block, a
// confirmation, or a question an upstream relays through the gateway)
// waits, inside the call, for the client's answer: seconds, or as long as
// a person takes. While it waits it needs neither a request slot
// (--max-inflight, counted twice: the HTTP POSTs in flight and the calls
// running) nor output budget, and holding them let calls waiting on people
// refuse everyone else: with --max-inflight N, N such calls made the
// server answer every other request "busy", the answers to their own
// questions included, which arrive as POSTs of their own. So a parked call
// gives back its request slots and its reservation while it waits, and
// takes them back, waiting as long as its client does, once the answer has
// come, before anything runs. What bounds the parked calls instead is a
// count of their own, as large as --max-inflight: a call that finds it full
// waits as before, holding what it holds. A parked call costs a goroutine
// and its request, nothing that grows with its result. A 2026-07-28 call
// never parks: its questions end the request (input_required) and the
// answers come with a new one.

// callHold is what one tools/call holds while it runs (see middleware).
type callHold struct {
	mu       sync.Mutex
	running  bool           // holds a slot of Server.running
	reserved int64          // output budget (budget.go)
	post     unsafe.Pointer // headerKey of the POST that carried it; nil: none
	depth    int            // questions being waited for (a call's adapter may ask several at once)
	away     bool           // its slots and budget are given back while it waits
	awayN    int64          // the reservation given back
	ended    bool           // the call has returned: a late question takes nothing back
}

// parkCall gives back what h holds while its call waits for its user, if
// the bound of parked calls allows; resumeCall takes it back.
func (s *Server) parkCall(h *callHold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.depth++
	if h.depth > 1 || h.ended {
		return
	}
	if s.parked != nil {
		select {
		case s.parked <- struct{}{}:
		default:
			return // as many calls wait as may: this one keeps what it holds
		}
	}
	h.away = true
	if h.running {
		s.release()
		h.running = false
	}
	if h.reserved > 0 {
		h.awayN = h.reserved
		s.budget.release(h.reserved)
		h.reserved = 0
	}
	s.posts.park(h.post)
}

// resumeCall takes back what parkCall gave back once the last of its
// call's questions is answered, waiting for it as long as ctx lasts; an
// error when ctx ends first (what was taken back is held, and given back
// when the call ends).
func (s *Server) resumeCall(ctx context.Context, h *callHold) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.depth--
	if h.depth > 0 || !h.away {
		return nil
	}
	h.away = false
	if s.parked != nil {
		<-s.parked
	}
	if h.ended {
		return nil // what it gave back stays given back
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	if err := s.posts.resume(ctx, h.post); err != nil {
		return err
	}
	if s.running != nil {
		select {
		case s.running <- struct{}{}:
			h.running = true
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if h.awayN > 0 {
		if err := s.budget.acquire(ctx, h.awayN, false); err != nil {
			return err
		}
		h.reserved, h.awayN = h.awayN, 0
	}
	return nil
}

// endCall gives back what h still holds but its reservation, which the
// caller gives back (releaseOutput).
func (s *Server) endCall(h *callHold) {
	if h.running {
		s.release()
	}
}

// postSlots are the HTTP request slots (HTTPOptions.MaxInflight) of the
// 2025-11-25 POSTs being served, by the identity of their header maps,
// which the SDK hands the calls they carry (RequestExtra.Header), so that
// a parked call can give back the slot of its POST.
type postSlots struct {
	mu    sync.Mutex
	posts map[unsafe.Pointer]postSlot
}

type postSlot struct {
	slots  chan struct{} // the front's
	held   bool          // the POST holds one of slots
	parked int           // calls of the POST parked
}

// start records that the POST with header holds a slot of slots.
func (p *postSlots) start(header http.Header, slots chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.posts == nil {
		p.posts = map[unsafe.Pointer]postSlot{}
	}
	p.posts[headerKey(header)] = postSlot{slots: slots, held: true}
}

// end gives back the slot of the POST with header, if it holds it.
func (p *postSlots) end(header http.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := headerKey(header)
	if e := p.posts[key]; e.held {
		<-e.slots
	}
	delete(p.posts, key)
}

func (p *postSlots) park(key unsafe.Pointer) {
	if key == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.posts[key]
	if !ok {
		return
	}
	e.parked++
	if e.held {
		<-e.slots
		e.held = false
	}
	p.posts[key] = e
}

func (p *postSlots) resume(ctx context.Context, key unsafe.Pointer) error {
	if key == nil {
		return nil
	}
	p.mu.Lock()
	e, ok := p.posts[key]
	if !ok {
		p.mu.Unlock()
		return nil // the POST has ended: no slot to take back
	}
	e.parked--
	p.posts[key] = e
	p.mu.Unlock()
	if e.parked > 0 || e.held {
		return nil
	}
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.posts[key]; ok && !cur.held {
		cur.held = true
		p.posts[key] = cur
		return nil
	}
	<-e.slots // the POST ended, or another call took one back for it
	return nil
}
