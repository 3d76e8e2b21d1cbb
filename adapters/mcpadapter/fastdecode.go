package mcpadapter

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast path's decoder (fastcall.go) of the one answer to a tools/call:
// it reads the common form of a result, text blocks and isError, in one
// pass over the bytes with deep.go's scanner, where the SDK decodes the
// message, then the result, each through a new decoder with its own
// 32 KiB buffer. It is a second reading of what the SDK reads, so it
// answers only what it is sure to read alike, and declines the rest
// (fastAnswer then hands the same bytes to the SDK's own decoding):
// invalid JSON, a key it does not know (the SDK ignores those; matching
// them is the SDK's business), a key written twice or with escapes, a
// string it would have to repair (invalid UTF-8, escapes decoding to
// U+FFFD), anything but text content, structuredContent, a _meta with
// numbers, escapes or many keys, input_required. FuzzFastResult holds it to the SDK's reading: whatever
// it accepts, the SDK reads as the same result.

// resultComplete is a result the SDK read with resultType "complete" (a
// field the SDK keeps unexported): a copy of it carries that, so that a
// result read here is the SDK's to the last field. Never written.
var resultComplete = func() mcp.CallToolResult {
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &r); err != nil {
		panic("mcpadapter: the SDK does not read a complete result: " + err.Error())
	}
	return r
}()

// fastResult reads msg, one JSON-RPC message, as the response with id
// (its digits) carrying a result of the common form; ok is false for
// anything else.
func fastResult(msg, id []byte) (res *mcp.CallToolResult, ok bool) {
	if !json.Valid(msg) {
		return nil, false
	}
	i := skipSpace(msg, 0)
	if i >= len(msg) || msg[i] != '{' {
		return nil, false
	}
	var seenVersion, seenID bool
	rs, re := -1, -1
	bad := false
	members(msg, i, func(key []byte, vs, ve int) {
		v := msg[vs:ve]
		switch string(key) {
		case `"jsonrpc"`:
			bad = bad || seenVersion || string(v) != `"2.0"`
			seenVersion = true
		case `"id"`:
			bad = bad || seenID || !bytes.Equal(v, id)
			seenID = true
		case `"result"`:
			bad = bad || rs >= 0
			rs, re = vs, ve
		default:
			bad = true
		}
	})
	if bad || !seenVersion || !seenID || rs < 0 || msg[rs] != '{' {
		return nil, false
	}
	return readResult(msg[rs:re])
}

// readResult reads a result object of the common form.
func readResult(data []byte) (*mcp.CallToolResult, bool) {
	var content []mcp.Content
	var meta mcp.Meta
	var seenContent, seenError, seenType, isError, complete bool
	bad := false
	members(data, 0, func(key []byte, vs, ve int) {
		if bad {
			return
		}
		v := data[vs:ve]
		switch string(key) {
		case `"content"`:
			if seenContent || v[0] != '[' {
				bad = true
				return
			}
			seenContent = true
			content, bad = readContent(v)
		case `"isError"`:
			if seenError || (string(v) != "true" && string(v) != "false") {
				bad = true
				return
			}
			seenError, isError = true, string(v) == "true"
		case `"_meta"`:
			if meta != nil || v[0] != '{' {
				bad = true
				return
			}
			m, ok := readPlain(v, 0)
			if !ok {
				bad = true
				return
			}
			meta = m.(map[string]any)
		case `"resultType"`:
			if seenType || string(v) != `"complete"` {
				bad = true
				return
			}
			seenType, complete = true, true
		default:
			bad = true
		}
	})
	if bad {
		return nil, false
	}
	res := new(mcp.CallToolResult)
	if complete {
		*res = resultComplete
	}
	if content == nil {
		content = []mcp.Content{} // the SDK's, for no content or an empty array
	}
	res.Content, res.IsError, res.Meta = content, isError, meta
	return res, true
}

// readContent reads an array of text blocks.
func readContent(arr []byte) ([]mcp.Content, bool) {
	n := 0
	bad := false
	elements(arr, 0, func(es, ee int) { n++ })
	out := make([]mcp.Content, 0, n)
	elements(arr, 0, func(es, ee int) {
		if bad {
			return
		}
		e := arr[es:ee]
		if e[0] != '{' {
			bad = true
			return
		}
		var seenType, seenText bool
		text := ""
		members(e, 0, func(key []byte, vs, ve int) {
			v := e[vs:ve]
			switch string(key) {
			case `"type"`:
				bad = bad || seenType || string(v) != `"text"`
				seenType = true
			case `"text"`:
				if seenText || v[0] != '"' {
					bad = true
					return
				}
				seenText = true
				s, ok := readString(v)
				bad = bad || !ok
				text = s
			default:
				bad = true
			}
		})
		if !seenType {
			bad = true
		}
		out = append(out, &mcp.TextContent{Text: text})
	})
	return out, bad
}

// readString reads a JSON string (quotes included) that needs no repair:
// as it is when it has no escapes, through encoding/json when it has.
func readString(v []byte) (string, bool) {
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if !utf8.Valid(body) {
			return "", false
		}
		return string(body), true
	}
	if !utf8.Valid(body) {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil || strings.ContainsRune(s, utf8.RuneError) {
		return "", false
	}
	return s, true
}

// readPlain reads v, a value of a result's _meta, when it is of the
// kinds encoding/json and the SDK's decoder read alike (FuzzFastResult):
// objects without a key written twice (at most 8 keys), arrays, ASCII
// strings without escapes, true, false and null; no numbers (two parsers
// of floats are two roundings to trust). An upstream's serverInfo is such.
func readPlain(v []byte, depth int) (any, bool) {
	if depth > sdkMaxDepth {
		return nil, false
	}
	switch v[0] {
	case '{':
		ok := true
		m := map[string]any{}
		members(v, 0, func(key []byte, vs, ve int) {
			if !ok {
				return
			}
			k, kok := plainString(key)
			if _, dup := m[k]; !kok || dup || len(m) == 8 {
				ok = false
				return
			}
			m[k], ok = readPlain(v[vs:ve], depth+1)
		})
		return m, ok
	case '[':
		ok := true
		a := []any{}
		elements(v, 0, func(es, ee int) {
			if !ok {
				return
			}
			var e any
			e, ok = readPlain(v[es:ee], depth+1)
			a = append(a, e)
		})
		return a, ok
	case '"':
		return plainString(v)
	}
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return nil, true
	}
	return nil, false
}

// plainString reads a JSON string (quotes included) of printable ASCII
// without escapes.
func plainString(v []byte) (string, bool) {
	for _, b := range v[1 : len(v)-1] {
		if b < 0x20 || b >= 0x7f || b == '\\' {
			return "", false
		}
	}
	return string(v[1 : len(v)-1]), true
}
