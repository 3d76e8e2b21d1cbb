package lifetime

import (
	"math"
	"testing"
	"time"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		n    float64
		unit time.Duration
		want time.Duration
		ok   bool
	}{
		{3600, time.Second, time.Hour, true},
		{1.5, time.Second, 1500 * time.Millisecond, true},
		{0.001, time.Second, Min, true},
		{1e30, time.Second, Max, true},
		{math.Pow(2, 63), time.Second, Max, true},
		{math.MaxInt64, time.Microsecond, Max, true},
		{math.Inf(1), time.Second, Max, true},
		{0, time.Second, 0, false},
		{-5, time.Second, 0, false},
		{math.Inf(-1), time.Second, 0, false},
		{math.NaN(), time.Second, 0, false},
		{20e6, time.Microsecond, 20 * time.Second, true},
	} {
		got, ok := Of(c.n, c.unit)
		if got != c.want || ok != c.ok {
			t.Errorf("Of(%g, %s) = %s, %v; want %s, %v", c.n, c.unit, got, ok, c.want, c.ok)
		}
	}
}

func TestUntil(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		unix float64
		want time.Duration
		ok   bool
	}{
		{1_800_000_600, 10 * time.Minute, true},
		{1e30, Max, true},
		{math.MaxInt64, Max, true},
		{1_800_000_000, 0, false},
		{-1e30, 0, false},
	} {
		got, ok := Until(now, c.unix)
		if got != c.want || ok != c.ok {
			t.Errorf("Until(%g) = %s, %v; want %s, %v", c.unix, got, ok, c.want, c.ok)
		}
	}
}
