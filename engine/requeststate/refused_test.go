package requeststate

import "testing"

// Every refused replay is counted; the log hears of the first at once and
// of a burst after it not at all until RefusedLogInterval has passed.
func TestRefusedCountsEveryReplayLogsFew(t *testing.T) {
	u := NewUsed(4)
	var logged []uint64
	for range 100 {
		u.Refused(func(total uint64) { logged = append(logged, total) })
	}
	if n := u.RefusedTotal(); n != 100 {
		t.Errorf("RefusedTotal = %d, want 100", n)
	}
	if len(logged) != 1 || logged[0] != 1 {
		t.Errorf("logged %v, want one line, for the first refusal", logged)
	}
}
