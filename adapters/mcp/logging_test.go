package mcpadapter

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type logged struct{ level, msg string }

// An upstream's log record goes to the one call in flight, with non-string
// data as JSON and secrets redacted; with none or several in flight it is
// dropped.
func TestOnLog(t *testing.T) {
	u := &upstream{cfg: &serverConfig{name: "up", secrets: []string{"s3cret"}}}
	rec := func(level mcp.LoggingLevel, data any) *mcp.LoggingMessageRequest {
		return &mcp.LoggingMessageRequest{Params: &mcp.LoggingMessageParams{Level: level, Data: data}}
	}
	var a, b []logged
	u.onLog(context.Background(), rec("info", "before any call"))

	endA := u.logTo(func(l, m string) { a = append(a, logged{l, m}) })
	u.onLog(context.Background(), rec("info", "started with s3cret"))
	u.onLog(context.Background(), rec("warning", map[string]any{"n": 1}))
	u.onLog(context.Background(), rec("verbose", "not a level"))

	endB := u.logTo(func(l, m string) { b = append(b, logged{l, m}) })
	u.onLog(context.Background(), rec("info", "whose?"))
	endB()
	u.onLog(context.Background(), rec("error", "A's again"))
	endA()
	u.onLog(context.Background(), rec("info", "after"))

	want := []logged{{"info", "started with [redacted]"}, {"warning", `{"n":1}`}, {"error", "A's again"}}
	if len(a) != len(want) {
		t.Fatalf("call A got %v, want %v", a, want)
	}
	for i := range want {
		if a[i] != want[i] {
			t.Errorf("record %d: %v, want %v", i, a[i], want[i])
		}
	}
	if len(b) != 0 {
		t.Errorf("call B got %v (two calls in flight: a record is nobody's)", b)
	}
}

// The scanner counts log records too, and a call's end waits for them.
func TestProgressScannerCountsLogs(t *testing.T) {
	in := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"notifications/message"}]}}` + "\n"
	var p pendingProgress
	if _, err := io.ReadAll(&progressScanner{r: io.NopCloser(strings.NewReader(in)), pending: &p}); err != nil {
		t.Fatal(err)
	}
	if p.n[logPendingKey] != 1 || len(p.n) != 1 {
		t.Fatalf("pending %v", p.n)
	}
}
