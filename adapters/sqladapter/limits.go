package sqladapter

import (
	"encoding/base64"
	"time"
	"unicode/utf8"
)

// defaultMaxBytes is max_bytes when neither the tool nor its database sets
// it: 1 MiB of values per call.
const defaultMaxBytes = 1 << 20

// fitValue converts one scanned value as jsonValue does, in at most room
// bytes: a longer text is cut at a character boundary and ends with "…",
// a longer binary value is cut before it is encoded. size is what the
// value counts against max_bytes: the bytes of its text (binary: of its
// base64), 8 for a number, boolean or null. cut reports a value that was
// cut. Converting only what fits means a huge value is never encoded or
// copied whole (the driver has read it whole already: no driver can skip
// part of a value).
func fitValue(v any, k colKind, room int) (out any, size int, cut bool) {
	room = max(room, 0)
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case []byte:
		if (k == kindText || k == kindDecimal || k == kindJSON) && utf8.Valid(x) {
			if len(x) > room {
				return cutText(string(x[:runeCut(x, room)])), room, true
			}
			return jsonValue(x, k), len(x), false
		}
		if k == kindBit {
			return jsonValue(x, k), 8, false
		}
		if n := base64.StdEncoding.EncodedLen(len(x)); n > room {
			keep := room / 4 * 3
			return base64.StdEncoding.EncodeToString(x[:keep]), base64.StdEncoding.EncodedLen(keep), true
		}
		return jsonValue(x, k), base64.StdEncoding.EncodedLen(len(x)), false
	case time.Time:
		return jsonValue(x, k), 32, false
	default:
		return jsonValue(v, k), 8, false
	}
	if len(text) > room {
		return cutText(text[:runeCut([]byte(text[:min(len(text), room+utf8.UTFMax)]), room)]), room, true
	}
	return jsonValue(text, k), len(text), false
}

// runeCut is the largest n <= limit at which b can be cut without
// splitting a UTF-8 character.
func runeCut(b []byte, limit int) int {
	n := min(limit, len(b))
	for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}

func cutText(s string) string { return s + "…" }
