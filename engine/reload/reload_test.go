package reload_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// counterAdapter is a minimal adapter with a backend block, so that tests
// can see backends being opened, carried over and closed across reloads.
type counterAdapter struct{ opened, closed atomic.Int64 }

type counterConfig struct {
	a    *counterAdapter
	conf string
}

type counterBackend struct{ a *counterAdapter }

type counterHandler struct{}

func (a *counterAdapter) BackendBlock() string { return "counter_backend" }
func (a *counterAdapter) DecodeBackend(b *adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	attrs, diags := b.Body.JustAttributes()
	conf := ""
	if at, ok := attrs["setting"]; ok {
		v, d := at.Expr.Value(nil)
		diags = append(diags, d...)
		conf = v.AsString()
	}
	return &counterConfig{a: a, conf: conf}, diags
}
func (a *counterAdapter) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	return counterHandler{}, nil
}
func (c *counterConfig) Fingerprint() string { return c.conf }
func (c *counterConfig) Open() (adapter.Backend, error) {
	c.a.opened.Add(1)
	return &counterBackend{c.a}, nil
}
func (b *counterBackend) Close() error        { b.a.closed.Add(1); return nil }
func (counterHandler) Vars() []string         { return nil }
func (counterHandler) Traits() adapter.Traits { return adapter.Traits{ReadsEval: true} }
func (counterHandler) Call(ctx context.Context, req *adapter.Request) (*adapter.Output, error) {
	return &adapter.Output{Text: "counted"}, nil
}

// touchAdapter runs a hook while a tool of its block is compiled, that is,
// in the middle of a load: tests use it to change a file while it is read.
type touchAdapter struct {
	mu     sync.Mutex
	during func()
}

func (a *touchAdapter) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	a.mu.Lock()
	f := a.during
	a.during = nil
	a.mu.Unlock()
	if f != nil {
		f()
	}
	return counterHandler{}, nil
}

// env is a running server with a reloader over a config in a temp dir.
type env struct {
	t        *testing.T
	dir      string
	paths    []string
	reg      *adapter.Registry
	counter  *counterAdapter
	touch    *touchAdapter
	current  *snapshot.Current
	srv      *serve.Server
	reloader *reload.Reloader
	http     *httptest.Server
}

func start(t *testing.T, files map[string]string, paths func(dir string) []string) *env {
	t.Helper()
	return startWith(t, files, paths, serve.Options{}, nil, true)
}

// startWith is start with the server's options and the reloader's settings
// given (opts.Logger defaults to a discarding one), and the file watcher on
// or off.
func startWith(t *testing.T, files map[string]string, paths func(dir string) []string, opts serve.Options, tune func(*reload.Reloader), watch bool) *env {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		write(t, filepath.Join(dir, name), text)
	}
	e := &env{t: t, dir: dir, paths: paths(dir), counter: &counterAdapter{}, touch: &touchAdapter{}}
	e.reg = adapter.NewRegistry()
	e.reg.Register("counter", e.counter)
	e.reg.Register("touch", e.touch)
	l := loader.Load(e.paths, e.reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("initial config: %v", l.Diagnostics)
	}
	e.current = &snapshot.Current{}
	e.current.Swap(l.Snapshot)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e.srv = serve.New(e.current, opts)
	e.reloader = &reload.Reloader{Paths: e.paths, Registry: e.reg, Current: e.current, Notifier: e.srv, Version: "test", Logger: opts.Logger}
	if tune != nil {
		tune(e.reloader)
	}
	e.reloader.Init(l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.reloader.Run(ctx, watch) }()
	e.http = httptest.NewServer(e.srv.HTTPHandler(serve.HTTPOptions{}))
	t.Cleanup(func() {
		e.http.Close()
		cancel()
		<-done
	})
	// Let the watcher register its directories before the test edits files.
	time.Sleep(50 * time.Millisecond)
	return e
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// client is one connected client that counts tools/list_changed.
type client struct {
	name    string
	session *mcp.ClientSession
	changes atomic.Int64
	signal  chan struct{}
}

func (e *env) connect(kind string) *client {
	e.t.Helper()
	c := &client{name: kind, signal: make(chan struct{}, 100)}
	cl := mcp.NewClient(&mcp.Implementation{Name: "test-" + kind, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.changes.Add(1)
			c.signal <- struct{}{}
		},
	})
	ctx := context.Background()
	var err error
	switch kind {
	case "stdio": // the same server session code as stdio, over in-memory pipes
		ct, st := mcp.NewInMemoryTransports()
		if _, err := e.srv.SDK().Connect(ctx, st, nil); err != nil {
			e.t.Fatal(err)
		}
		c.session, err = cl.Connect(ctx, ct, nil)
	case "legacy-http":
		c.session, err = cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.http.URL}, nil)
	case "modern-http":
		c.session, err = cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.http.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	default:
		e.t.Fatalf("unknown client kind %q", kind)
	}
	if err != nil {
		e.t.Fatalf("connecting %s: %v", kind, err)
	}
	e.t.Cleanup(func() { c.session.Close() })
	return c
}

func (e *env) clients() []*client {
	before := e.srv.StreamCount()
	cs := []*client{e.connect("stdio"), e.connect("legacy-http"), e.connect("modern-http")}
	e.streamsOpen(before + 2)
	return cs
}

// expectOne waits for each client's first notification, then checks that no
// second one follows.
func expectOne(t *testing.T, clients []*client) {
	t.Helper()
	for _, c := range clients {
		select {
		case <-c.signal:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no tools/list_changed within 5s", c.name)
		}
	}
	time.Sleep(300 * time.Millisecond) // a window in which no second notification may arrive: nothing to wait for
	for _, c := range clients {
		if n := c.changes.Load(); n != 1 {
			t.Errorf("%s: got %d tools/list_changed, want exactly 1", c.name, n)
		}
		c.changes.Store(0)
	}
}

func toolNames(t *testing.T, c *client) []string {
	t.Helper()
	res, err := c.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("%s: tools/list: %v", c.name, err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func tool(name, desc string) string {
	return fmt.Sprintf("tool %q {\n  description = %q\n  result {\n    content \"text\" {\n      text = \"ok\"\n    }\n  }\n}\n", name, desc)
}

func TestEveryKindOfChangeReloadsOnceForEveryClient(t *testing.T) {
	fileConfig := func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} }
	dirConfig := func(dir string) []string { return []string{filepath.Join(dir, "conf")} }
	tests := []struct {
		name   string
		files  map[string]string
		paths  func(string) []string
		change func(t *testing.T, dir string)
		want   []string
	}{
		{
			name:  "write in place",
			files: map[string]string{"tools.hcl": tool("a", "A")},
			paths: fileConfig,
			change: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "tools.hcl"), tool("a", "A")+tool("b", "B"))
			},
			want: []string{"a", "b"},
		},
		{
			name:  "atomic rename (editor save)",
			files: map[string]string{"tools.hcl": tool("a", "A")},
			paths: fileConfig,
			change: func(t *testing.T, dir string) {
				tmp := filepath.Join(dir, ".tools.hcl.tmp")
				write(t, tmp, tool("c", "C"))
				if err := os.Rename(tmp, filepath.Join(dir, "tools.hcl")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"c"},
		},
		{
			name:  "new file in a config directory",
			files: map[string]string{"conf/a.hcl": tool("a", "A")},
			paths: dirConfig,
			change: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "conf", "b.hcl"), tool("b", "B"))
			},
			want: []string{"a", "b"},
		},
		{
			name:  "file deleted from a config directory",
			files: map[string]string{"conf/a.hcl": tool("a", "A"), "conf/b.hcl": tool("b", "B")},
			paths: dirConfig,
			change: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "conf", "b.hcl")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"a"},
		},
		{
			name: "file() reference edited",
			files: map[string]string{
				"tools.hcl": "tool \"a\" {\n  description = file(\"desc.txt\")\n  result {\n    content \"text\" {\n      text = \"ok\"\n    }\n  }\n}\n",
				"desc.txt":  "first",
			},
			paths: fileConfig,
			change: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, "desc.txt"), "second")
			},
			want: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := start(t, tt.files, tt.paths)
			clients := e.clients()
			tt.change(t, e.dir)
			expectOne(t, clients)
			for _, c := range clients {
				if got := toolNames(t, c); fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("%s: tools after reload = %v, want %v", c.name, got, tt.want)
				}
			}
		})
	}
}

func TestConfigMapSymlinkSwap(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf")
	write(t, filepath.Join(conf, "..2026_01", "tools.hcl"), tool("a", "A"))
	must(t, os.Symlink("..2026_01", filepath.Join(conf, "..data")))
	must(t, os.Symlink(filepath.Join("..data", "tools.hcl"), filepath.Join(conf, "tools.hcl")))

	e := start(t, nil, func(string) []string { return []string{conf} })
	clients := e.clients()

	// What the kubelet does: a new timestamped directory, a new symlink
	// beside the old, renamed over it.
	write(t, filepath.Join(conf, "..2026_02", "tools.hcl"), tool("a", "A")+tool("z", "Z"))
	must(t, os.Symlink("..2026_02", filepath.Join(conf, "..data_tmp")))
	must(t, os.Rename(filepath.Join(conf, "..data_tmp"), filepath.Join(conf, "..data")))
	must(t, os.RemoveAll(filepath.Join(conf, "..2026_01")))

	expectOne(t, clients)
	if got := toolNames(t, clients[0]); fmt.Sprint(got) != "[a z]" {
		t.Errorf("tools after swap = %v, want [a z]", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestBrokenEditKeepsServingThenFixReloads(t *testing.T) {
	e := start(t, map[string]string{"tools.hcl": tool("a", "A")}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	clients := e.clients()
	path := filepath.Join(e.dir, "tools.hcl")

	write(t, path, tool("a", "A")+"tool \"b\" {\n  nonsense = 1\n}\n")
	wait.Until(t, "Status().Failures == 1", func() bool { return e.reloader.Status().Failures == 1 })
	st := e.reloader.Status()
	if want := "tools.hcl:10:3"; !contains(st.Err, want) {
		t.Errorf("status error %q does not point at %s", st.Err, want)
	}
	for _, c := range clients {
		if got := toolNames(t, c); fmt.Sprint(got) != "[a]" {
			t.Errorf("%s: tools while broken = %v, want [a]", c.name, got)
		}
		res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "a"})
		if err != nil || res.IsError {
			t.Errorf("%s: calling the old tool while the config is broken: %v %v", c.name, err, res)
		}
		if n := c.changes.Load(); n != 0 {
			t.Errorf("%s: a broken edit sent %d notifications", c.name, n)
		}
	}

	write(t, path, tool("a", "A")+tool("b", "B"))
	expectOne(t, clients)
	if st := e.reloader.Status(); st.Err != "" || st.Reloads != 1 {
		t.Errorf("status after fix = %+v", st)
	}
}

func TestUnchangedBackendsAreKeptAndReplacedOnesClosed(t *testing.T) {
	cfg := func(setting, desc string) string {
		return fmt.Sprintf("counter_backend \"main\" {\n  setting = %q\n}\ntool \"t\" {\n  description = %q\n  counter {\n  }\n}\n", setting, desc)
	}
	e := start(t, map[string]string{"tools.hcl": cfg("one", "first")}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	path := filepath.Join(e.dir, "tools.hcl")
	ctx := context.Background()

	write(t, path, cfg("one", "second")) // the tool changes, the backend does not
	wait.Until(t, "Status().Reloads == 1", func() bool { return e.reloader.Status().Reloads == 1 })
	if o, c := e.counter.opened.Load(), e.counter.closed.Load(); o != 1 || c != 0 {
		t.Errorf("after a reload that kept the backend: opened %d closed %d, want 1 and 0", o, c)
	}

	write(t, path, cfg("two", "second")) // the backend changes
	wait.Until(t, "Status().Reloads == 2", func() bool { return e.reloader.Status().Reloads == 2 })
	wait.Until(t, "closed.Load() == 1", func() bool { return e.counter.closed.Load() == 1 })
	if o := e.counter.opened.Load(); o != 2 {
		t.Errorf("after a backend change: opened %d, want 2", o)
	}
	if err := e.reloader.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if o, c := e.counter.opened.Load(), e.counter.closed.Load(); o != 2 || c != 1 {
		t.Errorf("after a no-op reload: opened %d closed %d, want 2 and 1", o, c)
	}
}

func TestReloadUnderLoad(t *testing.T) {
	e := start(t, map[string]string{"tools.hcl": tool("a", "A")}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	const n = 16
	var clients []*client
	streams := e.srv.StreamCount()
	for i := 0; i < n; i++ {
		kind := []string{"stdio", "legacy-http", "modern-http"}[i%3]
		clients = append(clients, e.connect(kind))
		if kind != "stdio" {
			streams++
		}
	}
	e.streamsOpen(streams)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var calls, failures atomic.Int64
	for _, c := range clients {
		wg.Add(1)
		go func(c *client) {
			defer wg.Done()
			for ctx.Err() == nil {
				res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "a"})
				calls.Add(1)
				if err != nil || res.IsError {
					failures.Add(1)
					t.Errorf("%s: call failed during reload: %v %v", c.name, err, res)
					return
				}
			}
		}(c)
	}
	wait.Until(t, "every client's calls running", func() bool { return calls.Load() >= n })
	write(t, filepath.Join(e.dir, "tools.hcl"), tool("a", "A")+tool("b", "B"))
	expectOne(t, clients)
	cancel()
	wg.Wait()
	if failures.Load() != 0 || calls.Load() < n {
		t.Errorf("calls %d, failures %d", calls.Load(), failures.Load())
	}
}

func TestManyReloadsLeakNoFileDescriptors(t *testing.T) {
	e := start(t, map[string]string{"tools.hcl": tool("a", "A")}, func(dir string) []string { return []string{filepath.Join(dir, "tools.hcl")} })
	ctx := context.Background()
	path := filepath.Join(e.dir, "tools.hcl")
	fds := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd on this system")
		}
		return len(entries)
	}
	// Warm up: the first reloads may open lazily-created descriptors.
	for i := 0; i < 5; i++ {
		must(t, e.reloader.Reload(ctx))
	}
	before := fds()
	for i := 0; i < 1000; i++ {
		write(t, path, tool("a", fmt.Sprintf("A%d", i%2)))
		must(t, e.reloader.Reload(ctx))
	}
	// Retired snapshots close in the background.
	wait.Until(t, "the retired snapshots closed", func() bool {
		return fds() <= before+2 && e.counter.opened.Load() == e.counter.closed.Load()
	})
	if after := fds(); after > before+2 {
		t.Errorf("open file descriptors went from %d to %d after 1000 reloads", before, after)
	}
	if o, c := e.counter.opened.Load(), e.counter.closed.Load(); o != c {
		t.Errorf("backends opened %d, closed %d", o, c)
	}
}

// streamsOpen waits until the server counts n long-lived streams open: the
// HTTP clients' GET and subscriptions/listen streams open in the
// background, after Connect returns.
func (e *env) streamsOpen(n int) {
	e.t.Helper()
	wait.Until(e.t, fmt.Sprintf("%d streams open", n), func() bool { return e.srv.StreamCount() >= n })
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
