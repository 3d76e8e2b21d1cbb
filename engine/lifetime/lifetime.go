// Package lifetime reads the lifetimes that peers send mcpd: an
// authorization server's expires_in and the exp of the tokens it issues, a
// backend's Retry-After, an introspection answer's exp. They are untrusted
// numbers, and each is bounded here, where it enters, to [Min, Max]:
//
//   - Min (1s): a peer that says "this lasts no time" (expires_in of 0.001,
//     an exp a moment away) would otherwise make mcpd ask it again on every
//     call; with the floor it is asked at most about once a second per key.
//     A token that really dies sooner is refused by its backend, and the
//     401 makes mcpd fetch a new one.
//   - Max (24h): a peer that says "forever" (expires_in of 1e30 or 2^63,
//     which overflow a time.Duration and used to read as already expired)
//     is asked again within a day, so a revoked credential or rotated key
//     is not kept without end.
//
// Zero, negative, NaN and unreadable values are no lifetime at all (ok is
// false): the caller uses its own default, as for a peer that said nothing.
package lifetime

import (
	"math"
	"time"
)

// The bounds of every lifetime read from a peer.
const (
	Min = time.Second
	Max = 24 * time.Hour
)

// Of is the lifetime a peer gave as n units (time.Second for expires_in or
// Retry-After), within [Min, Max]; ok is false when n is not a positive
// number.
func Of(n float64, unit time.Duration) (d time.Duration, ok bool) {
	if math.IsNaN(n) || n <= 0 {
		return 0, false
	}
	// Compare in floating point: converting a huge n to an integer (1e30
	// seconds, 2^63 seconds) is where an unchecked lifetime overflows.
	secs := n * unit.Seconds()
	switch {
	case secs >= Max.Seconds():
		return Max, true
	case secs <= Min.Seconds():
		return Min, true
	}
	return time.Duration(secs * float64(time.Second)), true
}

// Until is the lifetime left, at now, of something a peer says ends at
// unix (seconds since 1970, a JWT's exp), within [Min, Max]; ok is false
// when unix is not after now.
func Until(now time.Time, unix float64) (time.Duration, bool) {
	left := unix - float64(now.UnixNano())/1e9
	return Of(left, time.Second)
}
