// Package wait is the tests' one way to wait for a condition: poll it
// until it holds or a deadline passes. Tests wait for what they wait for
// instead of sleeping a fixed time, which is both slow when the machine is
// idle and flaky when it is loaded.
package wait

import (
	"testing"
	"time"
)

// Deadline bounds every wait. It is a liveness bound, not a speed
// assertion: generous, so that a loaded 2-core CI box running many
// packages' tests with -race does not fail a test that is only slow.
const Deadline = 30 * time.Second

// Interval is how often the condition is polled: short, so that a test
// goes on soon after the condition holds.
const Interval = 10 * time.Millisecond

// Until polls cond every Interval until it returns true, and fails the
// test, naming what was awaited, if it has not by Deadline. what says what
// should have happened ("the upstream restarted").
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	until(t, Deadline, what, cond)
}

func until(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
			return
		}
		time.Sleep(Interval)
	}
}
