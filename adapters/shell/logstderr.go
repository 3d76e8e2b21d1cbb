package shell

import (
	"bytes"
	"fmt"
	"strings"
)

const (
	// maxLogLine is the longest stderr line sent as one log record; the
	// rest of a longer line is cut (its first maxLogLine bytes are sent).
	maxLogLine = 8 << 10
	// maxLogRecords caps the log records one call sends, so that a program
	// that writes stderr without end does not flood the client; the lines
	// past it are counted and reported in one last record.
	maxLogRecords = 1000
)

// lineLogger turns the lines of a stream (log_stderr) into log records at
// one level, sent while the program runs. Like capture, it is written by one
// goroutine only.
type lineLogger struct {
	level   string
	send    func(level, message string)
	buf     []byte
	cut     bool // the current line is longer than maxLogLine
	sent    int
	dropped int
}

func newLineLogger(level string, send func(level, message string)) *lineLogger {
	return &lineLogger{level: level, send: send}
}

func (l *lineLogger) Write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.add(p)
			return
		}
		l.add(p[:i])
		l.endLine()
		p = p[i+1:]
	}
}

func (l *lineLogger) add(p []byte) {
	if room := maxLogLine - len(l.buf); len(p) > room {
		p, l.cut = p[:room], true
	}
	l.buf = append(l.buf, p...)
}

// endLine sends the buffered line; blank lines are skipped.
func (l *lineLogger) endLine() {
	line := strings.TrimRight(string(l.buf), "\r")
	cut := l.cut
	l.buf, l.cut = l.buf[:0], false
	if strings.TrimSpace(line) == "" {
		return
	}
	if l.sent >= maxLogRecords {
		l.dropped++
		return
	}
	line = strings.ToValidUTF8(line, "\uFFFD")
	if cut {
		line += " [line cut]"
	}
	l.sent++
	l.send(l.level, line)
}

// flush sends a last line that had no line ending, and the count of the
// lines left out.
func (l *lineLogger) flush() {
	l.endLine()
	if l.dropped > 0 {
		l.send(l.level, fmt.Sprintf("[%d more stderr lines not sent: at most %d per call]", l.dropped, maxLogRecords))
		l.dropped = 0
	}
}
