package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/authoring/console"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/auth"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// scopedConfig has two API keys with different scopes: bob holds admin,
// alice does not, so wipe and plan are bob's only.
const scopedConfig = `
auth {
  header = "X-Api-Key"
  api_key "alice" {
    value  = env("MCPD_CONSOLE_TEST_ALICE")
    scopes = ["read"]
  }
  api_key "bob" {
    value  = env("MCPD_CONSOLE_TEST_BOB")
    scopes = ["read", "admin"]
  }
}

tool "greet" {
  description = "Greets someone."
  param "name" {
    type = "string"
  }
  result {
    content "text" {
      text = "Hello, ${args.name}"
    }
  }
}

tool "check" {
  description = "Fails on negative numbers, saying which."
  param "n" {
    type = "integer"
  }
  result {
    error_when    = "args.n < 0"
    error_message = "'negative: ' + string(args.n)"
    structured    = "{n: args.n}"
  }
}

tool "wipe" {
  description = "Needs admin."
  scopes      = ["admin"]
  result {
    error_when    = "true"
    error_message = "'wipe failed: tenant-42 still mounted'"
  }
}

prompt "plan" {
  description = "Needs admin."
  scopes      = ["admin"]
  message {
    text = "the secret plan"
  }
}
`

// keyHeader sends an API key with every request.
type keyHeader struct{ key string }

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Api-Key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// shown is a call event as a page got it.
type shown struct {
	console.Call
	raw string
}

// stream reads the call events of one page's /ui/events.
func stream(t *testing.T, url, key string) <-chan shown {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("events as %s: %d", key, resp.StatusCode)
	}
	out := make(chan shown, 100)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && name == "call":
				var c shown
				c.raw = strings.TrimPrefix(line, "data: ")
				if json.Unmarshal([]byte(c.raw), &c.Call) == nil {
					out <- c
				}
			}
		}
	}()
	return out
}

// until collects a stream's calls up to the n-th one named last.
func until(t *testing.T, calls <-chan shown, last string, n int) []shown {
	t.Helper()
	var got []shown
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c, ok := <-calls:
			if !ok {
				t.Fatalf("the stream ended after %v", got)
			}
			got = append(got, c)
			if c.Name == last {
				if n--; n == 0 {
					return got
				}
			}
		case <-deadline:
			t.Fatalf("no %q call in 10s; got %v", last, got)
		}
	}
}

// The console's call stream hides from a page what its principal may not
// see, exactly as /mcp does: calls of tools and prompts outside its scopes
// and of names the config does not declare are not shown at all, and of
// the other principals' calls it sees neither who made them nor their
// error text. Its own calls it sees in full. Both principals use real API
// keys, over real HTTP, live and in the replay a page gets when it opens.
func TestCallStreamScopedToSubscriber(t *testing.T) {
	t.Setenv("MCPD_CONSOLE_TEST_ALICE", "key-alice")
	t.Setenv("MCPD_CONSOLE_TEST_BOB", "key-bob")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(scopedConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	l := loader.Load([]string{dir}, adapter.NewRegistry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })

	con := console.New(console.Options{Logger: quiet})
	srv := serve.New(cur, serve.Options{Logger: quiet, OnCall: con.Record})
	// As mcpd serve --ui mounts them: /mcp and the event stream behind
	// the same authentication.
	mw := &auth.Middleware{Current: func() *auth.Config { return cur.Load().Auth }, Required: true, Logger: quiet}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mw.Wrap(srv.HTTPHandler(serve.HTTPOptions{})))
	ui := con.Handler("/ui/")
	mux.Handle("/ui/", ui)
	mux.Handle("/ui/events", mw.Wrap(ui))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	t.Cleanup(con.Close) // ends the streams, which ts.Close waits for

	aliceLive := stream(t, ts.URL+"/ui/events", "key-alice")
	bobLive := stream(t, ts.URL+"/ui/events", "key-bob")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	client := func(key string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: keyHeader{key}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice, bob := client("key-alice"), client("key-bob")
	callTool := func(cs *mcp.ClientSession, name string, args map[string]any) {
		t.Helper()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil && name != "no_such_tool" && name != "wipe" {
			t.Fatalf("%s: %v", name, err)
		}
	}

	callTool(bob, "greet", map[string]any{"name": "Ann"})
	callTool(bob, "check", map[string]any{"n": -7})
	callTool(bob, "wipe", nil)
	callTool(bob, "no_such_tool", nil)
	if _, err := bob.GetPrompt(ctx, &mcp.GetPromptParams{Name: "plan"}); err != nil {
		t.Fatal(err)
	}
	callTool(alice, "check", map[string]any{"n": -3})
	callTool(alice, "wipe", nil) // hidden from alice: refused as unknown
	callTool(alice, "greet", map[string]any{"name": "last"})

	type want struct {
		name, principal, outcome, error string
		other                           bool
	}
	check := func(who, otherName string, got []shown, wants []want) {
		t.Helper()
		if len(got) != len(wants) {
			t.Errorf("%s's page got %d calls, want %d: %v", who, len(got), len(wants), got)
			return
		}
		for i, w := range wants {
			g := got[i]
			if g.Name != w.name || g.Principal != w.principal || g.Outcome != w.outcome || g.Error != w.error || g.Other != w.other {
				t.Errorf("%s's page, call %d: %s", who, i, g.raw)
			}
			if g.Other && (strings.Contains(g.raw, otherName) || g.Client != "") {
				t.Errorf("%s's page, call %d names another principal: %s", who, i, g.raw)
			}
		}
	}
	aliceWants := []want{
		{"greet", "", "ok", "", true},
		{"check", "", "tool_error", "", true}, // bob's error text is bob's
		// bob's wipe, no_such_tool and plan: not for alice's eyes.
		{"check", "alice", "tool_error", "negative: -3", false},
		{"wipe", "alice", "protocol_error", `unknown tool "wipe"`, false}, // her own mistake
		{"greet", "alice", "ok", "", false},
	}
	bobWants := []want{
		{"greet", "bob", "ok", "", false},
		{"check", "bob", "tool_error", "negative: -7", false},
		{"wipe", "bob", "tool_error", "wipe failed: tenant-42 still mounted", false},
		{"no_such_tool", "bob", "protocol_error", `unknown tool "no_such_tool"`, false},
		{"plan", "bob", "ok", "", false},
		{"check", "", "tool_error", "", true},
		{"wipe", "", "protocol_error", "", true}, // bob may see wipe; not who tried it, nor why it failed
		{"greet", "", "ok", "", true},
	}
	check("alice", "bob", until(t, aliceLive, "greet", 2), aliceWants)
	check("bob", "alice", until(t, bobLive, "greet", 2), bobWants)

	// A page that opens now gets the recent calls, filtered the same way.
	check("alice (replay)", "bob", until(t, stream(t, ts.URL+"/ui/events", "key-alice"), "greet", 2), aliceWants)
	check("bob (replay)", "alice", until(t, stream(t, ts.URL+"/ui/events", "key-bob"), "greet", 2), bobWants)
}
