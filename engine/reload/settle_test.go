package reload_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// logBuffer is a log destination the test reads while the reloader writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const generated = 30 // tools in a generated config

// generatedConfig is what a generator writes: generated tools, all with the
// description version.
func generatedConfig(version string) string {
	var b strings.Builder
	for i := 0; i < generated; i++ {
		b.WriteString(tool(fmt.Sprintf("t%02d", i), version))
	}
	return b.String()
}

// slowWrite rewrites path in place as a shell redirection does: truncate,
// then (after the generator's start-up) write text in chunks with gaps
// between them. Cuts fall inside a line, so that a config read between two
// chunks is broken rather than a shorter valid one.
func slowWrite(t *testing.T, path, text string, startup time.Duration, chunks int, gap time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	time.Sleep(startup)
	prev := 0
	for i := 1; i <= chunks; i++ {
		cut := len(text) * i / chunks
		for cut < len(text) && (text[cut-1] == '\n' || text[cut-1] == '}') {
			cut++
		}
		if _, err := f.WriteString(text[prev:cut]); err != nil {
			t.Fatal(err)
		}
		prev = cut
		if i < chunks {
			time.Sleep(gap)
		}
	}
}

// watchLists has every client list the tools without pause until stop is
// called, and returns every kind of list seen that was not a whole generated
// config (all generated tools, of one version), with how often it was seen.
func watchLists(clients []*client) (stop func() []string) {
	var mu sync.Mutex
	seen := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := c.session.ListTools(ctx, nil)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						seen[fmt.Sprintf("%s: tools/list: %v", c.name, err)]++
						mu.Unlock()
					}
					return
				}
				versions := map[string]bool{}
				for _, tl := range res.Tools {
					versions[tl.Description] = true
				}
				if len(res.Tools) != generated || len(versions) != 1 {
					mu.Lock()
					seen[fmt.Sprintf("%s listed %d tools of versions %v", c.name, len(res.Tools), versions)]++
					mu.Unlock()
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return func() []string {
		cancel()
		wg.Wait()
		var bad []string
		for b, n := range seen {
			bad = append(bad, fmt.Sprintf("%s (%d times)", b, n))
		}
		return bad
	}
}

// A config rewritten in place, slowly, is served only once it is whole: no
// client ever lists an empty or partial tool set, and every client hears
// exactly one list_changed per completed write.
func TestSlowInPlaceWriters(t *testing.T) {
	const debounce = 50 * time.Millisecond
	tests := []struct {
		name    string
		startup time.Duration // between the truncation and the first chunk
		chunks  int
		gap     time.Duration // between chunks
	}{
		{"generator start-up longer than the debounce", 4 * debounce, 4, debounce / 3},
		{"chunks further apart than the debounce", 2 * debounce, 5, 2 * debounce},
		{"truncate and write at once", 0, 1, 0},
		{"many small chunks, close together", debounce / 2, 40, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startWith(t, map[string]string{"tools.hcl": generatedConfig("v0")},
				func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} },
				serve.Options{}, func(r *reload.Reloader) { r.Debounce = debounce; r.EmptySettle = 5 * time.Second }, true)
			path := filepath.Join(e.dir, "tools.hcl")
			clients := e.clients()
			stop := watchLists(clients)
			for _, v := range []string{"v1", "v2"} {
				slowWrite(t, path, generatedConfig(v), tt.startup, tt.chunks, tt.gap)
				expectOne(t, clients)
				for _, c := range clients {
					if got := toolDescriptions(t, c); len(got) != 1 || !got[v] {
						t.Errorf("%s: after writing %s, tool descriptions %v", c.name, v, got)
					}
				}
			}
			for _, b := range stop() {
				t.Error(b)
			}
			// (Reloads may count a reload that found nothing new.)
			if st := e.reloader.Status(); st.Err != "" || st.Pending != "" {
				t.Errorf("status %+v, want no error and nothing pending", st)
			}
		})
	}
}

func toolDescriptions(t *testing.T, c *client) map[string]bool {
	t.Helper()
	res, err := c.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("%s: tools/list: %v", c.name, err)
	}
	m := map[string]bool{}
	for _, tl := range res.Tools {
		m[tl.Description] = true
	}
	return m
}

// A file emptied in place keeps serving what it declared: if the writer then
// writes a broken config, the one before the truncation goes on serving; a
// file left empty is served empty only once it has stayed so for
// EmptySettle, and both are logged with the file's name.
func TestEmptiedFile(t *testing.T) {
	const settle = 600 * time.Millisecond
	var logs *logBuffer
	setup := func(t *testing.T) (*env, string, []*client) {
		logs = &logBuffer{}
		e := startWith(t, map[string]string{"tools.hcl": generatedConfig("v0")},
			func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} },
			serve.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))}, func(r *reload.Reloader) { r.EmptySettle = settle }, true)
		return e, filepath.Join(e.dir, "tools.hcl"), e.clients()
	}

	t.Run("then a broken write", func(t *testing.T) {
		e, path, clients := setup(t)
		must(t, os.Truncate(path, 0))
		// After the debounce the empty file is read and the reload held.
		wait.Until(t, "the reload of the emptied file held", func() bool { return e.reloader.Status().Held > 0 })
		if st := e.reloader.Status(); st.Held == 0 || st.Reloads != 0 || !strings.Contains(st.Pending, "tools.hcl is empty") {
			t.Errorf("status after the truncation: %+v, want a reload held back", st)
		}
		if !strings.Contains(logs.String(), "tools.hcl is empty") {
			t.Errorf("the held reload was not logged with the file name:\n%s", logs.String())
		}
		write(t, path, generatedConfig("v1")+"tool \"broken\" {\n  nonsense = 1\n}\n")
		wait.Until(t, "Status().Failures == 1", func() bool { return e.reloader.Status().Failures == 1 })
		time.Sleep(settle + 200*time.Millisecond) // past the settle window, in which nothing may be applied
		for _, c := range clients {
			if got := toolDescriptions(t, c); len(got) != 1 || !got["v0"] || c.changes.Load() != 0 {
				t.Errorf("%s: after an emptied file and a broken write: descriptions %v, %d list_changed", c.name, got, c.changes.Load())
			}
		}
		write(t, path, generatedConfig("v1"))
		expectOne(t, clients)
	})

	t.Run("left empty", func(t *testing.T) {
		e, path, clients := setup(t)
		emptied := time.Now()
		must(t, os.Truncate(path, 0))
		expectOne(t, clients)
		if took := time.Since(emptied); took < settle {
			t.Errorf("the empty file was served after %v, before EmptySettle (%v)", took, settle)
		}
		for _, c := range clients {
			if got := toolNames(t, c); len(got) != 0 {
				t.Errorf("%s: tools once the file stayed empty: %v", c.name, got)
			}
		}
		if !strings.Contains(logs.String(), "config file is empty and has stayed so") || !strings.Contains(logs.String(), path) {
			t.Errorf("serving the empty file was not logged with its name:\n%s", logs.String())
		}
		if st := e.reloader.Status(); st.Reloads != 1 || st.Err != "" || st.Pending != "" {
			t.Errorf("status %+v", st)
		}
	})
}

// A file that changes while it is being read is not served as read: the
// reload is held back (ErrHeld), the backends it opened are closed, and the
// file is read again once it has settled: by the file watcher, or, when
// polling (where the change is already seen), by Run's retry.
func TestFileChangedWhileReadIsReadAgain(t *testing.T) {
	cfg := func(desc string) string {
		return fmt.Sprintf("counter_backend \"main\" {\n  setting = %q\n}\ntool \"t\" {\n  description = %q\n  touch {\n  }\n}\n", desc, desc)
	}
	tests := []struct {
		name    string
		watch   bool
		trigger func(e *env) error
	}{
		// The explicit load runs well before the watcher's debounce ends.
		{"watcher", true, func(e *env) error { return e.reloader.Reload(context.Background()) }},
		// Polling with a period so long that only the retry can pick the
		// change up; the reload that is held back is Run's own.
		{"polling, on SIGHUP", false, func(e *env) error {
			time.Sleep(60 * time.Millisecond) // v1 settled: Run does not put it off
			e.reloader.Trigger()
			return reload.ErrHeld
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startWith(t, map[string]string{"tools.hcl": cfg("v0")},
				func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} }, serve.Options{},
				func(r *reload.Reloader) { r.Poll = time.Hour }, tt.watch)
			path := filepath.Join(e.dir, "tools.hcl")
			clients := e.clients()

			write(t, path, cfg("v1"))
			e.touch.mu.Lock()
			e.touch.during = func() {
				time.Sleep(20 * time.Millisecond) // a later modification time
				write(t, path, cfg("v2"))
			}
			e.touch.mu.Unlock()
			if err := tt.trigger(e); err != reload.ErrHeld {
				t.Fatalf("reload of a file rewritten while read: %v, want ErrHeld", err)
			}
			wait.Until(t, "Status().Held == 1", func() bool { return e.reloader.Status().Held == 1 })
			if st := e.reloader.Status(); !strings.Contains(st.Pending, "changed while it was read") {
				t.Errorf("status %+v", st)
			}
			expectOne(t, clients)
			if got := toolDescriptions(t, clients[0]); !got["v2"] || len(got) != 1 {
				t.Errorf("tools after the file settled: %v, want v2", got)
			}
			wait.Until(t, "opened.Load() == closed.Load()+1", func() bool { return e.counter.opened.Load() == e.counter.closed.Load()+1 })
		})
	}
}
