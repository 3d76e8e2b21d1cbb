package sqladapter

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpd/mcpd/engine/adapter"
)

// How column values become JSON values (see docs/adapter-sql.md):
//
//	NULL                         null
//	integers within ±(2^53-1)    numbers
//	larger integers              decimal strings (exact; JSON readers lose digits past 2^53)
//	NUMERIC / DECIMAL            decimal strings (exact)
//	floats                       numbers; NaN and ±Infinity as strings
//	booleans                     true / false (SQLite: columns declared BOOLEAN)
//	DATE                         "2006-01-02"
//	timestamps                   RFC 3339 in UTC, fractional seconds as needed
//	text                         strings
//	JSON / JSONB                 the decoded JSON value
//	binary (BLOB, BYTEA, ...)    base64 strings
//
// Drivers differ in what they hand back for the same SQL type (MySQL returns
// text as []byte; PostgreSQL returns NUMERIC as a string), so the column's
// declared type decides how bytes are read.

// maxSafeInt is the largest integer a float64 (a JSON reader's number)
// holds exactly.
const maxSafeInt = 1<<53 - 1

// colKind is how to read one column's values.
type colKind uint8

const (
	kindAuto    colKind = iota // by the Go type alone; bytes are binary
	kindText                   // bytes are text (MySQL strings, XML)
	kindBinary                 // bytes are binary
	kindDecimal                // exact decimal: keep as a string
	kindJSON                   // decode into a JSON value
	kindDate                   // a date without a time
	kindFloat32                // single precision: print the shortest form
	kindBit                    // MySQL BIT: a big-endian unsigned integer
	kindBool                   // SQLite BOOLEAN: 0 and 1 are false and true
)

// columnKind reads a column's database type name (as database/sql reports
// it: "VARCHAR", "NUMERIC", "varchar(20)" for SQLite's declared types).
func columnKind(d dialect, dbType string) colKind {
	t := strings.ToUpper(strings.TrimSpace(dbType))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	switch t {
	case "JSON", "JSONB":
		return kindJSON
	case "DATE":
		return kindDate
	case "NUMERIC", "DECIMAL":
		return kindDecimal
	case "FLOAT4", "REAL", "FLOAT":
		if d == postgres && t == "FLOAT4" || d == mysql && t == "FLOAT" {
			return kindFloat32
		}
	case "XML":
		return kindText
	case "BIT":
		if d == mysql {
			return kindBit
		}
	case "BOOLEAN", "BOOL":
		if d == sqlite {
			return kindBool
		}
	}
	if d == mysql {
		switch t {
		case "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY", "GEOMETRY":
			return kindBinary
		}
		return kindText
	}
	return kindAuto
}

// jsonValue converts one scanned value. The result is one of nil, bool,
// int64, float64, string, []any, map[string]any.
func jsonValue(v any, k colKind) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		if k == kindBool && (x == 0 || x == 1) {
			return x == 1
		}
		if x > maxSafeInt || x < -maxSafeInt {
			return strconv.FormatInt(x, 10)
		}
		return x
	case uint64:
		if x > maxSafeInt {
			return strconv.FormatUint(x, 10)
		}
		return int64(x)
	case float64:
		if k == kindFloat32 {
			return floatValue(float64(float32(x)), 32)
		}
		return floatValue(x, 64)
	case float32:
		return floatValue(float64(x), 32)
	case bool:
		return x
	case time.Time:
		if k == kindDate {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case string:
		if k == kindJSON {
			return decodeJSON([]byte(x), x)
		}
		return x
	case []byte:
		switch k {
		case kindJSON:
			if utf8.Valid(x) {
				return decodeJSON(x, string(x))
			}
		case kindText, kindDecimal:
			if utf8.Valid(x) {
				return string(x)
			}
		case kindBit:
			var n uint64
			for _, c := range x {
				n = n<<8 | uint64(c)
			}
			return jsonValue(n, kindAuto)
		}
		return base64.StdEncoding.EncodeToString(x)
	}
	return fmt.Sprint(v)
}

// floatValue is a float as a JSON number, printed by the shortest form of
// its precision (so that a REAL 0.1 is 0.1, not 0.10000000149011612).
func floatValue(f float64, bits int) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	if bits == 32 {
		f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
	}
	return f
}

// decodeJSON reads a JSON column with exact numbers: an id of
// 9007199254740993 inside a document stays that number.
func decodeJSON(b []byte, fallback string) any {
	v, err := adapter.DecodeJSON(b)
	if err != nil {
		return fallback // a column declared JSON that holds something else
	}
	return v
}
