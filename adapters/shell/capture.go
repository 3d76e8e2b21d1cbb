package shell

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpd/mcpd/engine/adapter"
)

// capture is the writer behind one output stream. It keeps the first limit
// bytes and the last tailBytes bytes, counts the rest and drops it, so that
// a program printing without end costs a bounded amount of memory while it
// keeps running. Writes never fail: a program is never killed by a full
// buffer (SIGPIPE), only by its timeout.
//
// One goroutine (readStream) writes to a capture, and Call reads it only
// after that goroutine is done, so no locking is needed.
type capture struct {
	limit int
	head  []byte
	total int64
	full  bool   // the limit was reached: head takes no more bytes
	tail  []byte // the stream's last bytes: see keepTail
	lines *progressScanner
	logs  *lineLogger // log_stderr: each line becomes a log record
}

func newCapture(limit int) *capture {
	return &capture{limit: limit}
}

func (c *capture) Write(p []byte) (int, error) {
	c.total += int64(len(p))
	if !c.full {
		room := c.limit - len(c.head)
		if len(p) <= room {
			c.head = append(c.grow(len(p)), p...)
		} else {
			c.head = adapter.TrimPartialRune(append(c.grow(room), p[:room]...))
			c.full = true
		}
	}
	c.keepTail(p)
	if c.lines != nil {
		c.lines.Write(p)
	}
	if c.logs != nil {
		c.logs.Write(p)
	}
	return len(p), nil
}

// grow makes room for n more bytes in head. append alone grows a large
// slice by a quarter at a time, which for a stream of 1 MiB allocates 5 MiB
// on the way; doubling allocates 2, and the last step is cut at the limit
// (plus room for the truncation note, see result), so that no more than
// the limit is held.
func (c *capture) grow(n int) []byte {
	need := len(c.head) + n
	if need <= cap(c.head) {
		return c.head
	}
	size := max(2*cap(c.head), need, 512)
	if size >= c.limit {
		size = max(c.limit+noteRoom, need)
	}
	b := make([]byte, len(c.head), size)
	copy(b, c.head)
	return b
}

// noteRoom is the room head keeps past the limit for the truncation note
// that result appends to it.
const noteRoom = 160

// keepTail keeps the last tailBytes of the stream, in a buffer of twice that
// so that it is shifted at most once per tailBytes written.
func (c *capture) keepTail(p []byte) {
	if len(p) >= tailBytes {
		c.tail = append(c.tail[:0], p[len(p)-tailBytes:]...)
		return
	}
	if len(c.tail)+len(p) > 2*tailBytes {
		n := copy(c.tail, c.tail[len(c.tail)-tailBytes:])
		c.tail = c.tail[:n]
	}
	c.tail = append(c.tail, p...)
}

// truncated reports whether output was discarded.
func (c *capture) truncated() bool { return c.total > int64(len(c.head)) }

// tailText returns the last tailBytes of the stream (starting on a rune
// boundary) and whether earlier output was left out.
func (c *capture) tailText() (string, bool) {
	t := c.tail
	if len(t) > tailBytes {
		t = t[len(t)-tailBytes:]
	}
	cut := c.total > int64(len(t))
	if cut {
		for i := 0; i < utf8.UTFMax && len(t) > 0 && !utf8.RuneStart(t[0]); i++ {
			t = t[1:]
		}
	}
	return string(t), cut
}

// progressScanner splits a stream into lines ("\n" or "\r" ends one, so
// that the carriage-return updates of progress bars count) and reports the
// lines that match the progress pattern.
type progressScanner struct {
	spec     *progressSpec
	report   func(progress, total float64, message string)
	buf      []byte
	overflow bool // the current line is longer than maxProgressLine
	last     float64
	reported bool
}

func newProgressScanner(spec *progressSpec, report func(float64, float64, string)) *progressScanner {
	return &progressScanner{spec: spec, report: report}
}

func (s *progressScanner) Write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			s.add(p)
			return
		}
		s.add(p[:i])
		s.endLine()
		p = p[i+1:]
	}
}

func (s *progressScanner) add(p []byte) {
	if s.overflow {
		return
	}
	if len(s.buf)+len(p) > maxProgressLine {
		s.overflow = true
		s.buf = s.buf[:0]
		return
	}
	s.buf = append(s.buf, p...)
}

func (s *progressScanner) endLine() {
	if !s.overflow && len(s.buf) > 0 {
		s.match(s.buf)
	}
	s.buf = s.buf[:0]
	s.overflow = false
}

// flush matches a last line that had no line ending.
func (s *progressScanner) flush() { s.endLine() }

// match reports one line when it matches, its progress parses as a finite
// number and it is greater than the last reported one (MCP requires
// progress to increase).
func (s *progressScanner) match(line []byte) {
	m := s.spec.re.FindSubmatch(line)
	if m == nil {
		return
	}
	p, ok := parseNumber(m[s.spec.progress])
	if !ok || (s.reported && p <= s.last) {
		return
	}
	total := s.spec.static
	if s.spec.total > 0 {
		if t, ok := parseNumber(m[s.spec.total]); ok && t > 0 {
			total = t
		}
	}
	var msg string
	if s.spec.message > 0 {
		msg = strings.ToValidUTF8(string(m[s.spec.message]), "\uFFFD")
	}
	s.last, s.reported = p, true
	s.report(p, total, msg)
}

func parseNumber(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
