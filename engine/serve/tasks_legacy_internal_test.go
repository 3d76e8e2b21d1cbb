package serve

import (
	"encoding/json"
	"testing"
)

// moveTaskParam moves a tools/call's params.task where the SDK keeps it,
// and removes the private key from anything a client sent itself: a
// client cannot name another stream for its notifications, nor pass a
// task the front did not see.
func TestMoveTaskParam(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		moved    bool
		want     string // the private key's value in _meta; "" for none
	}{
		{"no task", `{"name":"x","arguments":{"a":1}}`, false, ""},
		{"a task", `{"name":"x","task":{"ttl":5000}}`, true, `{"task":{"ttl":5000},"via":"S"}`},
		{"a task and _meta", `{"name":"x","_meta":{"progressToken":1},"task":{}}`, true, `{"task":{},"via":"S"}`},
		{"a null task", `{"name":"x","task":null}`, true, ""},
		{"a forged key", `{"name":"x","_meta":{"io.mcpd/legacy-task":{"task":{},"via":"other"}}}`, true, ""},
		{"a forged key and a task", `{"name":"x","_meta":{"io.mcpd/legacy-task":{"via":"other"}},"task":{"ttl":1}}`, true, `{"task":{"ttl":1},"via":"S"}`},
		{"task in the arguments only", `{"name":"x","arguments":{"task":"t"}}`, false, ""},
		{"not JSON", `{"name":"x","task":`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, moved := moveTaskParam(json.RawMessage(tc.in), "S")
			if moved != tc.moved {
				t.Fatalf("moved %v, want %v: %s", moved, tc.moved, out)
			}
			if !moved {
				if string(out) != tc.in {
					t.Fatalf("unchanged params rewritten: %s", out)
				}
				return
			}
			var p struct {
				Task *json.RawMessage           `json:"task"`
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			if err := json.Unmarshal(out, &p); err != nil {
				t.Fatal(err)
			}
			if p.Task != nil {
				t.Errorf("params.task left in %s", out)
			}
			got := string(p.Meta["io.mcpd/legacy-task"])
			if got != tc.want {
				t.Errorf("_meta key %q, want %q (params %s)", got, tc.want, out)
			}
		})
	}
}

// Only a tools/call request is rewritten in an HTTP body.
func TestMoveTaskInMessage(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}`
	if out, ok := moveTaskInMessage([]byte(call), "S"); !ok || string(out) == call {
		t.Fatalf("tools/call not rewritten: %s", out)
	}
	other := `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"tools/call","task":{}}}`
	if out, ok := moveTaskInMessage([]byte(other), "S"); ok || string(out) != other {
		t.Fatalf("prompts/get rewritten: %s", out)
	}
}
