package reload

import (
	"testing"
	"time"
)

func TestStatusLastReload(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	for _, tc := range []struct {
		name       string
		st         Status
		generation int
		at         time.Time
		result     string
	}{
		{"first load only", Status{LastOK: t0}, 1, time.Time{}, ResultNone},
		{"reloaded", Status{Reloads: 2, LastOK: t1}, 3, t1, ResultSuccess},
		{"failed", Status{Failures: 1, LastOK: t0, LastFailure: t1, Err: "bad"}, 1, t1, ResultFailure},
		{"failed, then fixed", Status{Reloads: 1, Failures: 1, LastFailure: t0, LastOK: t1}, 2, t1, ResultSuccess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, result := tc.st.LastReload()
			if g := tc.st.Generation(); g != tc.generation || !at.Equal(tc.at) || result != tc.result {
				t.Errorf("generation %d, last reload %v %s", g, at, result)
			}
		})
	}
}
