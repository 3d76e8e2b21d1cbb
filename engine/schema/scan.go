package schema

import "unicode/utf8"

// Scanner reads one JSON document with the decoder of decodeJSON, strictly:
// every method reports false for anything its fast path would hand to
// encoding/json (escaped keys and names, deep nesting, invalid UTF-8, a
// number out of range), instead of falling back. It is for the stateless
// fast path of engine/serve, which decodes a request envelope once and
// gives anything it is not sure of to the SDK, which then decodes it as it
// always has. The zero Scanner is ready after Reset.
type Scanner struct{ d decoder }

// Reset starts reading data.
func (s *Scanner) Reset(data []byte) { s.d = decoder{data: data} }

// Object reads an object, calling each with every key (which must be
// free of escapes), the Scanner placed at the key's value: each must read
// the value (String, Raw, Value, Object...) and return true, or return
// false to stop. Object reports whether the whole object was read.
func (s *Scanner) Object(each func(key []byte) bool) bool {
	d := &s.d
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return false
	}
	d.pos++
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return true
	}
	for {
		d.skipSpace()
		k, ok := s.plainString()
		if !ok {
			return false
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return false
		}
		d.pos++
		d.skipSpace()
		if !each(k) {
			return false
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return false
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return true
		default:
			return false
		}
	}
}

// String reads a string free of escapes and control characters, of valid
// UTF-8, and returns its bytes (a slice of the input).
func (s *Scanner) String() ([]byte, bool) {
	s.d.skipSpace()
	return s.plainString()
}

func (s *Scanner) plainString() ([]byte, bool) {
	d := &s.d
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, false
	}
	start := d.pos
	if _, err := d.string(); err != nil {
		return nil, false
	}
	return d.data[start+1 : d.pos-1], true
}

// Int reads an integer written as digits with an optional minus sign,
// of at most 15 digits (so that a float64 holds it exactly).
func (s *Scanner) Int() (int64, bool) {
	d := &s.d
	d.skipSpace()
	i, neg := d.pos, false
	if i < len(d.data) && d.data[i] == '-' {
		neg = true
		i++
	}
	start := i
	var n int64
	for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
		n = n*10 + int64(d.data[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 15 || (digits > 1 && d.data[start] == '0') {
		return 0, false
	}
	if i < len(d.data) {
		switch d.data[i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	d.pos = i
	if neg {
		n = -n
	}
	return n, true
}

// Value reads any value as decodeJSON's fast path decodes it (numbers
// exact: int64 or float64).
func (s *Scanner) Value() (any, bool) {
	s.d.skipSpace()
	v, err := s.d.value(0)
	return v, err == nil
}

// Raw reads any value of valid JSON, checking its syntax without decoding
// it, and returns its bytes (a slice of the input). Unlike the rest of the
// Scanner it accepts escapes in strings, as JSON has them: what it returns
// is decoded later, by whoever it is given to.
func (s *Scanner) Raw() ([]byte, bool) {
	d := &s.d
	d.skipSpace()
	start := d.pos
	if !s.skip(0) {
		return nil, false
	}
	return d.data[start:d.pos], true
}

// End reports whether nothing but white space is left.
func (s *Scanner) End() bool {
	s.d.skipSpace()
	return s.d.pos == len(s.d.data)
}

// Peek returns the next byte that is not white space, 0 at the end.
func (s *Scanner) Peek() byte {
	s.d.skipSpace()
	if s.d.pos >= len(s.d.data) {
		return 0
	}
	return s.d.data[s.d.pos]
}

func (s *Scanner) skip(depth int) bool {
	d := &s.d
	if d.pos >= len(d.data) || depth > maxDepth {
		return false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			return true
		}
		for {
			d.skipSpace()
			if !s.skipString() {
				return false
			}
			d.skipSpace()
			if d.pos >= len(d.data) || d.data[d.pos] != ':' {
				return false
			}
			d.pos++
			d.skipSpace()
			if !s.skip(depth + 1) {
				return false
			}
			d.skipSpace()
			if d.pos >= len(d.data) {
				return false
			}
			switch d.data[d.pos] {
			case ',':
				d.pos++
			case '}':
				d.pos++
				return true
			default:
				return false
			}
		}
	case c == '[':
		d.pos++
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			return true
		}
		for {
			d.skipSpace()
			if !s.skip(depth + 1) {
				return false
			}
			d.skipSpace()
			if d.pos >= len(d.data) {
				return false
			}
			switch d.data[d.pos] {
			case ',':
				d.pos++
			case ']':
				d.pos++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return s.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.number()
		return err == nil
	case d.literal("true"), d.literal("false"), d.literal("null"):
		return true
	}
	return false
}

// skipString reads a string with JSON's escapes; control characters and
// invalid UTF-8 are refused.
func (s *Scanner) skipString() bool {
	d := &s.d
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return false
	}
	i := d.pos + 1
	ascii := true
	start := i
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			if !ascii && !utf8.Valid(d.data[start:i]) {
				return false
			}
			d.pos = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if i+1 >= len(d.data) {
				return false
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d.data) {
					return false
				}
				for _, h := range d.data[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 6
			default:
				return false
			}
			continue
		case c >= 0x80:
			ascii = false
		}
		i++
	}
	return false
}
