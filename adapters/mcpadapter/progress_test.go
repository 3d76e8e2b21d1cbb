package mcpadapter

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// The scanner counts the progress notifications it passes through, whatever
// the chunking, and leaves the bytes as they were.
func TestProgressScanner(t *testing.T) {
	in := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","progress":50,"total":100}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"notifications/progress"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-1","progress":100,"total":100,"message":"` + strings.Repeat("x", progressLinePrefix) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` + "\n"
	var p pendingProgress
	s := &progressScanner{r: io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), pending: &p}
	out, err := io.ReadAll(s)
	if err != nil || string(out) != in {
		t.Fatalf("read %q, %v", out, err)
	}
	// The over-long line is not counted: the call does not wait for it.
	// The log record is counted under its own key (logging.go).
	if p.n["mcpd-1"] != 1 || p.n["7"] != 1 || p.n[logPendingKey] != 1 || len(p.n) != 3 {
		t.Fatalf("pending %v", p.n)
	}
}

// drain returns once the counted notifications are relayed, or at the limit.
func TestPendingProgressDrain(t *testing.T) {
	var p pendingProgress
	p.seen("a")
	p.seen("a")
	go func() {
		time.Sleep(20 * time.Millisecond)
		p.done("a")
		p.done("a")
	}()
	start := time.Now()
	p.drain("a", 5*time.Second)
	if d := time.Since(start); d < 15*time.Millisecond || d > 2*time.Second {
		t.Fatalf("drain took %v", d)
	}
	p.seen("b")
	start = time.Now()
	p.drain("b", 30*time.Millisecond)
	if d := time.Since(start); d < 25*time.Millisecond || d > 2*time.Second {
		t.Fatalf("drain at the limit took %v", d)
	}
	if len(p.n) != 0 {
		t.Fatalf("left %v", p.n)
	}
	p.drain("never-seen", time.Hour) // returns at once
}
