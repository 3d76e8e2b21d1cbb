package mcpadapter_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/internal/wait"
)

// Completions and resource subscriptions of what a gateway's expose block
// contributes go to the upstream. Real parts: mcpd (engine/serve with its
// reloader, over httptest) as the gateway, in front of a go-sdk server and
// of mcpd itself, each in both protocol eras; go-sdk clients of both eras.

// watched serves a config like a running `mcpd serve`: with the reloader
// that rebuilds the snapshot when an upstream's listing arrives or
// changes. rewrite replaces the config and reloads it at once.
type watched struct {
	url     string
	dir     string
	cur     *snapshot.Current // the snapshot served
	rewrite func(t *testing.T, config string)
}

func serveWatched(t testing.TB, config string) *watched { return serveWatchedAuth(t, config, nil) }

// serveWatchedAuth is serveWatched behind bearer tokens checked by verify
// (nil: none), as h/auth does in production.
func serveWatchedAuth(t testing.TB, config string, verify auth.TokenVerifier) *watched {
	t.Helper()
	return serveWatchedWith(t, config, verify, serve.HTTPOptions{})
}

// serveWatchedWith is serveWatchedAuth with the HTTP handler's options.
func serveWatchedWith(t testing.TB, config string, verify auth.TokenVerifier, opts serve.HTTPOptions) *watched {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.hcl")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := adapter.NewRegistry()
	reg.Register("mcp", mcpadapter.New(nil))
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	srv := serve.New(cur, serve.Options{Logger: quiet})
	r := &reload.Reloader{Paths: []string{dir}, Registry: reg, Current: cur, Notifier: srv, Version: "test", Logger: quiet}
	r.Init(l)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx, false) }()
	var h http.Handler = srv.HTTPHandler(opts)
	if verify != nil {
		h = auth.RequireBearerToken(verify, nil)(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		cancel()
		<-done
		cur.Load().Close()
	})
	return &watched{url: ts.URL, dir: dir, cur: cur, rewrite: func(t *testing.T, config string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := r.Reload(bounded(t)); err != nil {
			t.Fatalf("reloading the upstream: %v", err)
		}
	}}
}

// sdkUpstream is a go-sdk server with a prompt and a template whose
// arguments complete, and resources one can subscribe to; it records the
// completions it is asked and the subscriptions it holds.
type sdkUpstream struct {
	srv *mcp.Server

	mu          sync.Mutex
	completions []mcp.CompleteParams
	subscribed  map[string]int // subscribe minus unsubscribe, by URI
}

func newSDKUpstream(t *testing.T, version string) (*sdkUpstream, string) {
	t.Helper()
	u := &sdkUpstream{subscribed: map[string]int{}}
	u.srv = mcp.NewServer(&mcp.Implementation{Name: "sdk-up", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: u.complete,
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.subscribed[req.Params.URI]++
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.subscribed[req.Params.URI]--
			return nil
		},
	})
	u.srv.AddPrompt(&mcp.Prompt{Name: "team", Arguments: []*mcp.PromptArgument{{Name: "department"}, {Name: "name"}}},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "promote"}}}}, nil
		})
	text := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "text"}}}, nil
	}
	u.srv.AddResource(&mcp.Resource{URI: "files://readme", Name: "readme"}, text)
	u.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "files://{name}", Name: "files"}, text)
	opts := &mcp.StreamableHTTPOptions{Stateless: version == modern}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv }, opts))
	t.Cleanup(ts.Close)
	return u, ts.URL
}

func (u *sdkUpstream) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	u.mu.Lock()
	u.completions = append(u.completions, *p)
	u.mu.Unlock()
	var all []string
	switch {
	case p.Ref.Type == "ref/prompt" && p.Ref.Name == "team" && p.Argument.Name == "department":
		all = []string{"Engineering", "Sales"}
	case p.Ref.Type == "ref/prompt" && p.Ref.Name == "team" && p.Argument.Name == "name":
		all = []string{"Alice", "Bob"}
		if p.Context != nil && p.Context.Arguments["department"] == "Sales" {
			all = []string{"David", "Dora", "Eve"}
		}
	case p.Ref.Type == "ref/resource" && p.Ref.URI == "files://{name}":
		all = []string{"a.txt", "b.txt"}
	case p.Argument.Name == "broken":
		return nil, fmt.Errorf("no completions for %s today", p.Argument.Name)
	}
	out := []string{}
	for _, v := range all {
		if strings.HasPrefix(v, p.Argument.Value) {
			out = append(out, v)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: out, Total: len(out)}}, nil
}

func (u *sdkUpstream) asked() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.completions)
}

func (u *sdkUpstream) lastCompletion() mcp.CompleteParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.completions[len(u.completions)-1]
}

func (u *sdkUpstream) holds(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.subscribed[uri]
}

// mcpdUpstream is mcpd's config as the upstream: the same prompt and
// template, completed from the config; readme's text is what a reload
// changes, which mcpd reports as resources/updated.
func mcpdUpstream(readme string) string {
	return fmt.Sprintf(`
prompt "team" {
  argument "department" {
    completions = ["Engineering", "Sales"]
  }
  argument "name" {
    completions = ["Alice", "Bob"]
  }
  message {
    role = "user"
    text = "promote"
  }
}

resource "readme" {
  uri  = "files://readme"
  text = %q
}

resource_template "files" {
  uri_template = "files://{name}"
  text         = "text"
  completions = {
    name = ["a.txt", "b.txt"]
  }
}
`, readme)
}

// forwardGateway exposes the upstream at url with a prefix, to callers
// with the scope docs, and a toolset "narrow" that shows readme only.
func forwardGateway(url, version string) string {
	return fmt.Sprintf(`
mcp_server "up" {
  url              = %q
  protocol_version = %q
  expose {
    prefix    = "up_"
    resources = true
    prompts   = true
    scopes    = ["docs"]
  }
}

toolset "narrow" {
  resources = ["files://read*"]
}
`, url, version)
}

// The gateway's callers: reader has the scope docs, outsider has not.
func verifyCaller(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	scopes, ok := map[string][]string{"reader": {"docs"}, "outsider": {"other"}}[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	ti := (&principal.Principal{Name: token, Method: "oauth", Scopes: scopes}).TokenInfo()
	ti.Expiration = time.Now().Add(time.Hour)
	return ti, nil
}

// connectAs opens a session to url on the given protocol version, as the
// caller of token ("": none).
func connectAs(t *testing.T, url, version, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpadapter-test", Version: "1"}, opts)
	var so *mcp.ClientSessionOptions
	if version == legacy {
		so = &mcp.ClientSessionOptions{ProtocolVersion: legacy}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: authtest.Bearer(token, nil)}
	}
	cs, err := c.Connect(bounded(t), tr, so)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return cs
}

// updates counts a client's resources/updated notifications by URI.
type updates struct {
	mu sync.Mutex
	n  map[string]int
}

func (u *updates) handler(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n == nil {
		u.n = map[string]int{}
	}
	u.n[req.Params.URI]++
}

func (u *updates) count(uri string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.n[uri]
}

// waitFor polls cond: a liveness bound, not a speed assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.Until(t, what, cond)
}

// upstreamCase is one upstream behind the gateway.
type upstreamCase struct {
	name    string
	version string // what the gateway speaks to it
	start   func(t *testing.T) (url string, up *sdkUpstream, update func(t *testing.T, uri string))
}

var upstreamCases = []upstreamCase{
	{"go-sdk 2025-11-25", legacy, startSDK(legacy)},
	{"go-sdk 2026-07-28", modern, startSDK(modern)},
	{"mcpd 2025-11-25", legacy, startMCPD},
	{"mcpd 2026-07-28", modern, startMCPD},
}

func startSDK(version string) func(t *testing.T) (string, *sdkUpstream, func(*testing.T, string)) {
	return func(t *testing.T) (string, *sdkUpstream, func(*testing.T, string)) {
		up, url := newSDKUpstream(t, version)
		return url, up, func(t *testing.T, uri string) {
			if err := up.srv.ResourceUpdated(bounded(t), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func startMCPD(t *testing.T) (string, *sdkUpstream, func(*testing.T, string)) {
	w := serveWatched(t, mcpdUpstream("v0"))
	n := 0
	return w.url, nil, func(t *testing.T, uri string) {
		if uri != "files://readme" {
			t.Fatalf("mcpd reports changes of its static resources only, not %s", uri)
		}
		n++
		w.rewrite(t, mcpdUpstream(fmt.Sprintf("v%d", n)))
	}
}

func TestForwardCompletion(t *testing.T) {
	for _, uc := range upstreamCases {
		t.Run(uc.name, func(t *testing.T) {
			url, up, _ := uc.start(t)
			gw := serveWatchedAuth(t, forwardGateway(url, uc.version), verifyCaller)
			for _, era := range []string{legacy, modern} {
				t.Run("client "+era, func(t *testing.T) {
					cs := connectAs(t, gw.url, era, "reader", nil)
					narrow := connectAs(t, gw.url+"/mcp/narrow", era, "reader", nil)
					outsider := connectAs(t, gw.url, era, "outsider", nil)
					waitFor(t, "the upstream's prompt listed", func() bool {
						res, err := cs.ListPrompts(bounded(t), nil)
						return err == nil && slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "up_team" })
					})
					prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "up_team"}
					tmpl := &mcp.CompleteReference{Type: "ref/resource", URI: "files://{name}"}
					arg := func(name, value string) mcp.CompleteParamsArgument {
						return mcp.CompleteParamsArgument{Name: name, Value: value}
					}
					tests := []struct {
						name      string
						cs        *mcp.ClientSession
						params    *mcp.CompleteParams
						want      []string
						forwarded bool // the upstream is asked
						sdkOnly   bool // only the go-sdk upstream completes from the context, or fails
					}{
						{"prompt, mcpd's name mapped to the upstream's", cs, &mcp.CompleteParams{Ref: prompt, Argument: arg("department", "S")}, []string{"Sales"}, true, false},
						{"prompt, context passed on", cs, &mcp.CompleteParams{Ref: prompt, Argument: arg("name", "D"),
							Context: &mcp.CompleteContext{Arguments: map[string]string{"department": "Sales"}}}, []string{"David", "Dora"}, true, true},
						{"template", cs, &mcp.CompleteParams{Ref: tmpl, Argument: arg("name", "a")}, []string{"a.txt"}, true, false},
						{"the upstream fails: no values, no error", cs, &mcp.CompleteParams{Ref: prompt, Argument: arg("broken", "")}, []string{}, true, true},
						{"the upstream's own name is unknown to mcpd", cs, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "team"}, Argument: arg("department", "")}, []string{}, false, false},
						{"prompt hidden by the toolset", narrow, &mcp.CompleteParams{Ref: prompt, Argument: arg("department", "S")}, []string{}, false, false},
						{"template hidden by the toolset", narrow, &mcp.CompleteParams{Ref: tmpl, Argument: arg("name", "a")}, []string{}, false, false},
						{"prompt hidden from a caller without the scope", outsider, &mcp.CompleteParams{Ref: prompt, Argument: arg("department", "S")}, []string{}, false, false},
						{"template hidden from a caller without the scope", outsider, &mcp.CompleteParams{Ref: tmpl, Argument: arg("name", "a")}, []string{}, false, false},
					}
					for _, tc := range tests {
						if tc.sdkOnly && up == nil {
							continue
						}
						before := 0
						if up != nil {
							before = up.asked()
						}
						res, err := tc.cs.Complete(bounded(t), tc.params)
						if err != nil {
							t.Fatalf("%s: %v", tc.name, err)
						}
						if !slices.Equal(res.Completion.Values, tc.want) {
							t.Errorf("%s: values %v, want %v", tc.name, res.Completion.Values, tc.want)
						}
						if up == nil {
							continue
						}
						// What mcpd answers itself (unknown, hidden) never
						// reaches the upstream.
						if asked := up.asked() - before; asked != map[bool]int{true: 1}[tc.forwarded] {
							t.Errorf("%s: the upstream was asked %d times", tc.name, asked)
						} else if asked == 1 {
							got := up.lastCompletion()
							if got.Ref.Type == "ref/prompt" && got.Ref.Name != "team" {
								t.Errorf("%s: the upstream was asked for prompt %q", tc.name, got.Ref.Name)
							}
							if tc.params.Context != nil && (got.Context == nil || got.Context.Arguments["department"] != "Sales") {
								t.Errorf("%s: the upstream got context %+v", tc.name, got.Context)
							}
						}
					}
				})
			}
		})
	}
}

func TestForwardSubscriptions(t *testing.T) {
	const readme, other = "files://readme", "files://a.txt"
	for _, uc := range upstreamCases {
		t.Run(uc.name, func(t *testing.T) {
			url, up, update := uc.start(t)
			gw := serveWatchedAuth(t, forwardGateway(url, uc.version), verifyCaller)
			type client struct {
				name string
				cs   *mcp.ClientSession
				got  *updates
			}
			newClient := func(name, path, era, token string) client {
				u := &updates{}
				return client{name, connectAs(t, gw.url+path, era, token, &mcp.ClientOptions{ResourceUpdatedHandler: u.handler}), u}
			}
			a := newClient("a (2025-11-25)", "", legacy, "reader")
			b := newClient("b (2026-07-28)", "", modern, "reader")
			idle := newClient("idle", "", legacy, "reader")
			narrow := newClient("narrow (2025-11-25, on the toolset)", "/mcp/narrow", legacy, "reader")
			outsider := newClient("outsider (2025-11-25, without the scope)", "", legacy, "outsider")
			waitFor(t, "the upstream's resources listed", func() bool {
				res, err := a.cs.ListResources(bounded(t), nil)
				return err == nil && slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == readme })
			})
			holds := func(want int) {
				t.Helper()
				if up != nil {
					waitFor(t, fmt.Sprintf("the upstream holding %d subscription(s) to %s", want, readme), func() bool { return up.holds(readme) == want })
				}
			}
			// notified updates the upstream's readme and checks who hears
			// of it: each of want once more, nobody else.
			notified := func(step string, want ...client) {
				t.Helper()
				all := []client{a, b, idle, narrow, outsider}
				before := map[string]int{}
				for _, c := range all {
					before[c.name] = c.got.count(readme) + c.got.count(other)
				}
				update(t, readme)
				for _, c := range want {
					waitFor(t, step+": "+c.name+" notified", func() bool { return c.got.count(readme) > before[c.name] })
				}
				// Time for a notification to anyone else to arrive.
				time.Sleep(300 * time.Millisecond)
				for _, c := range all {
					wanted := slices.ContainsFunc(want, func(w client) bool { return w.name == c.name })
					if got := c.got.count(readme) + c.got.count(other) - before[c.name]; got != map[bool]int{true: 1}[wanted] {
						t.Errorf("%s: %s got %d notifications", step, c.name, got)
					}
				}
			}

			// What a client may not see is subscribed to as an unknown
			// URI is, without an error that would tell it apart, and it
			// hears nothing of it: other, outside narrow's toolset, and
			// readme, outside the outsider's scopes.
			for _, s := range []struct {
				c   client
				uri string
			}{{a, readme}, {b, readme}, {narrow, readme}, {narrow, other}, {outsider, readme}} {
				if err := s.c.cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: s.uri}); err != nil {
					t.Fatalf("%s: subscribe %s: %v", s.c.name, s.uri, err)
				}
			}
			holds(1) // three clients on two endpoints, one upstream subscription
			if up != nil && up.holds(other) != 0 {
				t.Errorf("the hidden resource was subscribed upstream")
			}
			notified("subscribed", a, b, narrow)

			for _, c := range []client{a, narrow} {
				if err := c.cs.Unsubscribe(bounded(t), &mcp.UnsubscribeParams{URI: readme}); err != nil {
					t.Fatal(err)
				}
			}
			holds(1)
			notified("a and narrow unsubscribed", b)

			// b's subscription ends with its session.
			b.cs.Close()
			holds(0)
			notified("nobody subscribed")

			// A session that ends without unsubscribing releases its
			// subscription too.
			c := newClient("c (2025-11-25)", "", legacy, "reader")
			if err := c.cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: readme}); err != nil {
				t.Fatal(err)
			}
			holds(1)
			notified("c subscribed", c)
			c.cs.Close()
			holds(0)
		})
	}
}

// A reload carries the gateway's subscriptions along: to the upstream
// that now answers the URI when the config moved it, and to none when
// the subscriber may no longer see the resource (and back when it may
// again). A reload that keeps the upstream keeps its subscription, with
// no unsubscribe and subscribe again.
func TestForwardSubscriptionsFollowReload(t *testing.T) {
	const readme = "files://readme"
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			first, firstURL := newSDKUpstream(t, version)
			second, secondURL := newSDKUpstream(t, version)
			gw := serveWatchedAuth(t, forwardGateway(firstURL, version), verifyCaller)
			got := &updates{}
			cs := connectAs(t, gw.url, legacy, "reader", &mcp.ClientOptions{ResourceUpdatedHandler: got.handler})
			listed := func(what string) {
				t.Helper()
				waitFor(t, what, func() bool {
					res, err := cs.ListResources(bounded(t), nil)
					return err == nil && slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == readme })
				})
			}
			listed("the first upstream's resources listed")
			if err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: readme}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the first upstream holding the subscription", func() bool { return first.holds(readme) == 1 })

			// heard updates up's readme and checks whether the client hears of it.
			heard := func(step string, up *sdkUpstream, want bool) {
				t.Helper()
				before := got.count(readme)
				if err := up.srv.ResourceUpdated(bounded(t), &mcp.ResourceUpdatedNotificationParams{URI: readme}); err != nil {
					t.Fatal(err)
				}
				if want {
					waitFor(t, step+": the client notified", func() bool { return got.count(readme) > before })
					return
				}
				time.Sleep(300 * time.Millisecond) // time for a notification to arrive
				if n := got.count(readme) - before; n != 0 {
					t.Errorf("%s: the client got %d notifications of what it may not see", step, n)
				}
			}
			heard("subscribed", first, true)

			// A reload that keeps the upstream (a toolset added) keeps
			// its subscription as it is.
			gw.rewrite(t, forwardGateway(firstURL, version)+"\ntoolset \"more\" {\n  resources = [\"files://*\"]\n}\n")
			// Nothing tells that the rehome is done: it must keep the
			// subscription, so a window in which a dropped one would
			// show is all there is to wait for.
			time.Sleep(300 * time.Millisecond)
			if n := first.holds(readme); n != 1 {
				t.Errorf("after a reload that kept the upstream, it holds %d subscriptions", n)
			}
			heard("upstream kept", first, true)

			// The config moves the upstream: the subscription follows.
			gw.rewrite(t, forwardGateway(secondURL, version))
			waitFor(t, "the second upstream holding the subscription", func() bool { return second.holds(readme) == 1 })
			listed("the second upstream's resources listed")
			heard("upstream moved", second, true)

			// The resource now needs a scope the client lacks: it hears
			// nothing, and nothing is held for it.
			hidden := strings.Replace(forwardGateway(secondURL, version), `scopes    = ["docs"]`, `scopes    = ["admin"]`, 1)
			gw.rewrite(t, hidden)
			waitFor(t, "the subscription released at the upstream", func() bool { return second.holds(readme) == 0 })
			heard("hidden", second, false)

			// Shown again, it is heard of again.
			gw.rewrite(t, forwardGateway(secondURL, version))
			waitFor(t, "the subscription made again", func() bool { return second.holds(readme) == 1 })
			heard("shown again", second, true)
		})
	}
}
