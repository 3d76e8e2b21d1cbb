// Package linelog turns what a program writes to a stream (its stderr, or
// the stray lines of its stdout) into bounded log lines: each line is cut
// at a length, and a Limit bounds how many are let through. The shell
// adapter (log_stderr) and the MCP gateway (an upstream's stderr) share it;
// each decides where the lines go and how many it lets through.
package linelog

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// MaxLine is the longest line sent as one record; the rest of a longer
// line is cut (its first MaxLine bytes are sent).
const MaxLine = 8 << 10

// Splitter splits a stream into lines and hands each non-blank one to
// Line, without its line ending ("\n" or "\r\n"), with invalid UTF-8
// replaced, and cut at Max bytes (cut reports that). It buffers at most Max
// bytes, whatever the stream holds. It is not safe for concurrent use.
type Splitter struct {
	Max  int // 0: MaxLine
	Line func(line string, cut bool)
	buf  []byte
	cut  bool // the current line is longer than Max
}

// Write splits p; it never fails.
func (s *Splitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

func (s *Splitter) add(p []byte) {
	max := s.Max
	if max <= 0 {
		max = MaxLine
	}
	if room := max - len(s.buf); len(p) > room {
		p, s.cut = p[:room], true
	}
	s.buf = append(s.buf, p...)
}

// Flush ends a last line that had no line ending.
func (s *Splitter) Flush() { s.endLine() }

func (s *Splitter) endLine() {
	line := strings.TrimRight(string(s.buf), "\r")
	cut := s.cut
	s.buf, s.cut = s.buf[:0], false
	if strings.TrimSpace(line) == "" {
		return
	}
	s.Line(strings.ToValidUTF8(line, "\uFFFD"), cut)
}

// Limit lets Burst records through at once and Rate a second after that,
// and counts the rest: Report is called with the count of the records it
// dropped, at most once per Every while they are being dropped (so that a
// flood is seen in the log as it happens), and by Flush. It is safe for
// concurrent use.
type Limit struct {
	lim    *rate.Limiter
	every  time.Duration
	report func(dropped int64)

	mu      sync.Mutex
	dropped int64       // since the last report
	timer   *time.Timer // the next report, while records are dropped
}

// NewLimit is a Limit of perSecond records a second after burst, that
// reports its drops at most once per every.
func NewLimit(perSecond float64, burst int, every time.Duration, report func(dropped int64)) *Limit {
	return &Limit{lim: rate.NewLimiter(rate.Limit(perSecond), burst), every: every, report: report}
}

// Allow reports whether one more record may be sent now; a record it
// refuses is counted and reported.
func (l *Limit) Allow() bool {
	if l.lim.Allow() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropped++
	if l.timer == nil {
		l.timer = time.AfterFunc(l.every, l.reportDropped)
	}
	return false
}

// Flush reports the records dropped and not reported yet, now.
func (l *Limit) Flush() {
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.reportDropped()
}

func (l *Limit) reportDropped() {
	l.mu.Lock()
	n := l.dropped
	l.dropped, l.timer = 0, nil
	l.mu.Unlock()
	if n > 0 {
		l.report(n)
	}
}

// Describe says what a Limit of perSecond after burst lets through, for
// its reports: "at most 100 lines at once, then 20 a second".
func Describe(what string, perSecond float64, burst int) string {
	return fmt.Sprintf("at most %d %s at once, then %g a second", burst, what, perSecond)
}
