package serve

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Writing a large tool result without copying it.
//
// Encoded as the SDK encodes it, a tool result of 1 MB of text is copied
// four times before it reaches the socket: TextContent.MarshalJSON makes
// the content's JSON, CallToolResult.MarshalJSON copies that into the
// result's JSON, the encoder of the response copies that again, and the
// response buffer a last time (growing by doubling, so it makes twice the
// result's size in garbage on its way). Under mcpd's GC policy (GOGC=400,
// cmd/mcpd/gc.go) garbage stays until the heap is five times what was live
// at the last collection, so 64 such calls at once peaked at about 5 times
// the bytes in flight (BenchmarkResultMemory).
//
// The fast path writes a result with large texts itself: it encodes the
// result with each large text (and the structured content, which goes with
// it: SQL results have both) replaced by a placeholder, which makes a
// small skeleton, then writes the skeleton through a small buffer with the
// texts escaped straight from the strings the call made, as encoding/json
// escapes them. The structured content is encoded once, into a buffer the
// endpoint reuses. What a call allocates for its answer no longer grows
// with its result (64 calls of a static tool's 1 MB text allocate 2.8 MB
// in all, against 270 MB before); TestFastPathDifferential holds the bytes
// to the SDK's.

// spliceMin is the length from which a text content is written this way;
// a result of shorter texts is encoded whole, which costs less CPU.
const spliceMin = 16 << 10

// methodLargeResult is what fastPath.served hears, besides the method, of
// a result written this way: tests check their corpus reaches it.
const methodLargeResult = "tools/call (large result)"

// maxPooled is the largest buffer given back to a pool: a rare huge
// result's buffer is left to the collector.
const maxPooled = 4 << 20

// splicer holds what the endpoint reuses from one large answer to the next.
type splicer struct {
	token   string    // the placeholders' prefix: random, so no text holds it
	writers sync.Pool // of *bufio.Writer
	bufs    sync.Pool // of *bytes.Buffer
}

func newSplicer() *splicer {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return &splicer{token: "mcpd-splice-" + hex.EncodeToString(b) + "-"}
}

func (sp *splicer) buffer() *bytes.Buffer {
	if b, ok := sp.bufs.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (sp *splicer) putBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooled {
		b.Reset()
		sp.bufs.Put(b)
	}
}

// piece is one placeholder of a skeleton: where it is, and what replaces it.
type piece struct {
	at, end int    // the quoted placeholder's bounds in the skeleton
	text    string // a text content, escaped when written
	raw     []byte // else the structured content's encoding, written as is
}

// writeLarge writes res as fastPath.write would when it has a large text,
// and reports false, having written nothing, when it has none or when
// anything is unusual (the caller then encodes it whole).
func (fp *fastPath) writeLarge(w http.ResponseWriter, id []byte, res *mcp.CallToolResult) bool {
	large := 0
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && len(tc.Text) >= spliceMin {
			large++
		}
	}
	if large == 0 {
		return false
	}
	sp := fp.splice
	// A copy of the result with placeholders: the result itself may be
	// shared (a static tool's content, a cached result).
	skel := *res
	skel.Content = slices.Clone(res.Content)
	pieces := make([]piece, 0, large+1)
	for i, c := range skel.Content {
		if tc, ok := c.(*mcp.TextContent); ok && len(tc.Text) >= spliceMin {
			ph := sp.token + strconv.Itoa(len(pieces))
			skel.Content[i] = &mcp.TextContent{Text: ph, Meta: tc.Meta, Annotations: tc.Annotations}
			pieces = append(pieces, piece{at: -1, text: tc.Text})
		}
	}
	buf := sp.buffer()
	defer sp.putBuffer(buf)
	if res.StructuredContent != nil {
		// Encoded as CallToolResult.MarshalJSON encodes it, by json.Marshal
		// (HTML escaped), before anything is written: a value that does
		// not encode goes back to the caller, which answers as the SDK does.
		sbuf := sp.buffer()
		defer sp.putBuffer(sbuf)
		if err := json.NewEncoder(sbuf).Encode(res.StructuredContent); err != nil {
			return false
		}
		skel.StructuredContent = sp.token + strconv.Itoa(len(pieces))
		pieces = append(pieces, piece{at: -1, raw: bytes.TrimSuffix(sbuf.Bytes(), []byte{'\n'})})
	}
	if fp.sse {
		buf.WriteString("event: message\ndata: ")
	}
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"result":`)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(&skel) != nil {
		return false
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	buf.WriteByte('}')
	b := buf.Bytes()
	for i := range pieces {
		ph := []byte(`"` + sp.token + strconv.Itoa(i) + `"`)
		at := bytes.Index(b, ph)
		if at < 0 || bytes.Contains(b[at+len(ph):], ph) {
			return false
		}
		pieces[i].at, pieces[i].end = at, at+len(ph)
	}
	slices.SortFunc(pieces, func(x, y piece) int { return x.at - y.at })

	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache, no-transform")
	if fp.sse {
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Connection", "keep-alive")
	} else {
		hdr.Set("Content-Type", "application/json")
	}
	bw, _ := sp.writers.Get().(*bufio.Writer)
	if bw == nil {
		bw = bufio.NewWriterSize(w, 32<<10)
	} else {
		bw.Reset(w)
	}
	last := 0
	for _, p := range pieces {
		bw.Write(b[last:p.at])
		if p.raw != nil {
			bw.Write(p.raw)
		} else {
			writeJSONString(bw, p.text)
		}
		last = p.end
	}
	bw.Write(b[last:])
	if fp.sse {
		bw.WriteString("\n\n")
	}
	bw.Flush()
	bw.Reset(nil)
	sp.writers.Put(bw)
	if fp.sse {
		_ = http.NewResponseController(w).Flush()
	}
	return true
}

// writeJSONString writes s as a JSON string exactly as json.Marshal
// encodes it (encoding/json's appendString with HTML escaping, which
// TextContent.MarshalJSON uses): <, > and & escaped, control characters
// as \b \f \n \r \t or \u00XX, each invalid UTF-8 byte as \ufffd, U+2028
// and U+2029 escaped. TestWriteJSONString holds it to json.Marshal.
func writeJSONString(w *bufio.Writer, s string) {
	const hexDigits = "0123456789abcdef"
	w.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			w.WriteString(s[start:i])
			switch b {
			case '\\', '"':
				w.WriteByte('\\')
				w.WriteByte(b)
			case '\b':
				w.WriteString(`\b`)
			case '\f':
				w.WriteString(`\f`)
			case '\n':
				w.WriteString(`\n`)
			case '\r':
				w.WriteString(`\r`)
			case '\t':
				w.WriteString(`\t`)
			default:
				w.WriteString(`\u00`)
				w.WriteByte(hexDigits[b>>4])
				w.WriteByte(hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			w.WriteString(s[start:i])
			w.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			w.WriteString(s[start:i])
			w.WriteString(`\u202`)
			w.WriteByte(hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	w.WriteString(s[start:])
	w.WriteByte('"')
}
