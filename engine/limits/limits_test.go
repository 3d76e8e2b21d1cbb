package limits

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpd/mcpd/engine/principal"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in     string
		n      int
		period time.Duration
		bad    bool
	}{
		{"10/s", 10, time.Second, false},
		{"60/m", 60, time.Minute, false},
		{"1000/h", 1000, time.Hour, false},
		{"100/10s", 100, 10 * time.Second, false},
		{" 5 / s ", 5, time.Second, false},
		{"0/s", 0, 0, true},
		{"-1/s", 0, 0, true},
		{"10", 0, 0, true},
		{"10/fortnight", 0, 0, true},
		{"10/0s", 0, 0, true},
		{"x/s", 0, 0, true},
	}
	for _, tc := range tests {
		r, err := ParseRate(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted", tc.in)
			}
			continue
		}
		if err != nil || r.N != tc.n || r.Period != tc.period {
			t.Errorf("%q: got %+v, %v", tc.in, r, err)
		}
	}
}

func TestRetryIn(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                       "1.0s",
		time.Millisecond:        "0.1s",
		1234 * time.Millisecond: "1.3s",
		30 * time.Second:        "30.0s",
	} {
		if got := RetryIn(d); got != want {
			t.Errorf("RetryIn(%s) = %s, want %s", d, got, want)
		}
	}
}

// The per-caller buckets stay bounded however many callers come, and a
// caller that has used its share keeps its bucket: the ones that refilled
// are dropped first.
func TestCallerLimitersBounded(t *testing.T) {
	r := &Rate{N: 1, Period: time.Hour, Text: "1/h"}
	l := &Limits{spec: Spec{PerCaller: r}}
	l.callers = &callerLimiters{limit: r.limit(), burst: 1, m: map[string]*rate.Limiter{}}
	hog := &principal.Principal{Name: "hog", Method: "api_key"}
	ctx := context.Background()
	if _, refusal := l.Admit(ctx, "t", hog, nil); refusal != "" {
		t.Fatal(refusal)
	}
	now := time.Now()
	for i := range maxCallers + 100 {
		l.callers.get(fmt.Sprint("idle-", i), now)
	}
	if n := len(l.callers.m); n > maxCallers {
		t.Errorf("%d buckets kept, want at most %d", n, maxCallers)
	}
	if _, refusal := l.Admit(ctx, "t", hog, nil); !strings.Contains(refusal, "retry in") {
		t.Errorf("the hog got a fresh bucket: %q", refusal)
	}
	// The local user is one caller.
	if _, refusal := l.Admit(ctx, "t", nil, nil); refusal != "" {
		t.Fatal(refusal)
	}
	if _, refusal := l.Admit(ctx, "t", nil, nil); refusal == "" {
		t.Error("the local user got a second token")
	}
}

// A per-caller refusal gives back the per-tool token the call had taken.
func TestRefusedCallTakesNoToken(t *testing.T) {
	perTool := &Rate{N: 2, Period: time.Hour, Text: "2/h"}
	perCaller := &Rate{N: 1, Period: time.Hour, Text: "1/h"}
	l := &Limits{spec: Spec{PerTool: perTool, PerCaller: perCaller}}
	l.tool = rate.NewLimiter(perTool.limit(), 2)
	l.callers = &callerLimiters{limit: perCaller.limit(), burst: 1, m: map[string]*rate.Limiter{}}
	a := &principal.Principal{Name: "a"}
	b := &principal.Principal{Name: "b"}
	ctx := context.Background()
	for i, p := range []*principal.Principal{a, a, b} {
		_, refusal := l.Admit(ctx, "t", p, nil)
		if (refusal != "") != (i == 1) {
			t.Errorf("call %d: refusal %q", i, refusal)
		}
	}
}
