package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/mcpd/mcpd/engine/adapter"
)

// decodeJSON decodes raw into the values encoding/json produces for an
// `any` (map[string]any, []any, string, bool, nil), without reflection,
// except for numbers, which are exact (see Number). Arguments are decoded on
// every call, and encoding/json's reflective path was most of what mcpd
// added to the SDK's own cost of a call. Anything unusual (escaped strings,
// invalid JSON, deep nesting) is handed to encoding/json, so values and
// syntax errors are always exactly encoding/json's. A number too large for
// a float64 (1e400) in valid JSON is a *RangeError naming where it sits.
func decodeJSON(raw []byte) (any, error) {
	d := decoder{data: raw}
	d.skipSpace()
	v, err := d.value(0)
	if err == nil {
		d.skipSpace()
		if d.pos != len(d.data) {
			err = errFallback
		}
	}
	if err != nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var x any
		derr := dec.Decode(&x)
		if derr != nil || len(bytes.TrimLeft(raw[dec.InputOffset():], " \t\r\n")) > 0 {
			// encoding/json's verdict, with the message clients have
			// always seen.
			var y any
			if err := json.Unmarshal(raw, &y); err != nil {
				return nil, err
			}
			if derr != nil {
				return nil, derr
			}
		}
		return exactNumbers(x, "")
	}
	return v, nil
}

// Number converts the text of a JSON number as arguments carry it; see
// adapter.Number.
func Number(lit string) (any, error) { return adapter.Number(lit) }

// RangeError is a number in the arguments that no 64-bit type holds.
type RangeError struct {
	Path string // "" for the arguments as a whole; "a.b[2]" inside
	Lit  string
}

func (e *RangeError) Error() string {
	lit := e.Lit
	if len(lit) > 40 {
		lit = lit[:37] + "..."
	}
	if e.Path == "" {
		return fmt.Sprintf("the number %s is out of range: it is beyond what a 64-bit float holds (about ±1.8e308)", lit)
	}
	return fmt.Sprintf("%s is out of range: %s is beyond what a 64-bit float holds (about ±1.8e308)", what(e.Path), lit)
}

// exactNumbers replaces the json.Numbers of encoding/json's output (the
// fallback path) with Number's values.
func exactNumbers(x any, path string) (any, error) {
	switch v := x.(type) {
	case json.Number:
		n, err := Number(string(v))
		if err != nil {
			return nil, &RangeError{Path: path, Lit: string(v)}
		}
		return n, nil
	case []any:
		for i := range v {
			e, err := exactNumbers(v[i], path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			v[i] = e
		}
	case map[string]any:
		for k := range v {
			e, err := exactNumbers(v[k], join(path, k))
			if err != nil {
				return nil, err
			}
			v[k] = e
		}
	}
	return x, nil
}

// errFallback asks for encoding/json's verdict on the whole input.
var errFallback = errors.New("fall back to encoding/json")

// maxDepth bounds the fast path's recursion; deeper input goes to
// encoding/json, which has its own limit.
const maxDepth = 64

type decoder struct {
	data []byte
	pos  int
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) || depth > maxDepth {
		return nil, errFallback
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.string()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case d.literal("true"):
		return true, nil
	case d.literal("false"):
		return false, nil
	case d.literal("null"):
		return nil, nil
	}
	return nil, errFallback
}

func (d *decoder) literal(lit string) bool {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

func (d *decoder) object(depth int) (any, error) {
	d.pos++ // {
	m := map[string]any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, errFallback
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, errFallback
		}
		d.pos++
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, errFallback
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, errFallback
		}
	}
}

func (d *decoder) array(depth int) (any, error) {
	d.pos++ // [
	a := []any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return a, nil
	}
	for {
		d.skipSpace()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, errFallback
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return a, nil
		default:
			return nil, errFallback
		}
	}
}

// string decodes a string without escapes, of printable ASCII or valid
// UTF-8; others (escapes, control characters, invalid UTF-8) fall back.
func (d *decoder) string() (string, error) {
	start := d.pos + 1
	ascii := true
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			s := d.data[start:i]
			if !ascii && !utf8.Valid(s) {
				return "", errFallback
			}
			d.pos = i + 1
			return string(s), nil
		case c == '\\' || c < 0x20:
			return "", errFallback
		case c >= 0x80:
			ascii = false
		}
	}
	return "", errFallback
}

// number decodes a number of JSON's grammar (see Number).
func (d *decoder) number() (any, error) {
	start, i := d.pos, d.pos
	n := len(d.data)
	if i < n && d.data[i] == '-' {
		i++
	}
	switch {
	case i < n && d.data[i] == '0':
		i++
	case i < n && d.data[i] >= '1' && d.data[i] <= '9':
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
	default:
		return nil, errFallback
	}
	if i < n && d.data[i] == '.' {
		i++
		if i >= n || d.data[i] < '0' || d.data[i] > '9' {
			return nil, errFallback
		}
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
	}
	if i < n && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < n && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if i >= n || d.data[i] < '0' || d.data[i] > '9' {
			return nil, errFallback
		}
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
	}
	v, err := Number(string(d.data[start:i]))
	if err != nil {
		// Out of range: encoding/json checks the rest of the input
		// (a syntax error wins) and exactNumbers names the argument.
		return nil, errFallback
	}
	d.pos = i
	return v, nil
}

// ParseNumber reads text that must be exactly one JSON number (a URI
// template variable declared as a number, say) and returns Number's value.
// Anything else, including Go-only forms such as 0x10, 1_000 or Inf, and
// surrounding spaces, is not a number.
func ParseNumber(s string) (any, bool) {
	d := decoder{data: []byte(s)}
	v, err := d.value(0)
	if err != nil || d.pos != len(s) {
		return nil, false
	}
	switch v.(type) {
	case int64, float64:
		return v, true
	}
	return nil, false
}
