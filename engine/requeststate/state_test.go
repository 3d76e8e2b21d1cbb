package requeststate

import (
	"errors"
	"testing"
	"time"
)

func TestSealOpen(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	a := NewSealer([]byte("key one"), time.Minute).WithClock(clock)
	same := NewSealer([]byte("key one"), time.Minute).WithClock(clock)
	other := NewSealer([]byte("key two"), time.Minute).WithClock(clock)
	bind := Bind("tool", "restock", map[string]any{"id": 1.0, "copies": 2.0})
	tok, err := a.Seal(State{Round: 2, Answers: map[string]any{"why": map[string]any{"reason": "x"}}, Bind: bind})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		s       *Sealer
		token   string
		bind    string
		advance time.Duration
		want    error
	}{
		{"same process", a, tok, bind, 0, nil},
		{"another replica with the same key", same, tok, bind, 0, nil},
		{"another key", other, tok, bind, 0, ErrTampered},
		{"tampered", a, tok + "-TAMPERED", bind, 0, ErrTampered},
		{"payload swapped", a, "e30" + tok[3:], bind, 0, ErrTampered},
		{"no signature", a, "abc", bind, 0, ErrTampered},
		{"other tool", a, tok, Bind("tool", "delete", map[string]any{"id": 1.0, "copies": 2.0}), 0, ErrForeign},
		{"other args", a, tok, Bind("tool", "restock", map[string]any{"id": 1.0, "copies": 3.0}), 0, ErrForeign},
		{"expired", a, tok, bind, 2 * time.Minute, ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.s.WithClock(func() time.Time { return now.Add(tt.advance) })
			st, err := s.Open(tt.token, tt.bind)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open: err = %v, want %v", err, tt.want)
			}
			if err == nil && (st.Round != 2 || st.Answers["why"].(map[string]any)["reason"] != "x") {
				t.Fatalf("state = %+v", st)
			}
		})
	}
}

func TestBindIgnoresKeyOrder(t *testing.T) {
	a := Bind("tool", "x", map[string]any{"a": 1.0, "b": "2"})
	b := Bind("tool", "x", map[string]any{"b": "2", "a": 1.0})
	if a != b {
		t.Fatal("equal arguments bind differently")
	}
	if Bind("prompt", "x", nil) == Bind("tool", "x", nil) {
		t.Fatal("a prompt and a tool of the same name share a binding")
	}
}

func TestBindCaller(t *testing.T) {
	args := map[string]any{"copies": 2.0}
	alice := BindCaller("tool", "add", args, "api_key:alice", map[string]any{"tenant": "t1"})
	for _, tc := range []struct {
		name string
		bind string
	}{
		{"another caller", BindCaller("tool", "add", args, "api_key:bob", map[string]any{"tenant": "t1"})},
		{"another method", BindCaller("tool", "add", args, "oauth:alice", map[string]any{"tenant": "t1"})},
		{"other caller-bound values", BindCaller("tool", "add", args, "api_key:alice", map[string]any{"tenant": "t2"})},
		{"no caller-bound values", BindCaller("tool", "add", args, "api_key:alice", nil)},
		{"the local user", Bind("tool", "add", args)},
	} {
		if tc.bind == alice {
			t.Errorf("%s binds as alice's call", tc.name)
		}
	}
	if BindCaller("tool", "add", args, "api_key:alice", map[string]any{"tenant": "t1"}) != alice {
		t.Error("the same call binds differently")
	}
}

// A state is used once; the set forgets states once they have expired,
// and refuses a claim rather than forget one that has not (a full set).
func TestUsed(t *testing.T) {
	s := NewSealer([]byte("used-test-key-0123456789"), time.Minute)
	a, _ := s.Seal(State{Round: 1, Bind: "b"})
	b, _ := s.Seal(State{Round: 1, Bind: "b"})
	if a == b || ID(a) == ID(b) {
		t.Fatal("two states sealed alike in the same second are the same state")
	}
	if exp := Expiry(a); exp.Before(time.Now().Add(50*time.Second)) || exp.After(time.Now().Add(time.Minute+time.Second)) {
		t.Fatalf("expiry %s, want in about a minute", exp)
	}
	u := NewUsed(2)
	for _, tc := range []struct {
		id      string
		expires time.Time
		first   bool
		err     error
	}{
		{ID(a), time.Now().Add(time.Minute), true, nil},
		{ID(a), time.Now().Add(time.Minute), false, nil},
		{"expired", time.Now().Add(-2 * time.Second), true, nil},
		// Full: the expired state makes room.
		{ID(b), time.Now().Add(time.Minute), true, nil},
		// Full of live states: refused.
		{"third", time.Now().Add(time.Minute), false, ErrFull},
		{ID(b), time.Now().Add(time.Minute), false, nil},
	} {
		first, err := u.Claim(tc.id, tc.expires)
		if first != tc.first || err != tc.err {
			t.Errorf("claim %s: %v %v, want %v %v", tc.id, first, err, tc.first, tc.err)
		}
	}
	u.Forget(ID(b))
	if first, _ := u.Claim(ID(b), time.Now().Add(time.Minute)); !first || u.Len() != 2 {
		t.Errorf("a forgotten state: first %v, %d held", first, u.Len())
	}
}

// Bind identifies one call of the local user (no verified caller).
func Bind(kind, name string, args map[string]any) string {
	return BindCaller(kind, name, args, "", nil)
}
