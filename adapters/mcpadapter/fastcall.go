package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/buildinfo"
)

// The gateway's fast path to HTTP upstreams (issue #34; docs/performance.md,
// "The gateway's fast path"). The go-sdk client's CallTool and its HTTP
// transport were half of a gateway's CPU, its decoding (a new decoder with
// a 32 KiB buffer per decode, several decodes per message) most of that.
// For a tools/call to an HTTP upstream that is one request and one answer,
// mcpd sends the request itself, with the bytes and headers the SDK's
// client would send (only the JSON-RPC id differs: fast-path ids start at
// fastIDBase, far from the SDK's), through the same http.Client the
// SDK's transport uses (the block's headers, the refused redirects, the
// answer's size and depth bounds of headerTransport), on a session the
// SDK established: its id and negotiated version.
//
// What it answers itself: a 200 whose body is the JSON response to the
// request, or whose event stream's first message is that response (after
// events without data). Everything else (another status, another session
// id, another content type, an event stream whose first message is a
// notification or a request of the upstream, an answer it cannot read as
// the response, a connection that failed) is handed over to the SDK's
// client as it was received (handover.go): the request is never sent
// twice; the SDK's CallTool runs as it would have, its own request taken
// back at the transport and answered with what the upstream sent, bytes
// already read included.
//
// What goes the SDK's way from the start: prompts, a request with a
// progress token or a log level (the upstream may stream), a 2026-07-28
// request without the client's capabilities (the SDK would add its own),
// a tool whose schema binds arguments to headers (x-mcp-header: the SDK
// adds them from its own cache), a tool not in mcpd's listing, a stdio
// upstream, and any upstream whose block says fast_path = false.
//
// TestFastPathDifferential holds it to the SDK: what mcpd's client
// receives, what the upstream receives, and the call event, fast path on
// and off, in both protocol eras, JSON and event streams, results, errors
// and handed-over streams. FuzzFastResult holds its decoder to the SDK's.

// fastIDBase is where the fast path's JSON-RPC ids start: the SDK numbers
// a session's requests from 1, and ids must not collide on a 2025-11-25
// session; 2^40 + n stays an exact number in a JavaScript upstream.
const fastIDBase = 1 << 40

// fastDrainBytes is how much of an event stream is read after the
// response, so that its connection can be used again.
const fastDrainBytes = 64 << 10

// fastPath is an upstream's state for its fast path.
type fastPath struct {
	once   sync.Once
	client *http.Client // the SDK transport's kind (upstream.httpClient)
	// closed: the upstream closed (a reload took it away, or mcpd
	// stops); the client's idle connections are closed with it, and
	// calls go the SDK's way (whose session is closed too).
	closed atomic.Bool
	info   *mcp.Implementation // the clientInfo the SDK's client sends
	seq    atomic.Int64

	// What a 2026-07-28 session's listing says of each tool: known, and
	// bound (its schema binds arguments to headers, x-mcp-header, which the
	// SDK's client sends from its own cache of the listing).
	mu       sync.Mutex
	session  *mcp.ClientSession // the session listed
	listedAt time.Time
	listing  bool // a listing is under way
	known    map[string]bool
	bound    map[string]bool
	caps     map[string]map[string]any // capsMeta's, by the capabilities' encoding
	lastCaps atomic.Pointer[capsMemo]
	metaEnc  atomic.Pointer[metaEncoding] // encodeCall's
}

// maxCachedCaps bounds an upstream's cache of capabilities (capsMeta).
const maxCachedCaps = 64

// capsMeta is capsMeta(c) (relay.go), made once per kind of client: a
// call's capabilities come decoded from its request, and their _meta form
// (an encoding and a decoding) was a tenth of a gateway's CPU per call.
// The map is shared by the calls of that kind, so it is never written.
func (f *fastPath) capsMeta(c *mcp.ClientCapabilities) map[string]any {
	if c == nil {
		return capsMeta(c)
	}
	// The same capabilities come as the same value: a session's, or those
	// engine/serve's fast path read of a request's bytes once
	// (fastmeta.go). The memo holds c, so no other value takes its address.
	if last := f.lastCaps.Load(); last != nil && last.c == c {
		return last.m
	}
	m := f.capsMetaOf(c)
	f.lastCaps.Store(&capsMemo{c: c, m: m})
	return m
}

// capsMemo is the latest capabilities capsMeta was given, and its answer.
type capsMemo struct {
	c *mcp.ClientCapabilities
	m map[string]any
}

func (f *fastPath) capsMetaOf(c *mcp.ClientCapabilities) map[string]any {
	b, err := json.Marshal(c)
	if err != nil {
		return capsMeta(c)
	}
	// capsMeta reads RootsV2 besides what the encoding shows.
	rootsV2 := "none"
	if c.RootsV2 != nil {
		rootsV2 = strconv.FormatBool(c.RootsV2.ListChanged)
	}
	key := string(b) + rootsV2
	f.mu.Lock()
	m, ok := f.caps[key]
	f.mu.Unlock()
	if ok {
		return m
	}
	m = capsMeta(c)
	if c.RootsV2 != nil { // the client's own struct is not kept
		m["roots"] = &mcp.RootCapabilities{ListChanged: c.RootsV2.ListChanged}
	}
	f.mu.Lock()
	if f.caps == nil {
		f.caps = map[string]map[string]any{}
	}
	if len(f.caps) < maxCachedCaps {
		f.caps[key] = m
	}
	f.mu.Unlock()
	return m
}

// close closes the fast path's idle connections to the upstream, which
// the client's own pool keeps (with room for many: a C = 16 load keeps
// 16), and any a call in flight leaves behind when it ends.
func (f *fastPath) close() {
	f.closed.Store(true)
	f.closeIdle()
}

func (f *fastPath) closeIdle() {
	f.once.Do(func() {}) // a fast path never used has no client, and will not get one
	if f.client != nil {
		f.client.CloseIdleConnections()
	}
}

// CloseIdleConnections closes the idle connections of the pool under the
// block's headers (http.Client.CloseIdleConnections asks its transport).
func (t *headerTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// relistAfter is how old a session's listing may be before a call of a
// tool it does not name lists again.
const relistAfter = 10 * time.Second

func (f *fastPath) init(u *upstream) {
	f.once.Do(func() {
		f.client = u.httpClient(u.newHeaderTransport(), nil)
		f.info = &mcp.Implementation{Name: "mcpd", Version: buildinfo.Read("", "").Version}
	})
}

// sendOnce sends params once on cs: by the fast path when it can answer
// the exchange (or hand it over), by the SDK otherwise.
func (u *upstream) sendOnce(ctx context.Context, cs *mcp.ClientSession, params mcp.RequestParams) (mcp.Result, error) {
	if p, ok := params.(*mcp.CallToolParams); ok && u.fastEligible(cs, p) {
		return u.fastCall(ctx, cs, p)
	}
	return send(ctx, cs, params)
}

// fastEligible reports whether a call may take the fast path: decided
// before anything is sent.
func (u *upstream) fastEligible(cs *mcp.ClientSession, p *mcp.CallToolParams) bool {
	// An upstream with an identity binds each session's HTTP client to
	// one identity (identity.go); the fast path's client is the
	// upstream's, so such calls stay on their session's own client.
	if u.cfg.url == "" || u.cfg.noFastPath || u.auth != nil || p.GetProgressToken() != nil || u.fast.closed.Load() {
		return false
	}
	v := protocolOf(cs)
	if v == "" {
		return false
	}
	if _, ok := p.Meta[mcp.MetaKeyLogLevel]; ok {
		return false
	}
	if v >= "2026-07-28" {
		if _, ok := p.Meta[mcp.MetaKeyClientCapabilities]; !ok {
			return false
		}
	}
	return u.plainTool(cs, p.Name)
}

// plainTool reports whether the upstream's tool binds no argument to a
// header. Only 2026-07-28 requests carry such headers; for them the fast
// path lists the session's tools once (in the background: until then,
// and for a tool the listing does not name, calls go the SDK's way).
func (u *upstream) plainTool(cs *mcp.ClientSession, name string) bool {
	if !modernSession(cs) {
		return true
	}
	f := &u.fast
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.session == cs && f.known[name] {
		return !f.bound[name]
	}
	if !f.listing && (f.session != cs || time.Since(f.listedAt) > relistAfter) {
		f.listing = true
		go u.listForFast(cs)
	}
	return false
}

func (u *upstream) listForFast(cs *mcp.ClientSession) {
	ctx, cancel := context.WithTimeout(u.ctx, u.cfg.connectTimeout)
	defer cancel()
	known, bound := map[string]bool{}, map[string]bool{}
	var err error
	for t, terr := range cs.Tools(ctx, nil) {
		if terr != nil {
			err = terr
			break
		}
		known[t.Name] = true
		if b, merr := json.Marshal(t.InputSchema); merr != nil || bytes.Contains(b, []byte("x-mcp-header")) {
			bound[t.Name] = true
		}
	}
	f := &u.fast
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listing, f.listedAt = false, time.Now()
	if err == nil {
		f.session, f.known, f.bound = cs, known, bound
	}
}

// fastCall sends the call and reads its answer, or hands the exchange
// over to the SDK.
func (u *upstream) fastCall(ctx context.Context, cs *mcp.ClientSession, p *mcp.CallToolParams) (mcp.Result, error) {
	u.fast.init(u)
	if u.fast.client == nil { // closed before its first call
		return send(ctx, cs, p)
	}
	defer func() {
		if u.fast.closed.Load() { // closed while this call ran: its connection goes too
			u.fast.closeIdle()
		}
	}()
	version := protocolOf(cs)
	modern := version >= "2026-07-28"
	q := *p
	if q.Arguments == nil {
		q.Arguments = map[string]any{} // as the SDK: never null on the wire
	}
	if modern {
		// The SDK's per-request _meta (injectRequestMeta): what mcpd set
		// stays, the version and the client's name are added.
		m := make(mcp.Meta, len(p.Meta)+2)
		maps.Copy(m, p.Meta)
		if _, ok := m[mcp.MetaKeyProtocolVersion]; !ok {
			m[mcp.MetaKeyProtocolVersion] = version
		}
		if s, ok := m[mcp.MetaKeyProtocolVersion].(string); ok {
			version = s
		}
		if _, ok := m[mcp.MetaKeyClientInfo]; !ok {
			m[mcp.MetaKeyClientInfo] = u.fast.info
		}
		q.Meta = m
	}
	id := strconv.AppendInt(nil, fastIDBase+u.fast.seq.Add(1), 10)
	body, err := u.fast.encodeCall(id, p, &q, version)
	if err != nil {
		return send(ctx, cs, p) // nothing was sent: the SDK says what is wrong
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.cfg.url, bytes.NewReader(body))
	if err != nil {
		return send(ctx, cs, p)
	}
	setCallHeaders(req.Header, version, cs.ID(), modern, "tools/call", q.Name)
	res, err := u.fast.roundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			u.fastCancelled(ctx, version, cs.ID(), modern, id)
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the SDK's client wraps it again
		}
		return u.handOver(ctx, cs, p, id, nil, err)
	}
	if sid := res.Header.Get("Mcp-Session-Id"); res.StatusCode != http.StatusOK || (sid != "" && sid != cs.ID()) {
		return u.handOver(ctx, cs, p, id, res, nil)
	}
	var msg, read []byte
	var rest io.Reader = res.Body
	stream := false
	switch mediaType(res.Header.Get("Content-Type")) {
	case "application/json":
		msg, err = readAnswer(res) // bounded by the transport (limitBody)
		read = msg
	case "text/event-stream":
		stream = true
		msg, read, err = firstEvent(res.Body, maxUpstreamMessage)
	default:
		return u.handOver(ctx, cs, p, id, res, nil)
	}
	if err != nil && ctx.Err() != nil {
		res.Body.Close()
		u.fastCancelled(ctx, version, cs.ID(), modern, id)
		return nil, ctx.Err()
	}
	if err == nil && msg != nil {
		if r, ok := fastResult(msg, id); ok {
			finish(res.Body, stream)
			return r, nil
		}
		if r, callErr, ok := sdkAnswer(msg, id); ok {
			finish(res.Body, stream)
			return r, callErr
		}
	}
	// Not the one answer the fast path reads: the SDK gets the stream
	// whole, what was read first.
	if err != nil && !errors.Is(err, io.EOF) {
		rest = errReader{err}
	}
	res.Body = prefixed{Reader: io.MultiReader(bytes.NewReader(read), rest), Closer: res.Body}
	return u.handOver(ctx, cs, p, id, res, nil)
}

// finish ends a response whose answer was read: a JSON body is closed, an
// event stream is drained a bounded amount first (in the background, as
// the SDK does: the upstream may keep it open).
func finish(body io.ReadCloser, stream bool) {
	if !stream {
		body.Close()
		return
	}
	go func() {
		_, _ = io.CopyN(io.Discard, body, fastDrainBytes)
		body.Close()
	}()
}

// sdkAnswer reads msg with the SDK's own decoding, as its client reads
// the answer to a call: ok when it is the response to id.
func sdkAnswer(msg, id []byte) (mcp.Result, error, bool) {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return nil, nil, false
	}
	r, isResp := m.(*jsonrpc.Response)
	if !isResp {
		return nil, nil, false
	}
	if n, ok := r.ID.Raw().(int64); !ok || strconv.FormatInt(n, 10) != string(id) {
		return nil, nil, false
	}
	if r.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", r.Error), true
	}
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(r.Result, res); err != nil {
		return nil, fmt.Errorf("calling %q: %w", "tools/call", err), true
	}
	return res, nil, true
}

// encodeCall is encodeCall(id, q), where q is p with the _meta fastCall
// gave it: a 2026-07-28 call whose _meta mcpd set to the capabilities
// alone (roundTrip's, from capsMeta) has its _meta encoded once per kind
// of client and version (the same map from capsMeta, the same clientInfo
// added), as encoding/json encodes q's, and the rest of q encoded
// around it.
func (f *fastPath) encodeCall(id []byte, p, q *mcp.CallToolParams, version string) ([]byte, error) {
	caps, ok := p.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	if !ok || len(p.Meta) != 1 || len(q.Meta) != 3 || q.Meta[mcp.MetaKeyClientInfo] != any(f.info) ||
		q.Meta[mcp.MetaKeyProtocolVersion] != any(version) || q.InputResponses != nil || q.RequestState != "" {
		return encodeCall(id, q)
	}
	key := reflect.ValueOf(caps).UnsafePointer()
	me := f.metaEnc.Load()
	if me == nil || me.key != key || me.version != version {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(q.Meta); err != nil {
			return encodeCall(id, q)
		}
		// The memo holds the map, so no other map takes its address.
		me = &metaEncoding{key: key, caps: caps, version: version, enc: bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})}
		f.metaEnc.Store(me)
	}
	var buf bytes.Buffer
	buf.Grow(512)
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"method":"tools/call","params":{"_meta":`)
	buf.Write(me.enc)
	buf.WriteString(`,"name":`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(q.Name); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - 1)
	if q.Arguments != nil { // omitempty: an interface is empty when nil
		buf.WriteString(`,"arguments":`)
		if err := enc.Encode(q.Arguments); err != nil {
			return nil, err
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString(`}}`)
	return buf.Bytes(), nil
}

// metaEncoding is the latest _meta encodeCall encoded.
type metaEncoding struct {
	key     unsafe.Pointer // of caps
	caps    map[string]any
	version string
	enc     []byte
}

// encodeCall is the SDK's encoding of a tools/call request
// (jsonrpc.EncodeMessage: encoding/json without HTML escapes).
func encodeCall(id []byte, p *mcp.CallToolParams) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(512) // a plain call's request (with _meta) in one allocation
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"method":"tools/call","params":`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// setCallHeaders sets what the SDK's transport sets on a request: the
// block's headers are headerTransport's.
func setCallHeaders(h http.Header, version, session string, modern bool, method, name string) {
	// Canonical keys set directly (what Header.Set does after
	// canonicalizing them), each value in a slice of its own.
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Protocol-Version"] = []string{version}
	if session != "" {
		h["Mcp-Session-Id"] = []string{session}
	}
	if modern {
		h["Mcp-Method"] = []string{method}
		if method == "tools/call" {
			h["Mcp-Name"] = []string{name}
		}
	}
}

// roundTrip sends req through the fast path's client's transport, as
// client.Do would: the client's only work besides (outbound.Client:
// no jar, no timeout, redirects refused by its transport) is copying
// the headers for redirects it never follows, a copy per call. Its errors
// are the transport's, as fastCall reads client.Do's (unwrapped).
func (f *fastPath) roundTrip(req *http.Request) (*http.Response, error) {
	res, err := f.client.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// readAnswer reads a JSON answer whole. deepBody (deep.go) reads the body
// whole before it gives a byte; its bytes are taken as they are rather
// than copied again, and a body of known length is read into a buffer of
// that size rather than one grown by doubling.
func readAnswer(res *http.Response) ([]byte, error) {
	if d, ok := res.Body.(*deepBody); ok && !d.read {
		d.read = true
		b, err := readSized(d.r, res.ContentLength)
		if err != nil {
			return nil, err
		}
		if m := mendDeep(b, d.report); m != nil {
			b = m
		}
		d.err = io.EOF
		return b, nil
	}
	return readSized(res.Body, res.ContentLength)
}

// readSized is io.ReadAll with a first buffer of n bytes (and one to see
// the end), when n is known and not large.
func readSized(r io.Reader, n int64) ([]byte, error) {
	if n <= 0 || n > 1<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, n+1)
	for {
		k, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+k]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than said: grow as io.ReadAll does
		}
	}
}

// fastCancelled tells the upstream that the call id was cancelled, as the
// SDK's client does (notifications/cancelled, best effort, within 5 s, in
// the background).
func (u *upstream) fastCancelled(ctx context.Context, version, session string, modern bool, id []byte) {
	reason, _ := json.Marshal(ctx.Err().Error())
	body := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":` + string(reason) + `,"requestId":` + string(id) + `}}`)
	go func() {
		nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		req, err := http.NewRequestWithContext(nctx, http.MethodPost, u.cfg.url, bytes.NewReader(body))
		if err != nil {
			return
		}
		setCallHeaders(req.Header, version, session, modern, "notifications/cancelled", "")
		if res, err := u.fast.client.Do(req); err == nil {
			_, _ = io.CopyN(io.Discard, res.Body, fastDrainBytes)
			res.Body.Close()
		}
	}()
}

func mediaType(v string) string {
	t, _, err := mime.ParseMediaType(v)
	if err != nil {
		return ""
	}
	return t
}

// firstEvent reads an event stream up to the end of its first event with
// data, and returns that data (as the SDK reads it: trimmed) and every
// byte read, so that the stream can be handed over whole. msg is nil when
// the stream is not of the plain form the fast path reads (a line that is
// not a field, an event named other than message, data on several lines,
// an event over max, the end before the event's blank line).
func firstEvent(body io.Reader, max int) (msg, read []byte, err error) {
	buf := make([]byte, 0, 2048)
	off, eventStart := 0, 0
	ds, de := -1, -1
	for {
		nl := bytes.IndexByte(buf[off:], '\n')
		if nl < 0 {
			if len(buf)-eventStart > max {
				return nil, buf, nil
			}
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			n, rerr := body.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if rerr != nil {
				return nil, buf, rerr
			}
			continue
		}
		line := buf[off : off+nl]
		off += nl + 1
		if off-eventStart > max {
			return nil, buf, nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			if ds >= 0 {
				if data := bytes.TrimSpace(buf[ds:de]); len(data) > 0 {
					return data, buf, nil
				}
			}
			// An event without data (a priming event): the SDK skips it.
			ds, de, eventStart = -1, -1, off
			continue
		}
		field, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			return nil, buf, nil
		}
		switch string(field) {
		case "event":
			if name := string(bytes.TrimSpace(value)); name != "" && name != "message" {
				return nil, buf, nil
			}
		case "data":
			if ds >= 0 {
				return nil, buf, nil
			}
			ds = off - nl - 1 + len(field) + 1
			de = ds + len(value)
		}
	}
}

// prefixed is a response body read partly: what was read, then the rest.
type prefixed struct {
	io.Reader
	io.Closer
}

// errReader fails as the body failed.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
