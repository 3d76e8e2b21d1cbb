package sqladapter

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// A result's text is the JSON of its rows, an array of objects whose keys
// are in column order:
//
//	[{"id":17,"title":"The Hobbit","year":1937}]
//
// It is what a model reads and what a client that ignores structuredContent
// parses; a result cut at max_rows or max_bytes adds a line that says so
// (truncationNote). The structured result, when the tool declares an
// output_schema, holds the same rows.

// appendRow appends one row as a JSON object, its values in column order.
func appendRow(b []byte, names []string, vals []any) []byte {
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
		b = append(b, ':')
		b = appendValue(b, vals[i])
	}
	return append(b, '}')
}

// appendValue appends a value of jsonValue's kinds as encoding/json
// encodes it (without its HTML escapes, which a text does not need).
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendFloat(b, x)
	case string:
		return appendString(b, x)
	}
	// A JSON column's decoded value: arrays and objects.
	j, err := json.Marshal(v)
	if err != nil {
		return appendString(b, err.Error())
	}
	return append(b, j...)
}

// appendFloat formats f as encoding/json does: the shortest form that reads
// back exactly, in exponent form only for very large and very small values.
// NaN and infinities never get here (jsonValue makes them strings).
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced with U+FFFD, and U+2028 and
// U+2029 escaped as encoding/json does (JavaScript reads them as line ends).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// truncationNote is the line that follows the rows' JSON when the result
// was cut, or "" when it was not.
func truncationNote(shown int, truncated, overBytes bool, maxBytes int) string {
	switch {
	case overBytes:
		return "(" + plural(shown, "row") + " shown; the result was cut at max_bytes (" + byteSize(maxBytes) +
			"), and a value that did not fit ends with …. Select fewer or shorter columns (substr() of long text), or fewer rows (WHERE, LIMIT))"
	case truncated:
		return "(" + plural(shown, "row") + " shown; the query returned more, cut at max_rows)"
	}
	return ""
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// byteSize is n bytes in words: "1 MiB", "64 KiB", "1500 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return plural(n, "byte")
}
