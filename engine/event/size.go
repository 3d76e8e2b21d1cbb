package event

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Size is the length of json.Marshal(res), the audit log's bytes_out. The
// SDK encodes the result when it writes the response, after every
// observer has run, so the size is counted rather than taken from the
// encoding: for the tool results mcpd builds (text, image and audio
// contents, structured content decoded from JSON or built by expr) it is
// counted by walking the result, which costs no allocation; anything else
// (prompts, reads, _meta, annotations, input_required) is encoded to a
// counter. complete says the result carries resultType "complete", which
// serve sets on the results of 2026-07-28 requests (the field is not
// readable here). 0 when res does not encode.
//
// TestSize holds the walk to json.Marshal's output.
func Size(res mcp.Result, complete bool) int {
	if r, ok := res.(*mcp.CallToolResult); ok {
		if n, ok := callSize(r, complete); ok {
			return n
		}
	}
	return encodedSize(res)
}

// counter counts what is written to it.
type counter struct{ n int }

func (c *counter) Write(p []byte) (int, error) {
	c.n += len(p)
	return len(p), nil
}

func encodedSize(v any) int {
	if v == nil {
		return 0
	}
	var c counter
	if err := json.NewEncoder(&c).Encode(v); err != nil {
		return 0
	}
	return c.n - 1 // Encode ends the value with a newline
}

// The fixed parts of the encodings the walk counts (see mcp's MarshalJSON
// methods).
const (
	lenContentKey    = len(`"content":`)
	lenStructuredKey = len(`,"structuredContent":`)
	lenIsError       = len(`,"isError":true`)
	lenComplete      = len(`,"resultType":"complete"`)
	lenText          = len(`{"type":"text","text":}`)
	lenImage         = len(`{"type":"image","mimeType":,"data":}`)
	lenAudio         = len(`{"type":"audio","mimeType":,"data":}`)
)

func callSize(r *mcp.CallToolResult, complete bool) (int, bool) {
	if len(r.Meta) != 0 || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() {
		return 0, false
	}
	n := 2 + lenContentKey // {}
	if r.Content == nil {
		n += 4
	} else {
		n += 2 + max(len(r.Content)-1, 0) // [] and commas
		for _, c := range r.Content {
			cn, ok := contentSize(c)
			if !ok {
				return 0, false
			}
			n += cn
		}
	}
	if r.StructuredContent != nil {
		vn, ok := valueSize(r.StructuredContent)
		if !ok {
			return 0, false
		}
		n += lenStructuredKey + vn
	}
	if r.IsError {
		n += lenIsError
	}
	if complete {
		n += lenComplete
	}
	return n, true
}

func contentSize(c mcp.Content) (int, bool) {
	switch c := c.(type) {
	case *mcp.TextContent:
		if len(c.Meta) != 0 || c.Annotations != nil {
			return 0, false
		}
		return lenText + stringSize(c.Text), true
	case *mcp.ImageContent:
		if len(c.Meta) != 0 || c.Annotations != nil {
			return 0, false
		}
		return lenImage + stringSize(c.MIMEType) + 2 + base64.StdEncoding.EncodedLen(len(c.Data)), true
	case *mcp.AudioContent:
		if len(c.Meta) != 0 || c.Annotations != nil {
			return 0, false
		}
		return lenAudio + stringSize(c.MIMEType) + 2 + base64.StdEncoding.EncodedLen(len(c.Data)), true
	}
	return 0, false
}

// valueSize is the length of the encoding of a value decoded from JSON or
// built by expr; false for a type it does not know.
func valueSize(v any) (int, bool) {
	switch v := v.(type) {
	case nil:
		return 4, true
	case bool:
		if v {
			return 4, true
		}
		return 5, true
	case string:
		return stringSize(v), true
	case float64:
		return floatSize(v)
	case int:
		return intSize(int64(v)), true
	case int64:
		return intSize(v), true
	case int32:
		return intSize(int64(v)), true
	case json.Number:
		if v == "" {
			return 1, true // "0"
		}
		return len(v), true
	case map[string]any:
		if v == nil {
			return 4, true
		}
		n := 2 + max(len(v)-1, 0)
		for k, e := range v {
			en, ok := valueSize(e)
			if !ok {
				return 0, false
			}
			n += stringSize(k) + 1 + en
		}
		return n, true
	case []any:
		if v == nil {
			return 4, true
		}
		n := 2 + max(len(v)-1, 0)
		for _, e := range v {
			en, ok := valueSize(e)
			if !ok {
				return 0, false
			}
			n += en
		}
		return n, true
	}
	return 0, false
}

func intSize(i int64) int {
	var buf [24]byte
	return len(strconv.AppendInt(buf[:0], i, 10))
}

// floatSize follows encoding/json's float encoder: 'f' format, or 'e'
// for very small and very large magnitudes, with e-09 shortened to e-9.
func floatSize(f float64) (int, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false // does not encode
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	n := len(b)
	if format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		n--
	}
	return n, true
}

// stringSize is the length of s encoded as json.Marshal does: quoted,
// with HTML characters, U+2028, U+2029 and invalid UTF-8 escaped.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
