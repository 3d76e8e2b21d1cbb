package mcpadapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpd/mcpd/adapters/internal/linelog"
)

// What a stdio upstream writes besides its messages reaches mcpd's log,
// bounded per upstream: a program that floods its stderr, or prints to
// stdout what is not a message, costs a few log records a second, never the
// log (or the disk under it). The bounds hold across the program's
// restarts: they belong to the upstream, not to one process.
const (
	// stderrBurst lines of stderr are logged at once, then stderrPerSecond
	// a second; each is at most linelog.MaxLine bytes.
	stderrBurst     = 100
	stderrPerSecond = 20
	// strayBurst lines of stdout that are not messages are logged at
	// once, then strayPerSecond a second; each at most strayLogBytes.
	strayBurst     = 20
	strayPerSecond = 2
	strayLogBytes  = 512
	// dropReportEvery is how often, while lines are dropped, a record
	// says how many.
	dropReportEvery = 10 * time.Second
)

// outputLog is where an upstream's stderr and stray stdout lines go: its
// log, through its limits, counted (ServiceStatus).
type outputLog struct {
	log    *slog.Logger
	redact func(string) string
	stderr *linelog.Limit
	stray  *linelog.Limit
	// stderrDropped counts the stderr lines not logged (over the rate),
	// strayLines the stdout lines skipped because they are not messages,
	// logged or not.
	stderrDropped, strayLines atomic.Int64
	// stopping is set when mcpd closes the upstream: its stderr is then
	// logged at debug level, as shutdown noise rather than trouble.
	stopping atomic.Bool
}

func newOutputLog(log *slog.Logger, redact func(string) string) *outputLog {
	o := &outputLog{log: log, redact: redact}
	o.stderr = linelog.NewLimit(stderrPerSecond, stderrBurst, dropReportEvery, func(n int64) {
		o.log.Warn("upstream stderr lines dropped", "lines", n, "limit", linelog.Describe("lines", stderrPerSecond, stderrBurst))
	})
	o.stray = linelog.NewLimit(strayPerSecond, strayBurst, dropReportEvery, func(n int64) {
		o.log.Warn("upstream stdout lines that are not messages skipped without a record", "lines", n, "limit", linelog.Describe("lines", strayPerSecond, strayBurst))
	})
	return o
}

// stderrLine logs one line of the upstream's stderr, at warning level: an
// upstream's stderr is where it reports its trouble.
func (o *outputLog) stderrLine(line string, cut bool) {
	if !o.stderr.Allow() {
		o.stderrDropped.Add(1)
		return
	}
	if cut {
		line += " [line cut]"
	}
	if o.stopping.Load() {
		o.log.Debug("upstream stderr while stopping", "line", o.redact(line))
		return
	}
	o.log.Warn("upstream stderr", "line", o.redact(line))
}

// strayLine counts and logs one stdout line that is not a message: head is
// its start, n its length.
func (o *outputLog) strayLine(head []byte, n int) {
	o.strayLines.Add(1)
	if !o.stray.Allow() {
		return
	}
	line := string(bytes.ToValidUTF8(head, []byte("\uFFFD")))
	if n > len(head) {
		line += fmt.Sprintf("… [%d bytes]", n)
	}
	o.log.Warn("upstream wrote a line that is not a JSON-RPC message to stdout; skipped", "line", o.redact(line))
}

// flush reports what was dropped and not reported yet (the program ended).
func (o *outputLog) flush() {
	o.stderr.Flush()
	o.stray.Flush()
}

// stderrWriter is one process's stderr, split into lines for the log.
type stderrWriter struct {
	mu    sync.Mutex
	lines linelog.Splitter
	out   *outputLog
}

func (o *outputLog) stderrWriter() *stderrWriter {
	return &stderrWriter{lines: linelog.Splitter{Line: o.stderrLine}, out: o}
}

func (w *stderrWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines.Write(p)
}

// flush logs a last line without a line ending, and the drops not yet
// reported.
func (w *stderrWriter) flush() {
	w.mu.Lock()
	w.lines.Flush()
	w.mu.Unlock()
	w.out.flush()
}

// messageLines passes on the lines of a stdio upstream's stdout that are
// JSON-RPC messages (an object, or a batch: an array of them, as the SDK
// decodes them) and skips the rest: a banner printed before initialize, a
// debug print between messages. Desktop hosts skip such lines; the SDK's
// stdio transport would end the session at the first, failing every call
// in flight on it. A line that does not start like JSON is skipped as it
// is read, without being buffered (its first strayLogBytes are kept for the
// log), however long it is; one that does is a message, or garbage, only
// once whole: it is buffered up to max bytes, past which the read fails
// and the session ends, as the SDK's MaxLineLength would have it (such a
// line is most likely an answer too big to take, and the call waiting for
// it should fail now rather than at its timeout).
type messageLines struct {
	r     io.ReadCloser
	max   int
	stray func(head []byte, n int)

	buf  []byte // read from r, not yet looked at
	line []byte // the current line, while it may be a message
	out  []byte // whole messages not yet read
	// skipping: the current line is not a message; skipped counts its
	// bytes and head keeps its start.
	skipping bool
	skipped  int
	head     []byte
	err      error
}

func newMessageLines(r io.ReadCloser, max int, stray func(head []byte, n int)) *messageLines {
	return &messageLines{r: r, max: max, stray: stray}
}

// bigBuffer is the capacity past which a buffer is dropped once used, so
// that one large message does not keep its memory for the session's life.
const bigBuffer = 1 << 20

func (m *messageLines) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		if m.buf == nil {
			m.buf = make([]byte, 64<<10)
		}
		n, err := m.r.Read(m.buf)
		if n > 0 {
			if ferr := m.feed(m.buf[:n]); ferr != nil {
				err = ferr
			}
		}
		if err != nil {
			if err == io.EOF && m.err == nil {
				m.endLine() // a last message without a line ending
			}
			m.err = err
		}
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	if len(m.out) == 0 {
		if cap(m.out) > bigBuffer {
			m.out = nil
		} else {
			m.out = m.out[:0]
		}
	}
	return n, nil
}

func (m *messageLines) Close() error { return m.r.Close() }

// feed takes the bytes b read off the stream.
func (m *messageLines) feed(b []byte) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if err := m.add(chunk); err != nil {
			return err
		}
		if i < 0 {
			return nil
		}
		m.endLine()
		b = b[i+1:]
	}
	return nil
}

// add takes part of the current line.
func (m *messageLines) add(chunk []byte) error {
	if !m.skipping && len(m.line) == 0 {
		// Blanks before a line's first byte are dropped (never
		// buffered), and that byte says whether it may be a message.
		if chunk = bytes.TrimLeft(chunk, " \t\r"); len(chunk) == 0 {
			return nil
		}
		m.skipping = chunk[0] != '{' && chunk[0] != '['
	}
	if m.skipping {
		m.skipped += len(chunk)
		if room := strayLogBytes - len(m.head); room > 0 {
			m.head = append(m.head, chunk[:min(room, len(chunk))]...)
		}
		return nil
	}
	if len(m.line)+len(chunk) > m.max {
		return fmt.Errorf("the upstream sent a line over %d bytes on stdout", m.max)
	}
	m.line = append(m.line, chunk...)
	return nil
}

// endLine passes the current line on if it is a message, and skips it
// otherwise.
func (m *messageLines) endLine() {
	defer func() {
		m.skipping, m.skipped, m.head = false, 0, m.head[:0]
		if cap(m.line) > bigBuffer {
			m.line = nil
		} else {
			m.line = m.line[:0]
		}
	}()
	if m.skipping {
		m.stray(m.head, m.skipped)
		return
	}
	line := bytes.TrimSpace(m.line)
	if len(line) == 0 {
		return // blank lines are nothing to tell
	}
	if !isMessage(line) {
		m.stray(line[:min(len(line), strayLogBytes)], len(line))
		return
	}
	// Trimmed: the SDK's decoder takes nothing but a line ending after a
	// message.
	if len(m.out) == 0 && cap(m.line) > cap(m.out) {
		// Hand the line over rather than copy it.
		m.out, m.line = append(line, '\n'), m.out[:0]
		return
	}
	m.out = append(append(m.out, line...), '\n')
}

// isMessage reports whether line is what the SDK's stdio transport takes:
// one JSON-RPC message, or a non-empty array of them (a batch).
func isMessage(line []byte) bool {
	if line[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(line, &batch) != nil || len(batch) == 0 {
			return false
		}
		for _, raw := range batch {
			if _, err := jsonrpc.DecodeMessage(raw); err != nil {
				return false
			}
		}
		return true
	}
	_, err := jsonrpc.DecodeMessage(line)
	return err == nil
}
