package mcpadapter

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type logged struct{ level, msg string }

// An upstream's log record goes to the call it belongs to, with
// non-string data as JSON and secrets redacted: the call whose own
// (pooled) session it came on, or the one call in flight on the shared
// session. With none, or several on the shared session, it is dropped,
// even when only one of them wants records: it may be the other's.
func TestOnLog(t *testing.T) {
	u := testUpstream("up")
	u.cfg.secrets = []string{"s3cret"}
	rec := func(level mcp.LoggingLevel, data any, on *mcp.ClientSession) *mcp.LoggingMessageRequest {
		return &mcp.LoggingMessageRequest{Session: on, Params: &mcp.LoggingMessageParams{Level: level, Data: data}}
	}
	var a, p []logged
	toA := func(l, m string) { a = append(a, logged{l, m}) }
	toP := func(l, m string) { p = append(p, logged{l, m}) }
	ctx := context.Background()
	u.relay.onLog(ctx, rec("info", "before any call", nil))

	_, endA := u.relay.withRelay(ctx, &relayCall{log: toA})
	u.relay.onLog(ctx, rec("info", "started with s3cret", nil))
	u.relay.onLog(ctx, rec("warning", map[string]any{"n": 1}, nil))
	u.relay.onLog(ctx, rec("verbose", "not a level", nil))

	// A pooled call: its session's records are its own, and it is not
	// among the calls a record of the shared session may belong to.
	pooled := &mcp.ClientSession{}
	_, endP := u.relay.withRelay(ctx, &relayCall{session: pooled, own: true, log: toP})
	u.relay.onLog(ctx, rec("info", "pooled's", pooled))
	u.relay.onLog(ctx, rec("info", "A's, with a pooled call in flight", nil))
	endP()
	u.relay.onLog(ctx, rec("info", "on a session no call has", pooled))

	// A second call on the shared session, whose client set no level.
	_, endB := u.relay.withRelay(ctx, &relayCall{})
	u.relay.onLog(ctx, rec("info", "whose?", nil))
	endB()
	u.relay.onLog(ctx, rec("error", "A's again", nil))
	endA()
	u.relay.onLog(ctx, rec("info", "after", nil))

	// Before any call, on the pooled session between calls, with two
	// calls in flight, after the last: each dropped, and counted.
	if n := u.ServiceStatus().UnattributedRecords; n != 4 {
		t.Errorf("%d records counted as unattributed, want 4", n)
	}

	for _, tc := range []struct {
		call      string
		got, want []logged
	}{
		{"A", a, []logged{{"info", "started with [redacted]"}, {"warning", `{"n":1}`}, {"info", "A's, with a pooled call in flight"}, {"error", "A's again"}}},
		{"pooled", p, []logged{{"info", "pooled's"}}},
	} {
		if len(tc.got) != len(tc.want) {
			t.Errorf("call %s got %v, want %v", tc.call, tc.got, tc.want)
			continue
		}
		for i := range tc.want {
			if tc.got[i] != tc.want[i] {
				t.Errorf("call %s, record %d: %v, want %v", tc.call, i, tc.got[i], tc.want[i])
			}
		}
	}
}

// The scanner counts log records too, and a call's end waits for them:
// on a stdio upstream's stdout and in an HTTP upstream's event stream.
func TestProgressScannerCountsLogs(t *testing.T) {
	const logRecord = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
	const progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","progress":1}}`
	const result = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"notifications/message"}]}}`
	for _, tc := range []struct {
		name string
		sse  bool
		in   string
	}{
		{"stdio", false, logRecord + "\n" + progress + "\n" + result + "\n"},
		{"event stream", true, "event: message\nid: 1\ndata: " + logRecord + "\n\nevent: message\r\ndata:" + progress + "\r\n\ndata: " + result + "\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pendingProgress
			if _, err := io.ReadAll(&progressScanner{r: io.NopCloser(strings.NewReader(tc.in)), pending: &p, sse: tc.sse}); err != nil {
				t.Fatal(err)
			}
			if p.n[logPendingKey] != 1 || p.n["mcpd-1"] != 1 || len(p.n) != 2 {
				t.Fatalf("pending %v", p.n)
			}
		})
	}
}
