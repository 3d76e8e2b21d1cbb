package mcpadapter

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream's task says is untrusted: ids mcpd sends back are
// checked, status messages are cut to one valid line, and a task is
// recognised only by its resultType.
func TestTaskRelayUntrusted(t *testing.T) {
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"0123456789abcdef", true},
		{"", false},
		{"has space", false},
		{"new\nline", false},
		{strings.Repeat("a", maxTaskIDLen), true},
		{strings.Repeat("a", maxTaskIDLen+1), false},
		{"é", false},
	} {
		if got := validTaskID(tc.id); got != tc.ok {
			t.Errorf("validTaskID(%q) = %v, want %v", tc.id, got, tc.ok)
		}
	}

	for in, want := range map[string]string{
		"building 3/4":     "building 3/4",
		"two\nlines\r\tok": "two lines  ok",
		"bad \xff byte":    "bad \uFFFD byte",
	} {
		if got := taskMessage(in); got != want {
			t.Errorf("taskMessage(%q) = %q, want %q", in, got, want)
		}
	}
	long := taskMessage(strings.Repeat("é", maxTaskMessageLen))
	if len(long) > maxTaskMessageLen || !strings.HasPrefix(long, "é") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("a long message is cut to %d bytes of valid UTF-8, got %d bytes", maxTaskMessageLen, len(long))
	}

	decode := func(s string) *mcp.CallToolResult {
		var r mcp.CallToolResult
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	for _, tc := range []struct {
		name, res string
		id        string
		isTask    bool
	}{
		{"plain", `{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}`, "", false},
		{"task", `{"resultType":"task","taskId":"t1","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}`, "t1", true},
		{"task named at the top level only", `{"resultType":"task","taskId":"t1","status":"working"}`, "", true},
		{"task with a bad id", `{"resultType":"task","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"a b"}}}`, "", true},
		{"related-task on a plain result", `{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t1"}}}`, "", false},
	} {
		id, isTask := upstreamTaskOf(decode(tc.res))
		if id != tc.id || isTask != tc.isTask {
			t.Errorf("%s: upstreamTaskOf = %q, %v; want %q, %v", tc.name, id, isTask, tc.id, tc.isTask)
		}
	}

	caps := withTasksExtension(map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"x": 1}})
	ext := caps["extensions"].(map[string]any)
	if _, ok := ext[upstreamTasksExtension]; !ok || ext["x"] != 1 || caps["elicitation"] == nil {
		t.Errorf("withTasksExtension = %v, want the client's capabilities and the tasks extension", caps)
	}
}
