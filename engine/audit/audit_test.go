package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/internal/wait"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func entry(name string) *Entry {
	return &Entry{
		Time: time.Date(2026, 12, 1, 10, 4, 5, 123456789, time.FixedZone("CET", 3600)), Principal: "ci-bot", AuthMethod: "api_key",
		SessionID: "s1", RequestID: "r1", Transport: "http", Protocol: "2025-11-25", Kind: event.KindTool, Name: name,
		Arguments: map[string]any{"q": "x"}, Duration: 1234567 * time.Nanosecond, Outcome: event.OutcomeOK, BytesOut: 42, Generation: 3,
	}
}

// allFields are the keys every line has, whatever it records.
var allFields = []string{"time", "duration_ms", "principal", "auth_method", "identity", "identity_subject", "actor", "session_id", "request_id", "transport",
	"protocol_version", "client", "kind", "name", "arguments", "outcome", "bytes_out", "error", "config_generation"}

func TestEntryJSON(t *testing.T) {
	b, err := json.Marshal(entry("search"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(`{"time":"2026-12-01T09:04:05.123Z","duration_ms":1.234,"principal":"ci-bot"`)) {
		t.Errorf("line starts %s", b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range allFields {
		if _, ok := m[k]; !ok {
			t.Errorf("field %s missing: %s", k, b)
		}
	}
	if len(m) != len(allFields) {
		t.Errorf("%d fields, want %d: %s", len(m), len(allFields), b)
	}
	// An empty entry still has every field.
	b, _ = json.Marshal(&Entry{})
	m = nil
	_ = json.Unmarshal(b, &m)
	if len(m) != len(allFields) {
		t.Errorf("empty entry has %d fields: %s", len(m), b)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Lines are appended to the file, which is created with mode 0600; after a
// rename and Reopen (logrotate), new lines go to a new file at the path.
func TestFileAndReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(path, []byte("earlier line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(path, Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(entry("one"))
	wait.Until(t, "the first line", func() bool { return len(readLines(t, path)) == 2 })

	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	l.Record(entry("two")) // before the reopen: still the old file
	l.Reopen()
	wait.Until(t, "the new file", func() bool { _, err := os.Stat(path); return err == nil })
	l.Record(entry("three"))
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	old := readLines(t, rotated)
	if len(old) != 3 || old[0] != "earlier line" || !strings.Contains(old[1], `"name":"one"`) || !strings.Contains(old[2], `"name":"two"`) {
		t.Errorf("rotated file:\n%s", strings.Join(old, "\n"))
	}
	cur := readLines(t, path)
	if len(cur) != 1 || !strings.Contains(cur[0], `"name":"three"`) {
		t.Errorf("new file:\n%s", strings.Join(cur, "\n"))
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("new file mode: %v %v", st.Mode(), err)
	}
}

// blockingWriter blocks every write until released, like a pipe nobody
// reads.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// A destination that blocks holds up no Record: lines beyond the queue are
// dropped, counted and warned about once; Close gives up when its context
// ends.
func TestBlockedWriterDrops(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	l := New(w, Options{QueueSize: 4, Logger: logger, WarnEvery: time.Hour})
	var slowest time.Duration
	for i := 0; i < 100; i++ {
		start := time.Now()
		l.Record(entry("x"))
		slowest = max(slowest, time.Since(start))
	}
	// The writer buffers the lines it took before its flush blocked (a
	// burst the test's loop raced with), the queue holds four: the rest
	// are dropped.
	if d := l.Dropped(); d < 50 {
		t.Errorf("dropped %d lines, want most of the 100", d)
	}
	if slowest > 100*time.Millisecond {
		t.Errorf("a Record took %v with the writer blocked", slowest)
	}
	logMu.Lock()
	warnings := strings.Count(logs.String(), "audit log is not keeping up")
	logMu.Unlock()
	if warnings != 1 {
		t.Errorf("%d warnings, want 1:\n%s", warnings, logs.String())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := l.Close(ctx); err == nil {
		t.Error("Close returned nil with the writer blocked")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Close took %v", took)
	}
	close(w.release) // the writer finishes what it held
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Every line is either written or counted as dropped.
	if n := strings.Count(w.buf.String(), "\n"); uint64(n)+l.Dropped() != 100 {
		t.Errorf("%d lines written and %d dropped, want 100 in all", n, l.Dropped())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Close writes every line recorded before it.
func TestCloseFlushes(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	l := New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), Options{Logger: quiet})
	for i := 0; i < 1000; i++ {
		l.Record(entry("x"))
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(buf.String(), "\n"); n != 1000 {
		t.Errorf("%d lines written, want 1000", n)
	}
	var nilLogger *Logger
	nilLogger.Record(entry("x")) // a nil Logger records nothing, and does not panic
	nilLogger.Reopen()
	if nilLogger.Dropped() != 0 || nilLogger.Close(context.Background()) != nil {
		t.Error("nil Logger")
	}
}
