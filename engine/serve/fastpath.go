package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/resultbuf"
	"github.com/mcpd/mcpd/engine/schema"
)

// The stateless fast path.
//
// A 2026-07-28 request over HTTP is one POST that carries everything it
// needs. The SDK serves it as it serves a session: it reads the body, decodes
// the batch, checks the headers against the body, connects a session of one
// request (a jsonrpc2 connection, goroutines, a stream), decodes the message
// again, then its _meta, then its params, runs the receiving middleware
// (observe, then mcpd's middleware, which answers from the snapshot), and
// encodes the result into an event. Most of the CPU of a cheap call is that
// machinery, not the call.
//
// fastPath serves the tools/call, tools/list, server/discover, prompts/get
// and resources/read requests it is sure of itself: it decodes the body
// once, with the strict Scanner of engine/schema, checks what the SDK
// checks, builds the same mcp.Request the SDK would build (with no session:
// a request without a session is a fast path request, which is 2026-07-28
// by construction; see isModernSession), runs the same middleware chain
// (observe and mcpd's middleware, so the same snapshot call, limits, budget,
// audit, metrics, spans and console events), finishes the result as the
// SDK's ServerSession.handle does (resultType, _meta serverInfo; the answer
// to server/discover, which the SDK computes, is rebuilt from what the SDK
// server was given: Server.discover) and writes
// it as the SDK's streamable transport does (an SSE event, or JSON with
// JSONResponse; a protocol error as JSON with the status SEP-2575 gives it).
//
// What it is not sure of, it leaves to the SDK untouched (the body it read
// put back): any other method, a request carrying a progress token, a log
// level, inputResponses or a requestState, an unknown or repeated key, a
// header that does not match the body, an escaped name, a body of unknown
// length or over 64 KiB, a batch, a session id, any Accept or Content-Type
// but the plain ones. The SDK then answers as it always has, errors
// included. TestFastPathDifferential and FuzzFastPath send the same requests
// through both and compare the answers byte for byte.
type fastPath struct {
	s       *Server
	ep      *endpoint         // the endpoint (toolset) it answers for
	handle  mcp.MethodHandler // observe(middleware(...)), as the SDK runs them
	sse     bool              // !HTTPOptions.JSONResponse
	maxBody int64
	served  func(method string) // tests: called for every request served here
	splice  *splicer            // large tool results (fastwrite.go)
	meta    metaCache           // the SDK's reading of _meta objects (fastmeta.go)
	// legacy: it answers in 2025-11-25 sessions (fastlegacy.go), where no
	// error has an HTTP status of its own.
	legacy bool
}

// fastMaxBody bounds the bodies the fast path reads: larger ones are rare,
// and the SDK's costs are then mostly the body's.
const fastMaxBody = 64 << 10

// Method and _meta names the fast path reads.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps      = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
	metaServerInfo      = "io.modelcontextprotocol/serverInfo"
)

func newFastPath(s *Server, opts HTTPOptions, ep *endpoint) *fastPath {
	maxBody := opts.MaxBody
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	var next mcp.MethodHandler = func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		if method == "server/discover" {
			return s.discover(ep), nil
		}
		// mcpd's middleware answers every other method the fast path
		// takes without calling on; were that to change, this error would
		// show in the differential test.
		return nil, errors.New("mcpd: fast path method not answered by the middleware")
	}
	h := s.middleware(next, ep.toolset)
	if !s.opts.bare {
		h = s.observe(h, ep.toolset)
	}
	return &fastPath{s: s, ep: ep, handle: h, sse: !opts.JSONResponse, maxBody: maxBody, splice: newSplicer()}
}

// fastRequest is what the fast path decodes of a request.
type fastRequest struct {
	method     string
	id         []byte // the id as the SDK echoes it
	name       string // tools/call, prompts/get; the URI of resources/read
	args       json.RawMessage
	promptArgs map[string]string
	cursor     string // tools/list
	meta       mcp.Meta
	caps       bool   // clientCapabilities is more than {}
	info       bool   // clientInfo is present
	capsRaw    []byte // their bytes (fastmeta.go)
	infoRaw    []byte
	capsV      *mcp.ClientCapabilities // the SDK's reading of them (fastmeta.go)
	infoV      *mcp.Implementation
	seen       uint32
	versionOK  bool
}

// serve serves r and reports true, or reports false having changed nothing
// the SDK reads (a body it read is put back).
func (fp *fastPath) serve(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header
	method := h.Get("Mcp-Method")
	switch method {
	case "tools/call", "tools/list", "server/discover", "prompts/get", "resources/read":
	default:
		return false
	}
	if r.Method != http.MethodPost || h.Get("Mcp-Protocol-Version") != protocol2026 ||
		len(h.Values("Mcp-Session-Id")) > 0 || len(h.Values("Last-Event-Id")) > 0 ||
		!plainJSON(h.Get("Content-Type")) || !acceptsBoth(h.Values("Accept")) {
		return false
	}
	body, ok := readFastBody(r, fp.maxBody)
	if !ok {
		return false
	}
	fr := fastRequest{method: method}
	req, ok := fp.decode(&fr, body, r)
	if !ok {
		r.Body = readBack{bytes.NewReader(body), r.Body}
		return false
	}
	if fp.served != nil {
		fp.served(method)
	}
	ctx := r.Context()
	if fr.capsV != nil && (method == "tools/call" || method == "prompts/get") {
		ctx = withClientCaps(ctx, req, fr.capsV) // for the middleware (fastmeta.go)
	}
	var lease *resultbuf.Lease
	if method == "tools/call" {
		// The answer is written here, so a tool's result may be built in
		// buffers given back once it is (engine/resultbuf).
		lease = fp.s.results.Lease()
		ctx = resultbuf.With(ctx, lease)
	}
	res, err := fp.handle(ctx, method, req)
	if err == nil && res != nil {
		finishResult(res, fp.ep.impl)
	}
	fp.write(w, r, fr.id, res, err)
	lease.Release(res)
	return true
}

// readFastBody reads a body of known length up to fastMaxBody and limit,
// or reports false having read none of it, or having put back what it read.
func readFastBody(r *http.Request, limit int64) ([]byte, bool) {
	n := r.ContentLength
	if n <= 0 || n > fastMaxBody || n > limit {
		return nil, false
	}
	body := make([]byte, n+1)
	k, err := io.ReadFull(r.Body, body)
	if err != io.ErrUnexpectedEOF || int64(k) != n {
		// A read error, or a body longer than its Content-Length (not
		// from net/http's server, which ends a body there): the SDK reads
		// on from here and meets the same.
		r.Body = readBack{io.MultiReader(bytes.NewReader(body[:k]), r.Body), r.Body}
		return nil, false
	}
	return body[:n], true
}

// readBack is a request body partly or wholly read by the fast path, put
// back for the SDK.
type readBack struct {
	io.Reader
	c io.Closer
}

func (b readBack) Close() error { return b.c.Close() }

// plainJSON reports whether a Content-Type is one the SDK takes as
// application/json; others go to the SDK, which judges them.
func plainJSON(ct string) bool {
	return ct == "application/json" || strings.EqualFold(ct, "application/json") ||
		strings.EqualFold(ct, "application/json; charset=utf-8") || strings.EqualFold(ct, "application/json;charset=utf-8")
}

// acceptsBoth is the SDK's check of Accept (streamableAccepts): both
// application/json and text/event-stream, by their base media types.
func acceptsBoth(values []string) bool {
	if len(values) == 1 && values[0] == "application/json, text/event-stream" {
		return true
	}
	jsonOK, streamOK := false, false
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK && streamOK
}

// Keys seen, so that a repeated one sends the request to the SDK.
const (
	seenJSONRPC = 1 << iota
	seenID
	seenMethod
	seenParams
	seenMeta
	seenName
	seenArgs
	seenCursor
	seenVersion
	seenCaps
	seenInfo
)

// decode reads body as the SDK would, and builds the request the SDK
// would give the middleware; false for anything it is not sure of.
func (fp *fastPath) decode(fr *fastRequest, body []byte, r *http.Request) (mcp.Request, bool) {
	if !fr.decodeEnvelope(body) {
		return nil, false
	}
	// _meta: the version the header gave (checked by the SDK's transport
	// against the header), and client capabilities (the SDK refuses a
	// request without them).
	if !fr.versionOK || fr.seen&seenCaps == 0 {
		return nil, false
	}
	// What the SDK's ClientCapabilities and ClientInfo return for them
	// (nil: the SDK cannot read them, and answers -32602), read once.
	fr.capsV = fp.meta.capabilities(fr.capsRaw, fr.meta[metaClientCaps].(map[string]any))
	if fr.info {
		fr.infoV = fp.meta.clientInfo(fr.infoRaw, fr.meta[metaClientInfo].(map[string]any))
	}
	if (fr.caps && fr.capsV == nil) || (fr.info && fr.infoV == nil) {
		return nil, false // the SDK's -32602
	}
	extra := &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}
	var req mcp.Request
	switch fr.method {
	case "tools/call":
		if fr.seen&seenName == 0 || fr.name == "" || r.Header.Get("Mcp-Name") != fr.name || fr.name == marker {
			return nil, false
		}
		req = &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Meta: fr.meta, Name: fr.name, Arguments: fr.args}, Extra: extra}
	case "tools/list":
		if fr.seen&(seenName|seenArgs) != 0 {
			return nil, false
		}
		req = &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{Meta: fr.meta, Cursor: fr.cursor}, Extra: extra}
	case "prompts/get", "resources/read":
		if fr.seen&seenName == 0 || fr.name == "" || r.Header.Get("Mcp-Name") != fr.name {
			return nil, false
		}
		if fr.method == "prompts/get" {
			req = &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Meta: fr.meta, Name: fr.name, Arguments: fr.promptArgs}, Extra: extra}
			break
		}
		req = &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{Meta: fr.meta, URI: fr.name}, Extra: extra}
	case "server/discover":
		if fr.seen&(seenName|seenArgs|seenCursor) != 0 {
			return nil, false
		}
		req = &mcp.ServerRequest[*mcp.DiscoverParams]{Params: &mcp.DiscoverParams{Meta: fr.meta}, Extra: extra}
	default:
		return nil, false
	}
	return req, true
}

// decodeEnvelope reads body, one JSON-RPC request of fr.method, into fr:
// false for anything else (a batch, not JSON, an unknown or repeated key).
func (fr *fastRequest) decodeEnvelope(body []byte) bool {
	var sc schema.Scanner
	sc.Reset(body)
	if sc.Peek() != '{' {
		return false // a batch, or not JSON: the SDK's answer
	}
	ok := sc.Object(func(key []byte) bool {
		switch string(key) {
		case "jsonrpc":
			v, ok := sc.String()
			return once(fr, seenJSONRPC) && ok && string(v) == "2.0"
		case "id":
			return once(fr, seenID) && fr.readID(&sc)
		case "method":
			v, ok := sc.String()
			return once(fr, seenMethod) && ok && string(v) == fr.method
		case "params":
			return once(fr, seenParams) && fr.readParams(&sc)
		}
		return false
	})
	return ok && sc.End() && fr.seen&(seenJSONRPC|seenID|seenMethod|seenParams) == seenJSONRPC|seenID|seenMethod|seenParams
}

func once(fr *fastRequest, bit uint32) bool {
	if fr.seen&bit != 0 {
		return false
	}
	fr.seen |= bit
	return true
}

// readID reads an id the SDK echoes exactly as fr.id has it: an integer
// (the SDK reads a float64 and writes an int64) or a string of printable
// ASCII without escapes.
func (fr *fastRequest) readID(sc *schema.Scanner) bool {
	switch c := sc.Peek(); {
	case c == '"':
		v, ok := sc.String()
		if !ok {
			return false
		}
		for _, b := range v {
			if b < 0x20 || b > 0x7e {
				return false
			}
		}
		fr.id = make([]byte, 0, len(v)+2)
		fr.id = append(append(append(fr.id, '"'), v...), '"')
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		n, ok := sc.Int()
		if !ok {
			return false
		}
		fr.id = strconv.AppendInt(nil, n, 10)
		return true
	}
	return false
}

func (fr *fastRequest) readParams(sc *schema.Scanner) bool {
	if sc.Peek() != '{' {
		return false
	}
	call, list := fr.method == "tools/call", fr.method == "tools/list"
	prompt, read := fr.method == "prompts/get", fr.method == "resources/read"
	return sc.Object(func(key []byte) bool {
		switch string(key) {
		case "_meta":
			return once(fr, seenMeta) && fr.readMeta(sc)
		case "name", "uri":
			if (string(key) == "name") != (call || prompt) || (string(key) == "uri") != read {
				return false
			}
			v, ok := sc.String()
			fr.name = string(v)
			return once(fr, seenName) && ok
		case "arguments":
			if prompt {
				return once(fr, seenArgs) && fr.readPromptArgs(sc)
			}
			if !call || sc.Peek() != '{' {
				return false
			}
			v, ok := sc.Raw()
			fr.args = v
			return once(fr, seenArgs) && ok
		case "cursor":
			if !list {
				return false
			}
			v, ok := sc.String()
			fr.cursor = string(v)
			return once(fr, seenCursor) && ok
		}
		return false
	})
}

// readPromptArgs reads the arguments of prompts/get, which the SDK decodes
// into a map[string]string: an object of strings, here without escapes.
func (fr *fastRequest) readPromptArgs(sc *schema.Scanner) bool {
	if sc.Peek() != '{' {
		return false
	}
	fr.promptArgs = map[string]string{}
	return sc.Object(func(key []byte) bool {
		v, ok := sc.String()
		if !ok {
			return false
		}
		if _, dup := fr.promptArgs[string(key)]; dup {
			return false
		}
		fr.promptArgs[string(key)] = string(v)
		return true
	})
}

// readMeta reads the _meta of a request: its protocol version, client
// capabilities and client info, and nothing else (a progress token, a log
// level, a trace context: the SDK's).
func (fr *fastRequest) readMeta(sc *schema.Scanner) bool {
	if sc.Peek() != '{' {
		return false
	}
	fr.meta = make(mcp.Meta, 3)
	return sc.Object(func(key []byte) bool {
		switch string(key) {
		case metaProtocolVersion:
			v, ok := sc.String()
			fr.versionOK = ok && string(v) == protocol2026
			fr.meta[metaProtocolVersion] = protocol2026
			return once(fr, seenVersion) && fr.versionOK
		case metaClientCaps:
			raw, v, ok := rawObjectNoNumbers(sc)
			fr.meta[metaClientCaps], fr.capsRaw = v, raw
			fr.caps = ok && len(v) > 0
			return once(fr, seenCaps) && ok
		case metaClientInfo:
			raw, v, ok := rawObjectNoNumbers(sc)
			fr.meta[metaClientInfo], fr.infoRaw = v, raw
			fr.info = true
			return once(fr, seenInfo) && ok
		}
		return false
	})
}

// objectNoNumbers reads an object as encoding/json decodes it into an any.
// Numbers are refused: the Scanner keeps them exact, encoding/json makes
// them float64s, and an object of the _meta is visible to the code below.
func objectNoNumbers(sc *schema.Scanner) (map[string]any, bool) {
	if sc.Peek() != '{' {
		return nil, false
	}
	v, ok := sc.Value()
	if !ok || hasNumber(v) {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// rawObjectNoNumbers is objectNoNumbers, with the bytes it read.
func rawObjectNoNumbers(sc *schema.Scanner) ([]byte, map[string]any, bool) {
	raw, ok := sc.Raw()
	if !ok {
		return nil, nil, false
	}
	var sub schema.Scanner
	sub.Reset(raw)
	v, ok := objectNoNumbers(&sub)
	return raw, v, ok && sub.End()
}

func hasNumber(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if hasNumber(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNumber(e) {
				return true
			}
		}
	case string, bool, nil:
	default:
		return true
	}
	return false
}

// discover is the SDK's answer to server/discover (Server.discover) for
// a stateless request: the server's versions (a stateless transport
// serves them all), its capabilities and instructions as given to the
// SDK, and the cache fields as SetCacheable sets them.
func (s *Server) discover(ep *endpoint) *mcp.DiscoverResult {
	return &mcp.DiscoverResult{
		Cacheable:         mcp.Cacheable{TTLMs: int(s.opts.ListTTL / time.Millisecond), CacheScope: "public"},
		SupportedVersions: mcp.SupportedProtocolVersions(),
		Capabilities:      s.caps,
		Instructions:      ep.instructions,
	}
}

// finishResult does to a 2026-07-28 result what the SDK's
// ServerSession.handle does after the middleware: resultType "complete" on
// the results that have one (mcpd's middleware gives those of tools/call
// it already), and the server's info in _meta.
func finishResult(res mcp.Result, impl *mcp.Implementation) {
	switch r := res.(type) {
	case *mcp.ListToolsResult:
		r.ResultType = "complete"
	case *mcp.DiscoverResult:
		r.ResultType = "complete"
	}
	m := res.GetMeta()
	if m == nil {
		m = map[string]any{}
	}
	if _, ok := m[metaServerInfo]; ok {
		return
	}
	m[metaServerInfo] = impl
	res.SetMeta(m)
}

// write answers as the SDK's streamable transport answers a stateless
// request of one call: the JSON-RPC response encoded as jsonrpc2 encodes it
// (no HTML escaping), in one SSE event or as JSON; a protocol error whose
// code SEP-2575 maps to an HTTP status, as JSON with that status.
func (fp *fastPath) write(w http.ResponseWriter, r *http.Request, id []byte, res mcp.Result, err error) {
	if cr, ok := res.(*mcp.CallToolResult); ok && err == nil && fp.writeLarge(w, id, cr) {
		if fp.served != nil {
			fp.served(methodLargeResult)
		}
		return
	}
	var buf bytes.Buffer
	buf.Grow(512) // a plain call's answer in one allocation, not four
	if fp.sse {
		buf.WriteString("event: message\ndata: ")
	}
	start := buf.Len()
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var encErr error
	switch {
	case err != nil:
		buf.WriteString(`,"error":`)
		encErr = enc.Encode(wireError(err))
	case res != nil:
		buf.WriteString(`,"result":`)
		encErr = enc.Encode(res)
	default:
		encErr = errors.New("nil result")
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache, no-transform")
	if fp.sse {
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Connection", "keep-alive")
	} else {
		hdr.Set("Content-Type", "application/json")
	}
	if encErr != nil {
		// The SDK logs the result it cannot encode and writes nothing;
		// the response ends when the client gives up.
		fp.s.sdkLogger.Error("mcpd: encoding a result: " + encErr.Error())
		<-r.Context().Done()
		return
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.WriteByte('}')
	if status := errorStatus(err); status != 0 && !fp.legacy {
		hdr.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(buf.Bytes()[start:])
		return
	}
	if !fp.sse {
		w.Write(buf.Bytes())
		return
	}
	buf.WriteString("\n\n")
	w.Write(buf.Bytes())
	_ = http.NewResponseController(w).Flush()
}

// wireError is the error object jsonrpc2 writes for err.
func wireError(err error) *jsonrpc.Error {
	if je, ok := err.(*jsonrpc.Error); ok {
		return je
	}
	out := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		out.Code = wrapped.Code
	}
	return out
}

// errorStatus is the HTTP status SEP-2575 gives a protocol error (the
// SDK's extractErrorStatus); 0 for the others.
func errorStatus(err error) int {
	var je *jsonrpc.Error
	if err == nil || !errors.As(err, &je) {
		return 0
	}
	switch je.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}
