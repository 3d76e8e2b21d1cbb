package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// logBuffer is a log destination that tests can read while the server
// writes to it.
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

// stuckClient is a stdio client whose host stopped reading stdout: it
// initializes and subscribes over a synchronous pipe, then never reads again,
// so the server's next write to it blocks for as long as the test lasts.
func stuckClient(t *testing.T, srv *serve.Server, uris ...string) {
	t.Helper()
	clientEnd, serverEnd := net.Pipe()
	t.Cleanup(func() { clientEnd.Close() })
	if _, err := srv.SDK().Connect(context.Background(), &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(clientEnd)
	clientEnd.SetDeadline(time.Now().Add(10 * time.Second))
	var msgs []string
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stuck","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"docs://readme"}}`,
	} {
		msgs = append(msgs, msg)
	}
	for i, u := range uris {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, i+3, u))
	}
	for _, msg := range msgs {
		if _, err := fmt.Fprintln(clientEnd, msg); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(msg, `"id"`) {
			if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"result"`) {
				t.Fatalf("%s: %q %v", msg, line, err)
			}
		}
	}
	clientEnd.SetDeadline(time.Time{})
}

// A client that stops reading (here a stdio pipe, which has no write
// deadline) holds up neither the caller of Notify and ResourceUpdated nor any
// other client: the fan-out notifications of every kind go out to the others,
// exactly one per call, and the stuck client is logged.
func TestStuckClientHoldsUpNoOne(t *testing.T) {
	e := newEnv(t)
	logs := &logBuffer{}
	e.srv = serve.New(e.cur, serve.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), SlowClientTimeout: 200 * time.Millisecond})
	// First, so that the SDK's fan-out, which goes through sessions in the
	// order they connected, meets it before everyone else.
	stuckClient(t, e.srv)

	var counts sync.Map // era name → *atomic.Int64 of tools/list_changed
	updates := map[string]*atomic.Int64{}
	streams := e.srv.StreamCount()
	for _, era := range eras {
		n, u := &atomic.Int64{}, &atomic.Int64{}
		counts.Store(era.name, n)
		updates[era.name] = u
		cs := era.connect(t, e, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) },
			ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { u.Add(1) },
		})
		if era.version == legacy {
			if err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: "docs://readme"}); err != nil {
				t.Fatalf("%s: subscribe: %v", era.name, err)
			}
		}
	}
	// The HTTP clients' GET and listen streams open in the background.
	wait.Until(t, "the HTTP clients' streams open", func() bool { return e.srv.StreamCount() >= streams+4 })

	const rounds = 5
	for i := 1; i <= rounds; i++ {
		done := make(chan struct{})
		go func() {
			e.srv.Notify(true, false, false)
			e.srv.ResourceUpdated(context.Background(), "docs://readme")
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("round %d: Notify and ResourceUpdated blocked on a client that does not read", i)
		}
		for _, era := range eras {
			v, _ := counts.Load(era.name)
			n := v.(*atomic.Int64)
			wait.Until(t, fmt.Sprintf("round %d: %s hears of it", i, era.name), func() bool {
				return n.Load() >= int64(i) && (era.version != legacy || updates[era.name].Load() >= int64(i))
			})
		}
	}
	time.Sleep(300 * time.Millisecond) // a window in which no extra notification may arrive: nothing to wait for
	for _, era := range eras {
		v, _ := counts.Load(era.name)
		if got := v.(*atomic.Int64).Load(); got != rounds {
			t.Errorf("%s: %d tools/list_changed for %d calls of Notify", era.name, got, rounds)
		}
		if want := map[bool]int64{true: rounds}[era.version == legacy]; updates[era.name].Load() != want {
			t.Errorf("%s: %d resources/updated, want %d", era.name, updates[era.name].Load(), want)
		}
	}
	if !strings.Contains(logs.String(), "not reading its stream") {
		t.Errorf("the stuck client was not logged; logs:\n%s", logs.String())
	}
	st := e.srv.Stats()
	if st.Coalesced == 0 {
		t.Errorf("the stuck client's queue did not coalesce: %+v", st)
	}
	t.Logf("%+v", st)
}

// A client that stopped reading and has more notifications waiting than its
// queue holds (here: subscribed to more resources than that) is counted and
// its session closed (which, over a pipe without a write deadline, completes
// when the pipe is closed), and the caller is not held up.
func TestOverflowingQueueClosesSession(t *testing.T) {
	e := newEnv(t)
	logs := &logBuffer{}
	e.srv = serve.New(e.cur, serve.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	// As many subscriptions as a session may hold (docs://readme is the
	// stuck client's first), each updated, and a list change of every
	// kind: more notifications than a queue holds.
	var uris []string
	for i := 0; i < 1023; i++ {
		uris = append(uris, fmt.Sprintf("docs://many/%d", i))
	}
	stuckClient(t, e.srv, uris...)
	done := make(chan struct{})
	go func() {
		for _, u := range append(uris, "docs://readme") {
			e.srv.ResourceUpdated(context.Background(), u)
		}
		e.srv.Notify(true, true, true)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ResourceUpdated blocked on a client that does not read")
	}
	wait.Until(t, "the client to be closed", func() bool { return e.srv.Stats().SlowClients == 1 })
	if !strings.Contains(logs.String(), "notifications waiting") {
		t.Errorf("closing the client was not logged:\n%s", logs.String())
	}
}
