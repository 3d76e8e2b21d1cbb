package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK retires a call's response as soon as it reads it, but hands the
// notifications it read before it to a handler goroutine: the last progress
// notification (or log record) an upstream sent just before its result
// could reach onProgress after the call had returned (and been forgotten),
// and was lost. So mcpd counts the progress notifications of each token,
// and the log records, as it reads them off the upstream's stdout or its
// HTTP event streams, and a call waits, before it returns, until those
// counted have been relayed (progressDrainWait at most).

// progressDrainWait bounds how long a finished call waits for progress
// notifications read before its result but not yet relayed.
const progressDrainWait = time.Second

// progressLinePrefix is how much of a line is kept to recognise a progress
// notification; a longer notification is not counted (and not waited for).
const progressLinePrefix = 4096

// pendingProgress counts, per progress token, the notifications read off the
// wire and not yet relayed.
type pendingProgress struct {
	mu      sync.Mutex
	n       map[string]int
	changed chan struct{} // closed (and replaced) when a count goes down
}

func (p *pendingProgress) seen(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[string]int{}
	}
	p.n[key]++
}

func (p *pendingProgress) done(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[key] == 0 {
		return
	}
	if p.n[key]--; p.n[key] == 0 {
		delete(p.n, key)
	}
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// drain waits until no notification of key is pending, or max has passed,
// and then forgets key.
func (p *pendingProgress) drain(key string, max time.Duration) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if p.n[key] == 0 {
			p.mu.Unlock()
			return
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			p.mu.Lock()
			delete(p.n, key)
			p.mu.Unlock()
			return
		}
	}
}

// progressScanner passes an upstream's stdout through, counting the progress
// notifications and log records in it (newline-delimited JSON-RPC), or, with
// sse, an HTTP event stream's (each message a "data:" line).
type progressScanner struct {
	r       io.ReadCloser
	pending *pendingProgress
	sse     bool
	line    []byte
	long    bool // the current line is longer than progressLinePrefix
}

func (s *progressScanner) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !s.long {
			if len(s.line)+len(chunk) > progressLinePrefix {
				s.long = true
			} else {
				s.line = append(s.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !s.long {
			s.scan(s.line)
		}
		s.line, s.long = s.line[:0], false
		b = b[i+1:]
	}
	return n, err
}

func (s *progressScanner) Close() error { return s.r.Close() }

func (s *progressScanner) scan(line []byte) {
	if s.sse {
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			return
		}
		line = bytes.TrimSuffix(data, []byte("\r"))
	}
	if bytes.Contains(line, []byte(`"notifications/message"`)) {
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(line, &msg) == nil && msg.Method == "notifications/message" {
			s.pending.seen(logPendingKey)
		}
		return
	}
	if !bytes.Contains(line, []byte(`"notifications/progress"`)) {
		return
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			ProgressToken any `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != "notifications/progress" || msg.Params.ProgressToken == nil {
		return
	}
	s.pending.seen(fmt.Sprint(msg.Params.ProgressToken))
}

// onProgress relays an upstream's progress notification to the call that
// asked for it, by the token mcpd put in the call (and in no other). One
// whose token names no call in flight (it came after its call ended) is
// dropped and counted.
func (r *relays) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	key := fmt.Sprint(req.Params.ProgressToken)
	if f, ok := r.progress.Load(key); ok {
		f.(func(float64, float64, string))(req.Params.Progress, req.Params.Total, req.Params.Message)
	} else {
		r.dropped("notifications/progress", "its progress token names none of its tool calls or prompt gets in flight")
	}
	r.pending.done(key)
}

// progressToken registers report for the progress of one call and returns
// the token to send and the function that forgets it.
func (r *relays) progressToken(report func(float64, float64, string)) (string, func()) {
	key := "mcpd-" + strconv.FormatInt(r.progressSeq.Add(1), 10)
	r.progress.Store(key, report)
	return key, func() {
		// Progress read before the result is relayed before it (progress.go).
		r.pending.drain(key, progressDrainWait)
		r.progress.Delete(key)
	}
}
