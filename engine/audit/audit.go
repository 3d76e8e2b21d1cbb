// Package audit writes the audit log: one JSON line per tools/call,
// resources/read and prompts/get, saying who called what, with which
// arguments (secrets and sensitive params redacted), how it ended and how
// long it took.
//
// Writing never holds a call up: Record encodes the line and puts it on a
// bounded queue that one writer goroutine empties through a buffered writer,
// flushed whenever the queue runs empty. When the destination does not keep
// up (a full disk, a pipe nobody reads) and the queue is full, the line is
// dropped and counted (Dropped), and a warning is logged at most once per
// WarnEvery.
package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one audit line. Every field is always written, empty when it
// does not apply, so that a line has the same shape whatever it records.
type Entry struct {
	// Time is when the request was received; written in UTC as RFC 3339
	// with milliseconds.
	Time time.Time `json:"-"`
	// Principal is the caller's name, or event.LocalPrincipal; AuthMethod how it was
	// verified ("api_key", "oauth"), or "none".
	Principal  string `json:"principal"`
	AuthMethod string `json:"auth_method"`
	// Identity is how the tool's adapter identified itself to its backend
	// on the caller's behalf: "client_credentials", "token_exchange",
	// "passthrough", or empty (the config's own credentials, or none).
	// IdentitySubject is whom that identity names; Actor who acts for
	// them (an exchanged token's act claim), empty when no one does.
	// Never a token.
	Identity        string `json:"identity"`
	IdentitySubject string `json:"identity_subject"`
	Actor           string `json:"actor"`
	// SessionID is the 2025 protocol's session (HTTP) or empty; RequestID
	// is mcpd's own id of the request, unique per process run.
	SessionID string `json:"session_id"`
	RequestID string `json:"request_id"`
	// Transport is "stdio" or "http"; Protocol the MCP protocol version
	// the client negotiated or sent, when known.
	Transport string `json:"transport"`
	Protocol  string `json:"protocol_version"`
	// Client is the label the client gave itself in params._meta
	// ("mcpd/client"), e.g. "console" for mcpd's browser console; empty
	// when it gave none. Any client can claim any label: it tells calls
	// apart, it proves nothing.
	Client string `json:"client"`
	// Kind is event.KindTool, KindResource or KindPrompt; Name the tool's or prompt's name,
	// or the resource's URI.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Arguments are the call's arguments, redacted; null for a resource.
	Arguments any `json:"arguments"`
	// Duration is written as duration_ms, with microsecond precision.
	Duration time.Duration `json:"-"`
	// Outcome is one of event's Outcome constants, as the outcome label
	// of mcpd_tool_calls_total.
	Outcome string `json:"outcome"`
	// BytesOut is the size of the JSON encoding of the result sent; 0 for
	// a protocol error.
	BytesOut int `json:"bytes_out"`
	// Error is the error text the client got (a tool error's text or the
	// JSON-RPC error message), redacted; empty on success.
	Error string `json:"error"`
	// Generation is the config generation that answered (1 for the config
	// loaded at start, one more per successful reload).
	Generation int `json:"config_generation"`
	// Toolset is the toolset the call came through (/mcp/<toolset>, stdio
	// --toolset, or /mcp serving server.default_toolset); left out when
	// it came through an endpoint that serves everything.
	Toolset string `json:"toolset,omitempty"`
	// Cache is the result cache's part in a call of a cached tool: "hit"
	// (answered from the cache: the tool did not run), "miss" or "error"
	// (the shared store failed); absent for a tool that is not cached.
	Cache string `json:"cache,omitempty"`
	// Task is the task's id on the lines of a tool run as a task (Kind
	// "task": Outcome "created", "completed", "failed" or "cancelled").
	Task string `json:"task,omitempty"`
}

// MarshalJSON writes the line's fields in a fixed order, time first.
func (e *Entry) MarshalJSON() ([]byte, error) {
	type plain Entry // without this method
	body, err := json.Marshal((*plain)(e))
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf(`{"time":%q,"duration_ms":%s,`, e.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		fmt.Sprintf("%.3f", float64(e.Duration.Microseconds())/1000))
	return append([]byte(head), body[1:]...), nil
}

// Options configure a Logger.
type Options struct {
	// QueueSize is how many lines may wait for the writer; default 4096.
	QueueSize int
	// WarnEvery is the least time between two warnings about dropped
	// lines; default 10s.
	WarnEvery time.Duration
	// Logger receives the warnings; default slog.Default().
	Logger *slog.Logger
}

// Logger writes audit lines to a file or a stream. A nil *Logger records
// nothing.
type Logger struct {
	opts  Options
	path  string // "" for a stream that cannot be reopened
	queue chan []byte

	dropped  atomic.Uint64
	lastWarn atomic.Int64 // unix nanos of the last warning about drops

	reopen chan struct{} // a reopen was asked for (buffered 1: requests merge)
	stop   chan struct{} // closed by Close
	done   chan struct{} // closed when the writer has flushed and stopped
	once   sync.Once

	// Owned by the writer goroutine.
	out  io.Writer
	file *os.File // nil when writing to a stream
	bw   *bufio.Writer
}

// Open returns a Logger writing to path, opened for appending and created
// with mode 0600 if needed; "-" writes to stderr.
func Open(path string, opts Options) (*Logger, error) {
	if path == "-" {
		return New(os.Stderr, opts), nil
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	l := newLogger(f, opts)
	l.path, l.file = path, f
	go l.run()
	return l, nil
}

// New returns a Logger writing to w, which cannot be reopened.
func New(w io.Writer, opts Options) *Logger {
	l := newLogger(w, opts)
	go l.run()
	return l
}

func newLogger(w io.Writer, opts Options) *Logger {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.WarnEvery <= 0 {
		opts.WarnEvery = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Logger{
		opts:   opts,
		queue:  make(chan []byte, opts.QueueSize),
		reopen: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		out:    w,
		bw:     bufio.NewWriterSize(w, 64<<10),
	}
}

func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return f, nil
}

// Record queues e for writing and returns at once. When the queue is full
// the line is dropped and counted.
func (l *Logger) Record(e *Entry) {
	if l == nil {
		return
	}
	line, err := json.Marshal(e)
	if err != nil {
		// Arguments come from decoded JSON: this does not happen, but an
		// audit line must not vanish silently.
		e.Arguments = fmt.Sprintf("(not encodable: %v)", err)
		if line, err = json.Marshal(e); err != nil {
			l.drop()
			return
		}
	}
	line = append(line, '\n')
	select {
	case l.queue <- line:
	default:
		l.drop()
	}
}

func (l *Logger) drop() {
	n := l.dropped.Add(1)
	now := time.Now().UnixNano()
	last := l.lastWarn.Load()
	if now-last >= int64(l.opts.WarnEvery) && l.lastWarn.CompareAndSwap(last, now) {
		l.opts.Logger.Warn("audit log is not keeping up: lines dropped", "dropped_total", n, "queue", cap(l.queue))
	}
}

// Dropped is the number of lines dropped since start.
func (l *Logger) Dropped() uint64 {
	if l == nil {
		return 0
	}
	return l.dropped.Load()
}

// Reopen asks the writer to close and reopen the file, after logrotate
// renamed it; lines written before are flushed to the old file. It returns
// at once; a writer that is blocked reopens when it can. A stream (stderr)
// is not reopened.
func (l *Logger) Reopen() {
	if l == nil || l.path == "" {
		return
	}
	select {
	case l.reopen <- struct{}{}:
	default: // one is pending already
	}
}

// Close writes the lines queued so far and stops the writer, waiting at
// most until ctx ends (a destination that blocks must not hold up an
// exit). Lines recorded after Close are not written.
func (l *Logger) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.once.Do(func() { close(l.stop) })
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("audit log: %d lines not written: %w", len(l.queue), ctx.Err())
	}
}

// run is the writer goroutine.
func (l *Logger) run() {
	defer close(l.done)
	for {
		select {
		case line := <-l.queue:
			l.write(line)
			// Flush when the burst is over: lines reach the file within
			// one write of being recorded, without a syscall per line
			// under load.
			if len(l.queue) == 0 {
				l.flush()
			}
		case <-l.reopen:
			// The lines recorded before the Reopen belong to the old
			// file: select picks at random among ready cases, so a line
			// queued just before might otherwise go to the new one.
			l.writeQueued()
			l.doReopen()
		case <-l.stop:
			l.writeQueued()
			l.flush()
			if l.file != nil {
				_ = l.file.Close()
			}
			return
		}
	}
}

// writeQueued writes the lines queued so far.
func (l *Logger) writeQueued() {
	for {
		select {
		case line := <-l.queue:
			l.write(line)
		default:
			return
		}
	}
}

func (l *Logger) write(line []byte) {
	if _, err := l.bw.Write(line); err != nil {
		l.writeFailed(err)
	}
}

func (l *Logger) flush() {
	if err := l.bw.Flush(); err != nil {
		l.writeFailed(err)
	}
}

// writeFailed logs a failed write (a full disk, say) and resets the buffer,
// so that the writer goes on with the next lines instead of failing every
// one after. The lines in the buffer are counted as dropped.
func (l *Logger) writeFailed(err error) {
	l.opts.Logger.Error("writing the audit log", "err", err)
	l.dropped.Add(1)
	l.bw.Reset(l.out)
}

func (l *Logger) doReopen() {
	l.flush()
	f, err := openFile(l.path)
	if err != nil {
		// Keep writing to the old file rather than losing lines.
		l.opts.Logger.Error("reopening the audit log; still writing to the old file", "err", err)
		return
	}
	old := l.file
	l.file, l.out = f, f
	l.bw.Reset(f)
	if old != nil {
		_ = old.Close()
	}
	l.opts.Logger.Info("audit log reopened", "path", l.path)
}
