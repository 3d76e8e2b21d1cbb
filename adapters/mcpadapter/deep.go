package mcpadapter

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// Messages nested deeper than the SDK decodes.
//
// The SDK's client refuses a whole message nested more than sdkMaxDepth
// levels deep (go-sdk internal/json: defaultMaxDepth), and a message it
// cannot decode ends the session. One tool whose schema is nested past
// that in an upstream's tools/list made the whole listing fail, every tool
// of the upstream disappear, and the session end and be made again, for
// ever. So every message an upstream sends is measured before the SDK
// reads it (a scan of its brackets, as the SDK's own check), and one too
// deep is mended so that it costs only what is too deep:
//
//   - in a listing's result (tools, prompts, resources, resourceTemplates),
//     the entries too deep are left out, each reported;
//   - any other response becomes an error response to the same request,
//     which fails that request only;
//   - a request or notification is left out (the upstream's request is
//     not answered; it times out on its side).

// sdkMaxDepth is the go-sdk's JSON nesting limit (internal/json).
const sdkMaxDepth = 1000

// deepReport is told what was left out of a message: kind ("tool",
// "prompt", "resource", "resourceTemplate", "response", "message") and
// its name when it has one.
type deepReport func(kind, name string)

// listKinds are the listing results' arrays and the kind of their entries.
var listKinds = map[string]string{`"tools"`: "tool", `"prompts"`: "prompt", `"resources"`: "resource", `"resourceTemplates"`: "resourceTemplate"}

// mendDeep returns msg (one JSON-RPC message) as it is when the SDK can
// decode its depth, mended when it cannot, or nil when it is to be left
// out.
func mendDeep(msg []byte, report deepReport) []byte {
	if bracketDepth(msg) <= sdkMaxDepth {
		return msg
	}
	trimmed := bytes.TrimSpace(msg)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		report("message", "")
		return nil
	}
	if end, _ := skipValue(trimmed, 0); end != len(trimmed) {
		return msg // not one whole value: the SDK's verdict
	}
	var id, method, result []byte
	var resStart, resEnd int
	members(trimmed, 0, func(key []byte, vs, ve int) {
		switch string(key) {
		case `"id"`:
			id = trimmed[vs:ve]
		case `"method"`:
			method = trimmed[vs:ve]
		case `"result"`:
			result, resStart, resEnd = trimmed[vs:ve], vs, ve
		}
	})
	if id == nil || method != nil {
		report("message", methodName(method))
		return nil
	}
	if result != nil && result[0] == '{' {
		// A listing: leave out the entries too deep. The envelope, the
		// result and the array are three levels.
		var out []byte
		last := 0
		members(result, 0, func(key []byte, vs, ve int) {
			kind, ok := listKinds[string(key)]
			if !ok || result[vs] != '[' {
				return
			}
			var kept [][]byte
			elements(result, vs, func(es, ee int) {
				e := result[es:ee]
				if 3+bracketDepth(e) > sdkMaxDepth {
					report(kind, entryName(e))
					return
				}
				kept = append(kept, e)
			})
			out = append(out, result[last:vs]...)
			out = append(out, '[')
			out = append(out, bytes.Join(kept, []byte(","))...)
			out = append(out, ']')
			last = ve
		})
		if out != nil {
			out = append(out, result[last:]...)
			mended := append(append(append([]byte(nil), trimmed[:resStart]...), out...), trimmed[resEnd:]...)
			if bracketDepth(mended) <= sdkMaxDepth {
				return append(mended, '\n')
			}
		}
	}
	report("response", "")
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32603,"message":"mcpd: the upstream's answer is nested more than ` + strconv.Itoa(sdkMaxDepth) + ` levels deep"}}` + "\n")
}

// bracketDepth is how deeply objects and arrays nest in data, counted
// as the SDK counts (brackets outside strings).
func bracketDepth(data []byte) int {
	_, most := scanBrackets(data, 0, false)
	return most
}

// scanBrackets walks data from i, counting the brackets outside strings.
// With stop, it returns just after the bracket that closes the one at i
// (-1: data ends first); without, it walks all of data (end is -1). most
// is the deepest nesting seen.
func scanBrackets(data []byte, i int, stop bool) (end, most int) {
	depth := 0
	inString, escaped := false, false
	for j := i; j < len(data); j++ {
		b := data[j]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			most = max(most, depth)
		case b == '}' || b == ']':
			if depth--; stop && depth == 0 {
				return j + 1, most
			}
		}
	}
	return -1, most
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// skipValue returns the end of the value at data[i:] (after spaces), and
// false when data ends first. It does not check the syntax: the SDK
// decodes what it passes.
func skipValue(data []byte, i int) (int, bool) {
	i = skipSpace(data, i)
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return len(data), false
	case '{', '[':
		if end, _ := scanBrackets(data, i, true); end >= 0 {
			return end, true
		}
		return len(data), false
	}
	j := i
	for j < len(data) && !isSpace(data[j]) && data[j] != ',' && data[j] != '}' && data[j] != ']' {
		j++
	}
	return j, true
}

// members calls f with each member of the object at data[i] (its key as
// written, quotes included, and its value's span).
func members(data []byte, i int, f func(key []byte, vs, ve int)) {
	i = skipSpace(data, i) + 1 // {
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return
		}
		ke, ok := skipValue(data, i)
		if !ok {
			return
		}
		key := data[i:ke]
		i = skipSpace(data, ke)
		if i >= len(data) || data[i] != ':' {
			return
		}
		vs := skipSpace(data, i+1)
		ve, ok := skipValue(data, vs)
		if !ok {
			return
		}
		f(key, vs, ve)
		i = skipSpace(data, ve)
		if i >= len(data) || data[i] != ',' {
			return
		}
		i++
	}
}

// elements calls f with the span of each element of the array at data[i].
func elements(data []byte, i int, f func(es, ee int)) {
	i = skipSpace(data, i) + 1 // [
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] == ']' {
			return
		}
		ee, ok := skipValue(data, i)
		if !ok {
			return
		}
		f(i, ee)
		i = skipSpace(data, ee)
		if i >= len(data) || data[i] != ',' {
			return
		}
		i++
	}
}

// entryName is the "name" (or "uri") of a listing's entry, for the report.
func entryName(e []byte) string {
	var name, uri string
	if len(e) == 0 || e[0] != '{' {
		return ""
	}
	members(e, 0, func(key []byte, vs, ve int) {
		switch string(key) {
		case `"name"`:
			_ = json.Unmarshal(e[vs:ve], &name)
		case `"uri"`, `"uriTemplate"`:
			_ = json.Unmarshal(e[vs:ve], &uri)
		}
	})
	if name == "" {
		return uri
	}
	return name
}

func methodName(raw []byte) string {
	var m string
	_ = json.Unmarshal(raw, &m)
	return m
}

// deepLines mends the messages of a newline-delimited stream (a stdio
// upstream's stdout) or, with sse, of an event stream's data lines. A line
// longer than max is passed on as it is: the SDK's own line limit refuses
// it.
type deepLines struct {
	r      io.ReadCloser
	report deepReport
	sse    bool
	max    int
	buf    []byte // read, not yet split into lines
	rbuf   []byte // what buf is read into
	line   []byte // the line being gathered
	long   bool   // the line being gathered passed max: passed on as read
	out    []byte
	err    error
}

func (d *deepLines) Close() error { return d.r.Close() }

func (d *deepLines) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if len(d.buf) == 0 {
			if d.err != nil {
				if len(d.line) > 0 { // a last line without its newline
					d.out, d.line = d.mend(d.line), nil
					continue
				}
				return 0, d.err
			}
			// out, which may hold a part of rbuf, is passed on whole.
			if d.rbuf == nil {
				d.rbuf = make([]byte, 32<<10)
			}
			n, err := d.r.Read(d.rbuf)
			d.buf, d.err = d.rbuf[:n], err
			continue
		}
		i := bytes.IndexByte(d.buf, '\n')
		chunk := d.buf
		if i >= 0 {
			chunk = d.buf[:i+1]
		}
		d.buf = d.buf[len(chunk):]
		if d.long {
			d.out = chunk
			d.long = i < 0
			continue
		}
		if i >= 0 && len(d.line) == 0 { // the usual case: a whole line read
			d.out = d.mend(chunk)
			continue
		}
		d.line = append(d.line, chunk...)
		if i < 0 {
			if len(d.line) > d.max {
				d.out, d.line, d.long = d.line, nil, true
			}
			continue
		}
		d.out, d.line = d.mend(d.line), nil
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// mend mends one line (its newline included).
func (d *deepLines) mend(line []byte) []byte {
	if !d.sse {
		return mendDeep(line, d.report)
	}
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return line
	}
	m := mendDeep(data, d.report)
	if m == nil {
		// An event without data is skipped by the SDK.
		return nil
	}
	if len(m) == len(data) {
		return line
	}
	return append([]byte("data: "), m...)
}

// deepBody mends a JSON response body (one message) once it is read
// whole; the body's own limit (limitBody) bounds that.
type deepBody struct {
	r      io.ReadCloser
	report deepReport
	out    []byte
	read   bool
	err    error
}

func (d *deepBody) Close() error { return d.r.Close() }

func (d *deepBody) Read(p []byte) (int, error) {
	if !d.read {
		d.read = true
		b, err := io.ReadAll(d.r)
		if err != nil {
			return 0, err
		}
		if m := mendDeep(b, d.report); m != nil {
			b = m
		}
		d.out, d.err = b, io.EOF
	}
	if len(d.out) == 0 {
		return 0, d.err
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}
