package console

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mcpd/mcpd/engine/reload"
)

// The page learns the config's toolsets from the status (for its picker),
// and each call names the toolset it came through.
func TestToolsetsInStatusAndCalls(t *testing.T) {
	names := []string{"support", "triage"}
	c := New(Options{Logger: quiet, Toolsets: func() []string { return names }})
	c.SetReloadStatus(reload.Status{})
	var st Status
	if err := json.Unmarshal(c.status, &st); err != nil || !slices.Equal(st.Toolsets, names) {
		t.Errorf("status toolsets %v (%v), want %v", st.Toolsets, err, names)
	}
	// No toolsets: an empty list, never null, for the page.
	names = nil
	c.SetReloadStatus(reload.Status{})
	var raw map[string]any
	if err := json.Unmarshal(c.status, &raw); err != nil {
		t.Fatal(err)
	}
	if l, ok := raw["toolsets"].([]any); !ok || len(l) != 0 {
		t.Errorf("status toolsets %v, want []", raw["toolsets"])
	}

	for _, ts := range []string{"support", ""} {
		ev := call("get_ticket", "")
		ev.Toolset = ts
		c := New(Options{Logger: quiet})
		c.Record(ev)
		var full []byte
		c.calls.each(func(r *record) { full = r.full })
		var got map[string]any
		if err := json.Unmarshal(full, &got); err != nil {
			t.Fatal(err)
		}
		if v, present := got["toolset"]; (ts == "") == present || (present && v != ts) {
			t.Errorf("call through %q: toolset %v (present %v)", ts, v, present)
		}
	}
}
