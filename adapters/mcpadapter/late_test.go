package mcpadapter_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What an upstream sends reaches only the caller it belongs to (relay.go).
// Real parts: a misbehaving go-sdk upstream of the test's own, over stdio
// (this test binary, run again as the upstream's process) and HTTP;
// mcpd (engine/serve behind bearer tokens) as the gateway; go-sdk clients
// as two callers, reader and outsider (verifyCaller).

// lateUpstream is a go-sdk server whose late tool returns at once and
// keeps what it needs to send more after its result: a log record, a
// progress notification and an elicitation, which its wait tool sends
// (while the caller of wait has its call in flight), reporting what came
// of each. ask asks its own caller mid-call, as a well-behaved tool does.
type lateUpstream struct {
	stdio bool // its messages may be sent with the late call's context

	mu      sync.Mutex
	session *mcp.ServerSession
	ctx     context.Context // the late call's, without its end
	token   any             // the late call's progress token
}

func newLateServer(stdio bool) *mcp.Server {
	u := &lateUpstream{stdio: stdio}
	s := mcp.NewServer(&mcp.Implementation{Name: "late-up", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{}},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "late", Description: "Returns, and sends more later."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.session, u.ctx, u.token = req.Session, context.WithoutCancel(ctx), req.Params.GetProgressToken()
		return text("done"), nil, nil
	})
	// Reading note leaves what late does (without progress).
	s.AddResource(&mcp.Resource{URI: "late://note", Name: "note"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		u.mu.Lock()
		defer u.mu.Unlock()
		u.session, u.ctx, u.token = req.Session, context.WithoutCancel(ctx), nil
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note"}}}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Sends what late left."}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		u.mu.Lock()
		ss, lctx, token := u.session, u.ctx, u.token
		u.session = nil
		u.mu.Unlock()
		if ss == nil {
			return text("nothing pending"), nil, nil
		}
		if !u.stdio {
			// Over HTTP the late call's context would name its request,
			// whose stream is gone: the session's own stream carries
			// these. (A 2026-07-28 record's level rides on the call's
			// context, which a stdio upstream keeps.)
			lctx = context.Background()
		}
		lctx, cancel := context.WithTimeout(lctx, 20*time.Second)
		defer cancel()
		var out []string
		out = append(out, fmt.Sprintf("record: %v", delivered(lctx, func() error {
			return ss.Log(lctx, &mcp.LoggingMessageParams{Level: "info", Data: "late record"})
		})))
		if token != nil {
			out = append(out, fmt.Sprintf("progress: %v", delivered(lctx, func() error {
				return ss.NotifyProgress(lctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: "late progress"})
			})))
		}
		var r *mcp.ElicitResult
		if err := delivered(lctx, func() (err error) {
			r, err = ss.Elicit(lctx, &mcp.ElicitParams{Message: "late question", RequestedSchema: nameSchema})
			return err
		}); err != nil {
			out = append(out, "question: refused: "+err.Error())
		} else {
			out = append(out, fmt.Sprintf("question: %s %v", r.Action, r.Content["name"]))
		}
		return text(strings.Join(out, "\n")), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks its caller's name."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?", RequestedSchema: nameSchema})
		if err != nil {
			return text("refused: " + err.Error()), nil, nil
		}
		return text(fmt.Sprintf("name: %v", r.Content["name"])), nil, nil
	})
	return s
}

// delivered sends with send until the message leaves: over HTTP, the
// session's own stream (the gateway's GET) may not be open yet.
func delivered(ctx context.Context, send func() error) error {
	for {
		err := send()
		if err == nil || !strings.Contains(err.Error(), "undelivered") || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var nameSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}

// TestLateUpstreamProcess is lateUpstream over stdio when this test binary
// is run as a stdio upstream's program (MCPD_TEST_LATE_UPSTREAM=1); it is
// skipped otherwise.
func TestLateUpstreamProcess(t *testing.T) {
	if os.Getenv("MCPD_TEST_LATE_UPSTREAM") != "1" {
		t.Skip("the stdio upstream of the late-message tests")
	}
	// Nothing but the protocol may reach stdout: the process ends here.
	_ = newLateServer(true).Run(context.Background(), &mcp.StdioTransport{})
	os.Exit(0)
}

// lateGateway serves late, wait and ask of the upstream up, whose block
// holds server (its command or url, and protocol_version), and its
// resources.
func lateGateway(server string) string {
	var tools string
	for _, name := range []string{"late", "wait", "ask"} {
		tools += fmt.Sprintf(`
tool %q {
  description = "The upstream's %s."
  mcp {
    server = "up"
  }
}
`, name, name)
	}
	return "mcp_server \"up\" {\n" + server + "\n  expose {\n    resources = true\n  }\n}\n" + tools
}

// stdioLate is the block of lateUpstream run over stdio, on version.
func stdioLate(version string) string {
	return fmt.Sprintf(`  command          = [%q, "-test.run=^TestLateUpstreamProcess$"]
  env              = { MCPD_TEST_LATE_UPSTREAM = "1" }
  protocol_version = %q`, os.Args[0], version)
}

// httpLate is the block of a lateUpstream served over HTTP (2025-11-25:
// a 2026-07-28 HTTP upstream is stateless and cannot send anything after
// a call's result).
func httpLate(t *testing.T) string {
	srv := newLateServer(false)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return fmt.Sprintf("  url = %q\n  protocol_version = %q", ts.URL, legacy)
}

// lateClient records everything the gateway sent a caller of its own
// accord, and answers its questions with its name.
type lateClient struct {
	name string
	mu   sync.Mutex
	seen []string
}

func (c *lateClient) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, s)
}

func (c *lateClient) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

func (c *lateClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.add("question: " + req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": c.name}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			c.add(fmt.Sprintf("record: %v", req.Params.Data))
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.add("progress: " + req.Params.Message)
		},
	}
}

func callText(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams) string {
	t.Helper()
	res, err := cs.CallTool(bounded(t), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	return textOf(res)
}

// A question, log record or progress an upstream sends after the call it
// belongs to has ended never reaches another caller who has a call in
// flight on that upstream: it is dropped and counted. Over stdio the two
// callers share the upstream's one session, which, once it has served
// both, cannot tell whose its messages are: the cost is that their own
// mid-call questions are refused too. Over HTTP each caller's calls have
// pooled sessions of their own, whose late messages (the session back in
// the pool) belong to no call.
func TestRelayLateMessagesStayWithTheirCaller(t *testing.T) {
	for _, tc := range []struct {
		name    string
		server  func(t *testing.T) string
		asks    bool // the upstream can send requests (2025-11-25)
		sharing bool // the callers share one upstream session
		read    bool // alice reads a resource rather than calls a tool
	}{
		{"stdio 2025-11-25", func(*testing.T) string { return stdioLate(legacy) }, true, true, false},
		{"stdio 2025-11-25, after a resource read", func(*testing.T) string { return stdioLate(legacy) }, true, true, true},
		{"stdio 2026-07-28", func(*testing.T) string { return stdioLate(modern) }, false, true, false},
		{"http 2025-11-25", httpLate, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := serveWatchedAuth(t, lateGateway(tc.server(t)), verifyCaller)
			alice, bob := &lateClient{name: "alice"}, &lateClient{name: "bob"}
			acs := connectAs(t, w.url, legacy, "reader", alice.options())
			bcs := connectAs(t, w.url, legacy, "outsider", bob.options())
			for _, cs := range []*mcp.ClientSession{acs, bcs} {
				if err := cs.SetLoggingLevel(bounded(t), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.asks {
				// Before anyone else used the upstream, bob's own
				// question reaches him.
				if got := callText(t, bcs, &mcp.CallToolParams{Name: "ask"}); got != "name: bob" {
					t.Fatalf("bob's own question: %q", got)
				}
			}
			before := upstreamStatus(t, w.cur, "up")
			if tc.read {
				waitFor(t, "the upstream's resource is served", func() bool {
					_, err := acs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "late://note"})
					return err == nil
				})
			} else if got := callText(t, acs, &mcp.CallToolParams{Name: "late", Meta: mcp.Meta{"progressToken": "alice-1"}}); got != "done" {
				t.Fatalf("late: %q", got)
			}
			got := callText(t, bcs, &mcp.CallToolParams{Name: "wait"})
			t.Logf("wait: %s", got)
			if tc.asks && !strings.Contains(got, "question: refused") {
				t.Errorf("alice's late question was answered by bob's call: %s", got)
			}
			wantRequests := before.UnattributedRequests
			if tc.asks {
				wantRequests++
			}
			waitFor(t, "the late messages are counted as dropped", func() bool {
				st := upstreamStatus(t, w.cur, "up")
				return st.UnattributedRecords > before.UnattributedRecords &&
					(tc.read || st.UnattributedProgress > before.UnattributedProgress) &&
					st.UnattributedRequests >= wantRequests
			})
			for _, c := range []*lateClient{alice, bob} {
				for _, s := range c.got() {
					if strings.Contains(s, "late") {
						t.Errorf("%s got %q", c.name, s)
					}
				}
			}
			if !tc.asks {
				return
			}
			// The cost, on a shared session: a question that names no call
			// may be alice's, so bob's own is refused too; on a pooled
			// session of his own it still reaches him.
			got = callText(t, bcs, &mcp.CallToolParams{Name: "ask"})
			if tc.sharing && !strings.Contains(got, "more than one caller") {
				t.Errorf("bob's own question on the session alice used: %q", got)
			}
			if !tc.sharing && got != "name: bob" {
				t.Errorf("bob's own question on his pooled session: %q", got)
			}
		})
	}
}

// A 2025-11-25 client that declared elicitation but opened no GET stream
// is asked the upstream's question on its call's POST stream, as it is
// asked mcpd's own, and its answer reaches the upstream.
func TestRelayOnThePostStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server func(t *testing.T) string
	}{
		{"stdio", func(*testing.T) string { return stdioLate(legacy) }},
		{"http", httpLate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := serveConfig(t, lateGateway(tc.server(t)))
			carol := &lateClient{name: "carol"}
			c := mcp.NewClient(&mcp.Implementation{Name: "no-get", Version: "1"}, carol.options())
			cs, err := c.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true},
				&mcp.ClientSessionOptions{ProtocolVersion: legacy})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			if got := callText(t, cs, &mcp.CallToolParams{Name: "ask"}); got != "name: carol" {
				t.Errorf("ask: %q (carol saw %q)", got, carol.got())
			}
		})
	}
}
