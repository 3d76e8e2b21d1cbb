package mcpadapter

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// A 2025-11-25 upstream asks while its call runs, by requests on its
// session (elicitation/create, sampling/createMessage, roots/list); a
// 2026-07-28 client of mcpd can only be asked by ending its call with
// input_required. For such a client mcpd holds the upstream call in this
// process: the upstream's request waits, the client gets input_required
// whose requestState names the held call, and its retry hands the answer
// to the waiting request and follows the call on (to its result, or to its
// next question).
//
// Which call a request belongs to: the call of an HTTP upstream runs on a
// session it has to itself for as long as it lasts, taken from the
// upstream's pool (pool.go), so every request on that session is the
// call's and several calls can wait at once. A stdio upstream has one
// session, shared by all its calls, and so do calls whose client can be
// asked nothing: their requests are relayed, as for a 2025-11-25 client,
// only while exactly one of its calls is in flight, and the session has
// served one caller only (relay.go).
//
// A held call lives in one process. A retry that reaches another replica,
// or comes after the upstream's answer_timeout, finds nothing and is a tool
// error that says so; the upstream's request gets an error at the timeout,
// and its call ends (cancelled, if the upstream does not end it within
// expireGrace). At most maxHeld calls of one upstream are held
// at once: past that the upstream's request gets an error, as when the
// client cannot answer it, and its tool decides what to do.

// maxHeld bounds the calls of one upstream held for their clients' answers.
const maxHeld = 100

// defaultAnswerTimeout is how long a held call waits for its client's
// retry: long enough for a person to read a question and answer it.
const defaultAnswerTimeout = 5 * time.Minute

// heldKey is the key of a held call's one question in input_required.
const heldKey = "upstream"

// question is one request of the upstream, put to a held call's client.
type question struct {
	req    mcp.InputRequest
	answer chan answer // buffered: its one answer
}

type answer struct {
	resp mcp.InputResponse
	err  error
}

// heldCall is one upstream call of a client asked by rounds, which may be
// held between the client's requests.
type heldCall struct {
	id         string
	kind, name string          // the exchange's
	ctx        context.Context // the upstream call's: ended by cancel, or the upstream's Close
	cancel     context.CancelFunc
	// done is closed once res and err are set: the upstream answered.
	done      chan struct{}
	res       mcp.Result
	err       error
	questions chan *question // the upstream's requests for this call
	rounds    int            // input_required rounds so far (maxInputRounds)

	mu      sync.Mutex
	caps    *mcp.ClientCapabilities        // of the client's latest request
	report  func(float64, float64, string) // its progress; nil while held
	waiting *question                      // the question asked, while held
	timer   *time.Timer                    // answer_timeout, while held
}

// holds are the calls of an upstream held for their clients' answers.
type holds struct {
	name          string        // the upstream's, for errors
	answerTimeout time.Duration // how long a call is held (answer_timeout)

	mu    sync.Mutex
	calls map[string]*heldCall
}

// capabilities are those the client declared with its latest request.
func (h *heldCall) capabilities() *mcp.ClientCapabilities {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.caps
}

// progress relays the upstream's progress to the client's current request.
func (h *heldCall) progress(p, total float64, msg string) {
	h.mu.Lock()
	report := h.report
	h.mu.Unlock()
	if report != nil {
		report(p, total, msg)
	}
}

// serving records the client's request that follows the call now.
func (h *heldCall) serving(x *exchange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.caps, h.report = x.rounds.Caps, x.progress
}

// ask puts one request of the upstream to the call's client (through the
// request of the client that follows the call) and waits for the answer,
// for as long as the upstream's request (ctx) and the call last.
func (h *heldCall) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{req: req, answer: make(chan answer, 1)}
	select {
	case h.questions <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.ctx.Done():
		return nil, errors.New("the call ended")
	}
	select {
	case a := <-q.answer:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-h.ctx.Done():
		return nil, errors.New("the call ended before the client answered")
	}
}

// startHeld starts the upstream request (x with params) of a client asked
// by rounds, on a context of its own: it may outlive the client's request
// (and so does not carry its caller, owner).
// With a pooled session s, it runs on it (and gives it back); otherwise
// on cs.
func (u *upstream) startHeld(owner string, cs *mcp.ClientSession, s *pooledSession, x *exchange, params mcp.RequestParams, tok *callToken) *heldCall {
	ctx, cancel := context.WithCancel(withHTTPAnswer(u.ctx))
	if tok != nil {
		// The call's requests carry its token, as a call's not held does.
		ctx = context.WithValue(ctx, callTokenKey{}, tok)
	}
	h := &heldCall{id: heldID(), kind: x.kind, name: x.name, ctx: ctx, cancel: cancel, done: make(chan struct{}), questions: make(chan *question)}
	h.serving(x)
	token, forgetProgress := u.relay.progressToken(h.progress)
	params.SetProgressToken(token)
	go func() {
		defer cancel()
		var res mcp.Result
		var err error
		if s != nil {
			res, cs, err = u.pool.call(ctx, s, params, func(ctx context.Context, cs *mcp.ClientSession) (context.Context, func()) {
				return u.relay.withRelay(ctx, &relayCall{owner: owner, held: h, session: cs, own: true})
			})
		} else {
			rctx, forgetRelay := u.relay.withRelay(ctx, &relayCall{owner: owner, held: h, session: cs})
			res, err = send(rctx, cs, params)
			forgetRelay()
		}
		forgetProgress()
		if err != nil {
			u.failures.Add(1)
			err = u.callError(ctx, cs, x.name, err)
		} else {
			redactResult(res, tok)
		}
		h.res, h.err = res, err
		close(h.done)
	}()
	return h
}

// cancelGrace is how long a call's session stays open after the call
// was cancelled: the SDK sends notifications/cancelled in the background,
// and closing the session at once would often drop it, leaving the
// upstream's tool running.
const cancelGrace = 2 * time.Second

// closeOwn closes a call's session that is not pooled again.
func closeOwn(ctx context.Context, cs *mcp.ClientSession) {
	if ctx.Err() == nil {
		_ = cs.Close()
		return
	}
	time.AfterFunc(cancelGrace, func() { _ = cs.Close() })
}

// await follows a call for one request of its client: to the upstream's
// result, or to its next question, which ends the request with
// input_required while the call is held. The request's end (a cancel, the
// tool's timeout) ends the call, unless it is held.
func (u *upstream) await(ctx context.Context, h *heldCall) (mcp.Result, *adapter.InputRequired, error) {
	stop := context.AfterFunc(ctx, h.cancel)
	for {
		select {
		case <-h.done:
			stop()
			return h.res, nil, h.err
		case <-ctx.Done():
			return nil, nil, ctx.Err() // stop's function cancels the call
		case q := <-h.questions:
			if !stop() {
				q.answer <- answer{err: ctx.Err()}
				return nil, nil, ctx.Err()
			}
			ir, err := u.hold(h, q)
			if err == nil {
				return nil, ir, nil
			}
			q.answer <- answer{err: err}
			if h.rounds >= maxInputRounds {
				h.cancel()
				u.failures.Add(1)
				return nil, nil, err
			}
			stop = context.AfterFunc(ctx, h.cancel)
		}
	}
}

// hold keeps h waiting for its client's answer to q, and returns the
// input_required that asks it.
func (u *upstream) hold(h *heldCall, q *question) (*adapter.InputRequired, error) {
	n, _ := needOf(q.req)
	if h.rounds >= maxInputRounds {
		return nil, u.tooManyRounds(h.kind, h.name, h.rounds)
	}
	st := u.newRoundState(h.kind, h.name, h.rounds+1)
	st.Held = h.id
	state, err := st.encode()
	if err != nil {
		return nil, err
	}
	if err := u.holds.put(h, q, n.method); err != nil {
		return nil, err
	}
	return &adapter.InputRequired{Requests: mcp.InputRequestMap{heldKey: q.req}, State: state}, nil
}

// put holds h, waiting on q (a request of method), for answer_timeout,
// unless maxHeld calls are held already.
func (hs *holds) put(h *heldCall, q *question, method string) error {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.calls) >= maxHeld {
		return fmt.Errorf("mcpd cannot relay %s from upstream %s: %d of its calls wait for their clients' answers already", method, hs.name, len(hs.calls))
	}
	if hs.calls == nil {
		hs.calls = map[string]*heldCall{}
	}
	h.rounds++
	h.mu.Lock()
	h.waiting, h.report = q, nil
	h.timer = time.AfterFunc(hs.answerTimeout, func() { hs.expire(h.id) })
	h.mu.Unlock()
	hs.calls[h.id] = h
	return nil
}

// take removes the held call id and returns it with the question it
// waits on; nil when no call of that id is held here.
func (hs *holds) take(id string) (*heldCall, *question) {
	hs.mu.Lock()
	h := hs.calls[id]
	delete(hs.calls, id)
	hs.mu.Unlock()
	if h == nil {
		return nil, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timer.Stop()
	q := h.waiting
	h.waiting = nil
	return h, q
}

// expireGrace is how long an upstream has to end a call itself once its
// held request got an error, before mcpd cancels the call: cancelling at
// once would often reach the upstream before that error did.
const expireGrace = 5 * time.Second

// expire ends a held call whose client did not come back in time: its
// upstream request gets an error, and the call ends (cancelled if the
// upstream does not end it).
func (hs *holds) expire(id string) {
	h, q := hs.take(id)
	if h == nil {
		return // a retry took it first
	}
	q.answer <- answer{err: fmt.Errorf("the client did not answer within answer_timeout %s", hs.answerTimeout)}
	time.AfterFunc(expireGrace, h.cancel)
}

// resume continues the held call a client's retry names, with its answer.
func (u *upstream) resume(ctx context.Context, x *exchange, st roundState) (mcp.Result, *adapter.InputRequired, error) {
	h, q := u.holds.take(st.Held)
	if h == nil {
		u.failures.Add(1)
		return nil, nil, fmt.Errorf("upstream %s's %s %s is no longer waiting for this answer: mcpd holds such a call in the instance that asked, for answer_timeout (%s), and this retry came later or reached another instance; %s again", u.cfg.name, x.kind, x.name, u.cfg.answerTimeout, x.again())
	}
	h.serving(x)
	resp, ok := x.rounds.Responses[heldKey]
	if !ok || resp == nil {
		// The retry did not answer: ask again.
		ir, err := u.hold(h, q)
		if err != nil {
			q.answer <- answer{err: err}
			h.cancel()
			return nil, nil, err
		}
		return nil, ir, nil
	}
	q.answer <- answer{resp: resp}
	return u.await(ctx, h)
}

// close ends every held call (the upstream is closed).
func (hs *holds) close() {
	hs.mu.Lock()
	ids := make([]string, 0, len(hs.calls))
	for id := range hs.calls {
		ids = append(ids, id)
	}
	hs.mu.Unlock()
	for _, id := range ids {
		hs.expire(id)
	}
}

// heldID names a held call: random, so that a requestState of one
// process cannot be made to name another call by guessing.
func heldID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand does not fail on supported systems
	return base64.RawURLEncoding.EncodeToString(b)
}
