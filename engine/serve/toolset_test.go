package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/serve"
)

// toolsetConfig declares a help desk and two toolsets over it: support
// (by patterns, names and URIs) and ops (everything, behind a scope).
const toolsetConfig = `
tool "search_tickets" {
  description = "s"
  result {
    content "text" {
      text = "tickets"
    }
  }
}
tool "search_users" {
  description = "s"
  result {
    content "text" {
      text = "users"
    }
  }
}
tool "get_ticket" {
  description = "g"
  result {
    content "text" {
      text = "ticket"
    }
  }
}
tool "close_ticket" {
  description = "c"
  result {
    content "text" {
      text = "closed"
    }
  }
}
tool "audit_log" {
  description = "needs admin"
  scopes      = ["admin"]
  result {
    content "text" {
      text = "log"
    }
  }
}
resource "faq" {
  uri  = "docs://faq"
  text = "faq"
}
resource "runbook" {
  uri  = "docs://runbook"
  text = "runbook"
}
resource_template "ticket" {
  uri_template = "tickets://{id}"
  text         = "ticket ${args.id}"
}
resource_template "user" {
  uri_template = "users://{id}"
  text         = "user ${args.id}"
  completions = {
    id = ["1", "2"]
  }
}
prompt "reply" {
  message {
    text = "reply"
  }
}
prompt "escalate" {
  argument "who" {
    completions = ["oncall", "boss"]
  }
  message {
    text = "escalate"
  }
}
toolset "support" {
  tools     = ["search_*", "get_ticket", "audit_log"]
  resources = ["faq", "tickets://*"]
  prompts   = ["reply"]
}
toolset "ops" {
  tools     = ["*", "!search_*"]
  resources = ["*"]
  prompts   = ["*"]
  scopes    = ["admin"]
}
`

func newToolsetEnv(t *testing.T, config string, opts serve.Options) (*authzEnv, *httptest.Server) {
	t.Helper()
	e := newAuthzEnv(t, config)
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	e.srv = serve.New(e.cur, opts)
	ts := httptest.NewServer(auth.RequireBearerToken(verifyToken, nil)(e.srv.HTTPHandler(serve.HTTPOptions{})))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e, ts
}

func (e *authzEnv) clientAt(t *testing.T, path, token, version string) *mcp.ClientSession {
	t.Helper()
	return connect(t, &mcp.StreamableClientTransport{
		Endpoint:   e.url + path,
		MaxRetries: -1,
		HTTPClient: &http.Client{Transport: authtest.Bearer(token, nil)},
	}, version, nil)
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for r, err := range cs.Resources(bounded(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.URI)
	}
	for r, err := range cs.ResourceTemplates(bounded(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.URITemplate)
	}
	return out
}

func promptNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for p, err := range cs.Prompts(bounded(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Name)
	}
	return out
}

// Each toolset's path lists its own members, in both eras, filtered by the
// caller's scopes as /mcp is; /mcp keeps serving everything.
func TestToolsetLists(t *testing.T) {
	e, _ := newToolsetEnv(t, toolsetConfig, serve.Options{PageSize: 2})
	tests := []struct {
		path, token      string
		tools            []string
		resources, props []string
	}{
		{"/mcp", "tok-admin", []string{"search_tickets", "search_users", "get_ticket", "close_ticket", "audit_log"},
			[]string{"docs://faq", "docs://runbook", "tickets://{id}", "users://{id}"}, []string{"reply", "escalate"}},
		{"/mcp/support", "tok-admin", []string{"search_tickets", "search_users", "get_ticket", "audit_log"},
			[]string{"docs://faq", "tickets://{id}"}, []string{"reply"}},
		// audit_log's own scope still applies inside the toolset.
		{"/mcp/support", "tok-acme", []string{"search_tickets", "search_users", "get_ticket"},
			[]string{"docs://faq", "tickets://{id}"}, []string{"reply"}},
		{"/mcp/ops", "tok-admin", []string{"get_ticket", "close_ticket", "audit_log"},
			[]string{"docs://faq", "docs://runbook", "tickets://{id}", "users://{id}"}, []string{"reply", "escalate"}},
	}
	for _, version := range []string{legacy, modern} {
		for _, tc := range tests {
			t.Run(version+tc.path+" "+tc.token, func(t *testing.T) {
				cs := e.clientAt(t, tc.path, tc.token, version)
				if got := toolNames(t, cs); !slices.Equal(got, tc.tools) {
					t.Errorf("tools %v, want %v", got, tc.tools)
				}
				if got := resourceURIs(t, cs); !slices.Equal(got, tc.resources) {
					t.Errorf("resources %v, want %v", got, tc.resources)
				}
				if got := promptNames(t, cs); !slices.Equal(got, tc.props) {
					t.Errorf("prompts %v, want %v", got, tc.props)
				}
			})
		}
	}
}

// What a toolset does not hold is, through its path, exactly as unknown as
// a name nothing declares: the same error code and message.
func TestToolsetRefusesOutsiders(t *testing.T) {
	e, _ := newToolsetEnv(t, toolsetConfig, serve.Options{})
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			cs := e.clientAt(t, "/mcp/support", "tok-admin", version)
			if got, isErr, err := call(t, cs, "get_ticket", nil); err != nil || isErr || got != "ticket" {
				t.Fatalf("get_ticket inside: %q %v %v", got, isErr, err)
			}
			same := func(kind string, outside, unknown error, outsideName, unknownName string) {
				t.Helper()
				if outside == nil || unknown == nil {
					t.Fatalf("%s: outside %v, unknown %v: want both refused", kind, outside, unknown)
				}
				if rpcCode(outside) != rpcCode(unknown) {
					t.Errorf("%s: outside code %d, unknown code %d", kind, rpcCode(outside), rpcCode(unknown))
				}
				if strings.ReplaceAll(outside.Error(), outsideName, "X") != strings.ReplaceAll(unknown.Error(), unknownName, "X") {
					t.Errorf("%s: outside %q differs from unknown %q", kind, outside, unknown)
				}
			}
			_, _, outside := call(t, cs, "close_ticket", nil)
			_, _, unknown := call(t, cs, "no_such_tool", nil)
			same("tools/call", outside, unknown, "close_ticket", "no_such_tool")
			if rpcCode(outside) != -32602 {
				t.Errorf("tools/call outside: code %d, want -32602", rpcCode(outside))
			}

			_, outside = cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "docs://runbook"})
			_, unknown = cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "docs://nothing"})
			same("resources/read", outside, unknown, "docs://runbook", "docs://nothing")
			_, outside = cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "users://7"})
			same("resources/read template", outside, unknown, "users://7", "docs://nothing")
			if res, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "tickets://7"}); err != nil || res.Contents[0].Text != "ticket 7" {
				t.Errorf("tickets://7 inside: %v %v", res, err)
			}

			_, outside = cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "escalate"})
			_, unknown = cs.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "no_such_prompt"})
			same("prompts/get", outside, unknown, "escalate", "no_such_prompt")

			// Completion of what the toolset does not hold offers nothing.
			comp, err := cs.Complete(bounded(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "escalate"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: ""}})
			if err != nil || len(comp.Completion.Values) != 0 {
				t.Errorf("completion outside: %v %v", comp, err)
			}
		})
	}
}

// A toolset's scopes are needed to use its path at all: 403 before any
// MCP exchange, in both eras; an undeclared toolset is 404; the Host and
// Origin guard applies to every path.
func TestToolsetHTTPGate(t *testing.T) {
	e, _ := newToolsetEnv(t, toolsetConfig, serve.Options{})
	post := func(path, token, origin, body string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", e.url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	list2026 := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	modernHeaders := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
	tests := []struct {
		name, path, token, origin, body string
		header                          map[string]string
		want                            int
	}{
		{"support, legacy", "/mcp/support", "tok-acme", "", initialize, nil, 200},
		{"support, modern", "/mcp/support", "tok-acme", "", list2026, modernHeaders, 200},
		{"ops without its scope, legacy", "/mcp/ops", "tok-acme", "", initialize, nil, 403},
		{"ops without its scope, modern", "/mcp/ops", "tok-acme", "", list2026, modernHeaders, 403},
		{"ops with its scope", "/mcp/ops", "tok-admin", "", initialize, nil, 200},
		{"undeclared toolset", "/mcp/nope", "tok-admin", "", initialize, nil, 404},
		{"nested path", "/mcp/support/x", "tok-admin", "", initialize, nil, 404},
		{"foreign origin", "/mcp/support", "tok-admin", "http://evil.example.com", initialize, nil, 403},
		{"foreign origin, undeclared toolset", "/mcp/nope", "tok-admin", "http://evil.example.com", initialize, nil, 403},
	}
	for _, tc := range tests {
		resp := post(tc.path, tc.token, tc.origin, tc.body, tc.header)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}

	// Sessions are per path: a session opened on /mcp/support is unknown
	// on /mcp and on /mcp/ops.
	resp := post("/mcp/support", "tok-admin", "", initialize, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id from initialize")
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, path := range []string{"/mcp", "/mcp/ops"} {
		if got := post(path, "tok-admin", "", list, map[string]string{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}).StatusCode; got != http.StatusNotFound {
			t.Errorf("the session of /mcp/support on %s: status %d, want 404", path, got)
		}
	}
}

// server.default_toolset makes /mcp serve that toolset; the toolset's own
// path serves it too.
func TestDefaultToolset(t *testing.T) {
	config := "server {\n  default_toolset = \"support\"\n}\n" + toolsetConfig
	e, _ := newToolsetEnv(t, config, serve.Options{})
	want := []string{"search_tickets", "search_users", "get_ticket", "audit_log"}
	for _, path := range []string{"/mcp", "/mcp/support"} {
		cs := e.clientAt(t, path, "tok-admin", modern)
		if got := toolNames(t, cs); !slices.Equal(got, want) {
			t.Errorf("%s: tools %v, want %v", path, got, want)
		}
		if _, _, err := call(t, cs, "close_ticket", nil); rpcCode(err) != -32602 {
			t.Errorf("%s: close_ticket: %v, want -32602", path, err)
		}
	}
}

// Every call event names the toolset it came through, for the audit log,
// the metrics and the console.
func TestToolsetInCallEvent(t *testing.T) {
	type seen struct{ kind, name, toolset string }
	got := make(chan seen, 16)
	e, _ := newToolsetEnv(t, toolsetConfig, serve.Options{OnCall: func(c *event.Call) {
		got <- seen{c.Kind, c.Name, c.Toolset}
	}})
	for _, tc := range []struct{ path, toolset string }{{"/mcp", ""}, {"/mcp/support", "support"}} {
		cs := e.clientAt(t, tc.path, "tok-admin", modern)
		call(t, cs, "get_ticket", nil)
		cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "docs://faq"})
		for _, kind := range []string{event.KindTool, event.KindResource} {
			s := <-got
			if s.kind != kind || s.toolset != tc.toolset {
				t.Errorf("%s: event %+v, want kind %s toolset %q", tc.path, s, kind, tc.toolset)
			}
		}
	}
	// stdio --toolset is the same endpoint without HTTP.
	srv, err := e.srv.SDKFor("support")
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs := connect(t, ct, modern, nil)
	if names := toolNames(t, cs); !slices.Equal(names, []string{"search_tickets", "search_users", "get_ticket", "audit_log"}) {
		t.Errorf("stdio support: tools %v", names)
	}
	call(t, cs, "get_ticket", nil)
	if s := <-got; s.toolset != "support" {
		t.Errorf("stdio event %+v, want toolset support", s)
	}
	if _, err := e.srv.SDKFor("nope"); err == nil {
		t.Error("SDKFor of an undeclared toolset: no error")
	}
}
