package shell

import (
	"fmt"

	"github.com/mcpd/mcpd/adapters/internal/linelog"
)

// maxLogRecords caps the log records one call sends, so that a program
// that writes stderr without end does not flood the client; the lines past
// it are counted and reported in one last record. A line longer than
// linelog.MaxLine is cut (its first MaxLine bytes are sent).
const maxLogRecords = 1000

// lineLogger turns the lines of a stream (log_stderr) into log records at
// one level, sent while the program runs. Like capture, it is written by one
// goroutine only.
type lineLogger struct {
	level   string
	send    func(level, message string)
	lines   linelog.Splitter
	sent    int
	dropped int
}

func newLineLogger(level string, send func(level, message string)) *lineLogger {
	l := &lineLogger{level: level, send: send}
	l.lines.Line = l.line
	return l
}

func (l *lineLogger) Write(p []byte) { _, _ = l.lines.Write(p) }

// line sends one line (blank lines never come here).
func (l *lineLogger) line(line string, cut bool) {
	if l.sent >= maxLogRecords {
		l.dropped++
		return
	}
	if cut {
		line += " [line cut]"
	}
	l.sent++
	l.send(l.level, line)
}

// flush sends a last line that had no line ending, and the count of the
// lines left out.
func (l *lineLogger) flush() {
	l.lines.Flush()
	if l.dropped > 0 {
		l.send(l.level, fmt.Sprintf("[%d more stderr lines not sent: at most %d per call]", l.dropped, maxLogRecords))
		l.dropped = 0
	}
}
