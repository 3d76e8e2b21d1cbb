package schema

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// decodeJSON decodes raw into the values encoding/json produces for an
// `any` (map[string]any, []any, string, float64, bool, nil), without
// reflection. Arguments are decoded on every call, and encoding/json's
// reflective path was most of what mcpd added to the SDK's own cost of a
// call. Anything unusual (escaped strings, invalid JSON, numbers out of
// range, deep nesting) is handed to encoding/json, so values and error
// messages are always exactly encoding/json's.
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
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			return nil, err
		}
		return x, nil
	}
	return v, nil
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

// number decodes a number of JSON's grammar as a float64.
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
	f, err := strconv.ParseFloat(string(d.data[start:i]), 64)
	if err != nil {
		return nil, errFallback // out of range: encoding/json's error
	}
	d.pos = i
	return f, nil
}
