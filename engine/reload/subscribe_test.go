package reload_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/internal/wait"
)

// reader is the one caller of a server behind bearer tokens: any token
// is it, with the scope docs.
func reader(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
	ti := (&principal.Principal{Name: "reader", Method: "oauth", Scopes: []string{"docs"}}).TokenInfo()
	ti.Expiration = time.Now().Add(time.Hour)
	return ti, nil
}

// A reload that hides a resource from a subscriber mutes it in the same
// reload: the subscriber hears nothing of the change made with it, nor of
// later ones, until a reload shows the resource again.
func TestReloadMutesWhatItHides(t *testing.T) {
	readme := func(text string, scopes string) string {
		return fmt.Sprintf("resource \"readme\" {\n  uri    = \"docs://readme\"\n  text   = %q\n  scopes = [%s]\n}\n", text, scopes)
	}
	e := startWith(t, map[string]string{"tools.hcl": readme("v0", "")}, func(dir string) []string { return []string{dir} }, serve.Options{}, nil, false)
	ts := httptest.NewServer(auth.RequireBearerToken(reader, nil)(e.srv.HTTPHandler(serve.HTTPOptions{})))
	t.Cleanup(ts.Close)
	var heard atomic.Int64
	var each [2]atomic.Int64 // by client
	for i, kind := range []struct {
		name string
		opts *mcp.ClientSessionOptions
	}{{"2025-11-25", nil}, {"2026-07-28", &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"}}} {
		cl := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) { heard.Add(1); each[i].Add(1) },
		})
		cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: authtest.Bearer("t", nil)}}, kind.opts)
		if err != nil {
			t.Fatalf("%s: %v", kind.name, err)
		}
		t.Cleanup(func() { cs.Close() })
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "docs://readme"}); err != nil {
			t.Fatalf("%s: subscribe: %v", kind.name, err)
		}
	}
	// The modern client's listen stream opens in the background: until
	// both clients hear of the resource, tell them again.
	wait.Until(t, "the clients heard of their subscription", func() bool {
		if each[0].Load() > 0 && each[1].Load() > 0 {
			return true
		}
		e.srv.ResourceUpdated(context.Background(), "docs://readme")
		return false
	})
	time.Sleep(300 * time.Millisecond) // the last of those arrive: how many are in flight is not known, so a quiet window

	// step reloads text and scopes, and checks how many clients hear of it.
	step := func(name, text, scopes string, want int64) {
		t.Helper()
		before := heard.Load()
		write(t, filepath.Join(e.dir, "tools.hcl"), readme(text, scopes))
		if err := e.reloader.Reload(context.Background()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wait.Until(t, fmt.Sprintf("%s: %d resources/updated", name, want), func() bool { return heard.Load()-before >= want })
		time.Sleep(300 * time.Millisecond) // a window for any other notification to arrive: it must not
		if got := heard.Load() - before; got != want {
			t.Errorf("%s: %d resources/updated, want %d", name, got, want)
		}
	}
	step("changed", "v1", "", 2)
	step("still shown to the scope docs", "v2", `"docs"`, 2)
	step("hidden and changed", "v3", `"admin"`, 0)
	step("changed while hidden", "v4", `"admin"`, 0)
	step("shown and changed", "v5", "", 2)
}

// A 2026-07-28 client on one session (stdio) opens a listen stream for the
// list changes and one per resource it subscribes to; the end of one of
// them leaves the others as they were: after an unsubscribe it still hears
// of every list change, once, and of updates to what it still subscribes.
func TestListenEndingKeepsTheOthers(t *testing.T) {
	files := map[string]string{"tools.hcl": `
resource "a" {
  uri  = "docs://a"
  text = "a0"
}
resource "b" {
  uri  = "docs://b"
  text = "b0"
}
`}
	e := startWith(t, files, func(dir string) []string { return []string{dir} }, serve.Options{}, nil, false)
	var tools atomic.Int64
	updated := map[string]*atomic.Int64{"docs://a": {}, "docs://b": {}}
	cl := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { tools.Add(1) },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if n := updated[req.Params.URI]; n != nil {
				n.Add(1)
			}
		},
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.SDK().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, uri := range []string{"docs://a", "docs://b"} {
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	// The client opens its listens in the background: until it hears of
	// a list change and of both resources, tell it again.
	heardAll := func() bool {
		return tools.Load() > 0 && updated["docs://a"].Load() > 0 && updated["docs://b"].Load() > 0
	}
	wait.Until(t, "the client's listen streams opened", func() bool {
		if heardAll() {
			return true
		}
		e.srv.Notify(true, false, false)
		e.srv.ResourceUpdated(context.Background(), "docs://a")
		e.srv.ResourceUpdated(context.Background(), "docs://b")
		return false
	})
	time.Sleep(300 * time.Millisecond) // the last of those arrive: how many are in flight is not known, so a quiet window
	tools.Store(0)
	updated["docs://a"].Store(0)
	updated["docs://b"].Store(0)

	if err := cs.Unsubscribe(context.Background(), &mcp.UnsubscribeParams{URI: "docs://a"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the stream's end reaches the server (not observable from outside serve on stdio)

	// Each reload rewrites the texts and adds a tool: the client hears of
	// the list change and of b, not of a.
	for i, tool := range []string{"one", "two"} {
		files["tools.hcl"] = strings.NewReplacer(fmt.Sprintf(`"a%d"`, i), fmt.Sprintf(`"a%d"`, i+1), fmt.Sprintf(`"b%d"`, i), fmt.Sprintf(`"b%d"`, i+1)).Replace(files["tools.hcl"]) +
			fmt.Sprintf("tool %q {\n  description = \"d\"\n  counter {}\n}\n", tool)
		write(t, filepath.Join(e.dir, "tools.hcl"), files["tools.hcl"])
		if err := e.reloader.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := int64(i + 1)
		wait.Until(t, fmt.Sprintf("reload %d heard", i+1), func() bool { return tools.Load() >= want && updated["docs://b"].Load() >= want })
		time.Sleep(300 * time.Millisecond) // a window for any other notification to arrive: it must not
		if got := tools.Load(); got != want {
			t.Errorf("reload %d: %d tools/list_changed in all, want %d", i+1, got, want)
		}
		if got := updated["docs://b"].Load(); got != want {
			t.Errorf("reload %d: %d updates of docs://b in all, want %d", i+1, got, want)
		}
		if got := updated["docs://a"].Load(); got != 0 {
			t.Errorf("reload %d: %d updates of docs://a, unsubscribed", i+1, got)
		}
	}
}
