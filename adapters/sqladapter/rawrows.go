package sqladapter

import (
	"database/sql"
	"encoding/base64"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// The text-only path. A tool whose rows nothing reads but the text (no
// output_schema, no result or logs block) needs each value only until it
// is appended to the text; yet every value read through database/sql
// into an `any` is a fresh copy (database/sql clones a driver's []byte;
// pgx's database/sql driver copies each text into a string), garbage as
// soon as the text has it, and under mcpd's GC policy (GOGC=400) garbage
// is what makes a process several times the bytes in flight
// (BenchmarkResultMemory in engine/serve). So this path reads the driver's
// values where they lie, for as long as one row: through a sql.Scanner,
// which database/sql hands the driver's own value (MySQL's text and blobs
// are views of its read buffer), and on PostgreSQL straight from pgx
// (pgrows.go). The text it builds is byte for byte the one collect
// builds (TestRawTextMatches).

// rawRows is a result read one row at a time, its values views of the
// driver's memory that are valid until the next call of next or close.
type rawRows interface {
	// next reads the next row: false at the end or on an error (err).
	next() bool
	// values are the row's values, as the driver gives them: nil, int64,
	// uint64, float64, float32, bool, time.Time, string, []byte, or what
	// jsonValue reads otherwise. Strings and []byte may be views.
	values() ([]any, error)
	err() error
	close() error
}

// rawValue is a sql.Scanner that keeps what database/sql hands it: the
// driver's value itself, without the copy it makes for an *any.
type rawValue struct{ v any }

func (r *rawValue) Scan(src any) error {
	r.v = src
	return nil
}

// sqlRawRows reads *sql.Rows through rawValue scanners.
type sqlRawRows struct {
	rows *sql.Rows
	dest []rawValue
	ptrs []any
	vals []any
}

func newSQLRawRows(rows *sql.Rows, n int) *sqlRawRows {
	r := &sqlRawRows{rows: rows, dest: make([]rawValue, n), ptrs: make([]any, n), vals: make([]any, n)}
	for i := range r.dest {
		r.ptrs[i] = &r.dest[i]
	}
	return r
}

func (r *sqlRawRows) next() bool { return r.rows.Next() }
func (r *sqlRawRows) err() error { return r.rows.Err() }
func (r *sqlRawRows) close() error {
	return r.rows.Close()
}

func (r *sqlRawRows) values() ([]any, error) {
	if err := r.rows.Scan(r.ptrs...); err != nil {
		return nil, err
	}
	for i := range r.dest {
		r.vals[i], r.dest[i].v = r.dest[i].v, nil
	}
	return r.vals, nil
}

// collectText is collect for a tool whose rows nothing reads but the
// text: the same rows, cut at the same places, the same text, built from
// values that are views of the driver's memory and never kept past their
// row. stop is called before the rest of the result is discarded.
func (h *handler) collectText(rows rawRows, names []string, kinds []colKind, stop func(), bufs *resultbuf.Lease) (*adapter.Output, error) {
	vals := make([]any, len(names))
	nrows := 0
	text := make([]byte, 0, 256)
	text = append(text, '[')
	truncated, overBytes := false, false
	used := 0
	for rows.next() {
		if nrows == h.maxRows {
			truncated = true
			break
		}
		raw, err := rows.values()
		if err != nil {
			return nil, err
		}
		size, cut := 0, false
		for i, name := range names {
			size += len(name)
			v, n, c := fitView(raw[i], kinds[i], h.maxBytes-used-size)
			vals[i], size, cut = v, size+n, cut || c
		}
		keep := !(cut || used+size > h.maxBytes)
		if !keep {
			truncated, overBytes = true, true
			stop()
		}
		if keep || nrows == 0 {
			if nrows > 0 {
				text = append(text, ',')
			}
			text = appendViewRow(h.growText(text, size, bufs), names, vals)
			nrows++
		}
		clear(vals) // nothing of the row outlives it
		if !keep {
			break
		}
		used += size
	}
	if truncated {
		rows.close() // discards the rest; its error does not spoil the rows we have
	} else if err := rows.err(); err != nil {
		return nil, err
	}
	text = append(text, ']')
	if note := truncationNote(nrows, truncated, overBytes, h.maxBytes); note != "" {
		text = append(append(text, '\n'), note...)
	}
	return &adapter.Output{Text: textString(text, bufs)}, nil
}

// textString is the result's text over its buffer, which is not written
// again: a copy would double what the call holds. A lent buffer is reused
// once the answer is written, so its spare room costs nothing past the
// call; a plain allocation with much spare room is copied, since the
// string would keep all of it alive.
func textString(text []byte, bufs *resultbuf.Lease) string {
	if !bufs.Lent(text) && cap(text)-len(text) > len(text)/4+4096 {
		return string(text)
	}
	return unsafe.String(&text[0], len(text))
}

// b64 is a binary value, written as its base64 text: what jsonValue
// encodes into a new string, appendViewRow encodes into the text.
type b64 []byte

// fitView is fitValue for a value that may be a view of the driver's
// memory: the same value, size and cut, but where fitValue copies a
// text into a string or encodes a binary value into one, fitView returns
// a string over the same bytes, or the bytes as b64. What it returns is a
// view too: appended to the text before the row's end, and never kept.
func fitView(v any, k colKind, room int) (out any, size int, cut bool) {
	x, ok := v.([]byte)
	if !ok {
		return fitValue(v, k, room)
	}
	switch {
	case (k == kindText || k == kindDecimal) && utf8.Valid(x):
		// fitValue reads valid text the same as a string or as bytes.
		return fitValue(unsafe.String(unsafe.SliceData(x), len(x)), k, room)
	case k == kindJSON && utf8.Valid(x), k == kindBit:
		return fitValue(x, k, room)
	}
	// Every other []byte is base64 (fitValue's last case).
	room = max(room, 0)
	if n := base64.StdEncoding.EncodedLen(len(x)); n > room {
		keep := room / 4 * 3
		return b64(x[:keep]), base64.StdEncoding.EncodedLen(keep), true
	}
	return b64(x), base64.StdEncoding.EncodedLen(len(x)), false
}

// appendViewRow is appendRow for fitView's values.
func appendViewRow(b []byte, names []string, vals []any) []byte {
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, name)
		b = append(b, ':')
		if x, ok := vals[i].(b64); ok {
			// base64 needs no JSON escapes.
			b = append(base64.StdEncoding.AppendEncode(append(b, '"'), x), '"')
			continue
		}
		b = appendValue(b, vals[i])
	}
	return append(b, '}')
}
