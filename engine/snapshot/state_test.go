package snapshot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// The state block reloads with the config: an unchanged block keeps its
// Store (and connections), a changed one opens a new Store and the retired
// snapshot closes the old one; no block, no Store.
func TestStateReload(t *testing.T) {
	url := sharedstatetest.URL(t)
	cfg := func(prefix string) map[string]string {
		return map[string]string{"mcpd.hcl": fmt.Sprintf("server {\n  name = \"s\"\n  state {\n    redis      = %q\n    key_prefix = %q\n  }\n}\n", url, prefix)}
	}
	f := newFake()
	reg := f.register()
	var cur snapshot.Current
	a := mustBuild(t, reg, nil, cfg("p1"))
	cur.Swap(a)
	if a.State() == nil || !a.State().Healthy() {
		t.Fatalf("state %v", a.State())
	}
	if got := a.State().Key("k"); got != "p1:k" {
		t.Fatalf("key %q", got)
	}
	b := mustBuild(t, reg, a, cfg("p1"))
	cur.Swap(b)
	if b.State() != a.State() {
		t.Fatal("an unchanged state block opened a new client")
	}
	c := mustBuild(t, reg, b, cfg("p2"))
	cur.Swap(c)
	if c.State() == b.State() || !strings.HasPrefix(c.State().Key("k"), "p2:") {
		t.Fatal("a changed state block kept the old client")
	}
	// b retires (no call in flight) and closes the store c did not take.
	wait.Until(t, "b retired and closed the store c did not take", func() bool { return b.State().Client().Ping(t.Context()).Err() != nil })
	d := mustBuild(t, reg, c, map[string]string{"mcpd.hcl": "server {\n  name = \"s\"\n}\n"})
	cur.Swap(d)
	if d.State() != nil {
		t.Fatal("no state block, yet a store")
	}
	wait.Until(t, "c retired and closed its store", func() bool { return c.State().Client().Ping(t.Context()).Err() != nil })
	d.Close()
}

// Replicas must share request_state_key when something asks (serve warns).
func TestNeedsSharedStateKey(t *testing.T) {
	asking := "tool \"t\" {\n  description = \"x\"\n  ask \"roots\" { roots = true }\n  fake {\n    mode = \"echo\"\n  }\n}\n"
	plain := "tool \"t\" {\n  description = \"x\"\n  fake {\n    mode = \"echo\"\n  }\n}\n"
	key := "server {\n  request_state_key = \"0123456789abcdef0123\"\n}\n"
	for _, tc := range []struct {
		name, config string
		want         bool
	}{
		{"asks without key", asking, true},
		{"asks with key", key + asking, false},
		{"no asks", plain, false},
	} {
		f := newFake()
		s, _ := build(t, f.register(), nil, map[string]string{"mcpd.hcl": tc.config})
		if got := s.NeedsSharedStateKey(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
