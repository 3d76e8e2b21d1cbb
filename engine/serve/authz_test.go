package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/auth/authtest"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// authzConfig exercises scopes, caller-bound params and limits through the
// real shell and SQL adapters.
const authzConfig = `
database "authz" {
  driver = "sqlite"
  dsn    = "authz.db"
  seed   = <<-EOT
    CREATE TABLE orders_authz (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, item TEXT NOT NULL);
    INSERT INTO orders_authz (tenant, item) VALUES ('acme', 'anvil'), ('acme', 'rocket'), ('globex', 'laser');
  EOT
}

tool "public" {
  description = "Anyone may call it."
  result {
    content "text" {
      text = "public ok"
    }
  }
}

tool "admin_only" {
  description = "Needs admin."
  scopes      = ["admin"]
  result {
    content "text" {
      text = "admin ok"
    }
  }
}

tool "orders" {
  description = "Lists the caller's orders."
  param "tenant_id" {
    type        = "string"
    pattern     = "^[a-z]+$"
    from_caller = "claims.org_id"
  }
  param "item" {
    type    = "string"
    default = "%"
  }
  sql {
    database = "authz"
    query    = "SELECT item FROM orders_authz WHERE tenant = :tenant_id AND item LIKE :item ORDER BY id"
  }
}

tool "sleepy" {
  description = "Sleeps past its timeout."
  timeout     = "200ms"
  shell {
    command = ["sleep", "5"]
  }
}

tool "busy" {
  description = "Sleeps a little, two at a time."
  max_concurrency = 2
  queue_timeout   = "100ms"
  shell {
    command = ["sleep", "0.6"]
  }
}

tool "per_tool" {
  description = "Rate limited for everyone together."
  rate_limit {
    per_tool = "2/m"
  }
  result {
    content "text" {
      text = "ok"
    }
  }
}

tool "per_caller" {
  description = "Rate limited per caller."
  rate_limit {
    per_caller = "2/m"
  }
  result {
    content "text" {
      text = "ok"
    }
  }
}

resource "secret_doc" {
  uri    = "docs://secret"
  scopes = ["admin"]
  text   = "secret"
}

resource "open_doc" {
  uri  = "docs://open"
  text = "open"
}

resource_template "admin_user" {
  uri_template = "admin://{id}"
  scopes       = ["admin"]
  text         = "user ${args.id}"
  completions = {
    id = ["1", "2"]
  }
}

prompt "admin_prompt" {
  description = "Needs admin."
  scopes      = ["admin"]
  message {
    text = "hi"
  }
}
`

// tokens maps the test's bearer tokens to the principals they stand for,
// as h/auth's verifiers will.
var tokens = map[string]*principal.Principal{
	"tok-admin": {Name: "alice", Method: "api_key", Scopes: []string{"admin", "read"}, Claims: map[string]any{"org_id": "acme"}},
	"tok-acme":  {Name: "bob", Method: "api_key", Scopes: []string{"read"}, Claims: map[string]any{"org_id": "acme"}},
	"tok-glob":  {Name: "carol", Method: "oauth", Scopes: []string{"read"}, Claims: map[string]any{"org_id": "globex"}},
	"tok-none":  {Name: "dave", Method: "oauth", Scopes: []string{"read"}},
	"tok-bad":   {Name: "eve", Method: "oauth", Claims: map[string]any{"org_id": "Robert'); DROP TABLE orders_authz;--"}},
}

func verifyToken(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	p, ok := tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	ti := p.TokenInfo()
	ti.Expiration = time.Now().Add(time.Hour)
	return ti, nil
}

type authzEnv struct {
	cur *snapshot.Current
	srv *serve.Server
	url string
	dir string
	reg *adapter.Registry
}

func authzRegistry() *adapter.Registry {
	reg := adapter.NewRegistry()
	reg.Register("shell", shell.New())
	reg.Register("sql", sqladapter.New())
	return reg
}

func newAuthzEnv(t *testing.T, config string) *authzEnv {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := authzRegistry()
	l := loader.Load([]string{dir}, reg, nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	t.Cleanup(func() { cur.Load().Close() })
	srv := serve.New(cur, serve.Options{Logger: quiet, PageSize: 2})
	// What h/auth does in production: verify the bearer token and put
	// the principal's TokenInfo in the request context for the SDK.
	h := auth.RequireBearerToken(verifyToken, nil)(srv.HTTPHandler(serve.HTTPOptions{}))
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &authzEnv{cur: cur, srv: srv, url: ts.URL, dir: dir, reg: reg}
}

func (e *authzEnv) client(t *testing.T, token, version string) *mcp.ClientSession {
	t.Helper()
	return connect(t, &mcp.StreamableClientTransport{
		Endpoint:   e.url,
		MaxRetries: -1,
		HTTPClient: &http.Client{Transport: authtest.Bearer(token, nil)},
	}, version, nil)
}

// stdio connects as the local user, with no principal.
func (e *authzEnv) stdio(t *testing.T) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.SDK().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return connect(t, ct, modern, nil)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	// PageSize is 2: the iterator follows cursors over the filtered list.
	for tool, err := range cs.Tools(bounded(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool, error) {
	t.Helper()
	res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	return text(res), res.IsError, nil
}

func TestScopes(t *testing.T) {
	e := newAuthzEnv(t, authzConfig)
	all := []string{"public", "admin_only", "orders", "sleepy", "busy", "per_tool", "per_caller"}
	noAdmin := []string{"public", "orders", "sleepy", "busy", "per_tool", "per_caller"}
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			admin := e.client(t, "tok-admin", version)
			reader := e.client(t, "tok-acme", version)
			local := e.stdio(t)

			if got := toolNames(t, admin); !slices.Equal(got, all) {
				t.Errorf("admin sees %v, want %v", got, all)
			}
			if got := toolNames(t, local); !slices.Equal(got, all) {
				t.Errorf("local user sees %v, want %v", got, all)
			}
			if got := toolNames(t, reader); !slices.Equal(got, noAdmin) {
				t.Errorf("reader sees %v, want %v", got, noAdmin)
			}

			if version == modern {
				// A caller's list is its own: no shared cache may serve it.
				for cs, want := range map[*mcp.ClientSession]string{reader: "private", local: "public"} {
					res, err := cs.ListTools(bounded(t), nil)
					if err != nil || res.CacheScope != want {
						t.Errorf("cacheScope %q (%v), want %q", res.CacheScope, err, want)
					}
				}
			}
			if out, isErr, err := call(t, admin, "admin_only", nil); err != nil || isErr || out != "admin ok" {
				t.Errorf("admin calling admin_only: %q %v %v", out, isErr, err)
			}
			// Refused exactly as an unknown tool is: same code, same form.
			_, _, err := call(t, reader, "admin_only", nil)
			_, _, unknownErr := call(t, reader, "no_such_tool", nil)
			if rpcCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), `unknown tool "admin_only"`) {
				t.Errorf("reader calling admin_only: %v", err)
			}
			if rpcCode(unknownErr) != rpcCode(err) {
				t.Errorf("hidden and unknown tools differ: %v vs %v", err, unknownErr)
			}

			// Resources, templates and prompts.
			var uris []string
			for r, err := range reader.Resources(bounded(t), nil) {
				if err != nil {
					t.Fatal(err)
				}
				uris = append(uris, r.URI)
			}
			if !slices.Equal(uris, []string{"docs://open"}) {
				t.Errorf("reader sees resources %v", uris)
			}
			if _, err := reader.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "docs://secret"}); err == nil {
				t.Error("reader read docs://secret")
			}
			if _, err := reader.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "admin://7"}); err == nil {
				t.Error("reader read admin://7")
			}
			if res, err := admin.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "docs://secret"}); err != nil || res.Contents[0].Text != "secret" {
				t.Errorf("admin reading docs://secret: %v", err)
			}
			if res, err := admin.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "admin://7"}); err != nil || res.Contents[0].Text != "user 7" {
				t.Errorf("admin reading admin://7: %v", err)
			}
			for tmpl, err := range reader.ResourceTemplates(bounded(t), nil) {
				if err != nil {
					t.Fatal(err)
				}
				t.Errorf("reader sees template %s", tmpl.URITemplate)
			}
			for p, err := range reader.Prompts(bounded(t), nil) {
				if err != nil {
					t.Fatal(err)
				}
				t.Errorf("reader sees prompt %s", p.Name)
			}
			if _, err := reader.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "admin_prompt"}); rpcCode(err) != jsonrpc.CodeInvalidParams {
				t.Errorf("reader getting admin_prompt: %v", err)
			}
			if _, err := admin.GetPrompt(bounded(t), &mcp.GetPromptParams{Name: "admin_prompt"}); err != nil {
				t.Errorf("admin getting admin_prompt: %v", err)
			}
			// Completion tells nothing of a template the caller cannot see.
			ref := &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "admin://{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id"}}
			if res, err := reader.Complete(bounded(t), ref); err != nil || len(res.Completion.Values) != 0 {
				t.Errorf("reader completing admin://{id}: %v %v", res, err)
			}
			if res, err := admin.Complete(bounded(t), ref); err != nil || len(res.Completion.Values) != 2 {
				t.Errorf("admin completing admin://{id}: %v %v", res, err)
			}
		})
	}
}

func TestCallerBoundParam(t *testing.T) {
	e := newAuthzEnv(t, authzConfig)
	acme := e.client(t, "tok-acme", modern)
	glob := e.client(t, "tok-glob", modern)

	// The param is not the model's: it is not in the schema.
	for tool, err := range acme.Tools(bounded(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "orders" {
			b, _ := json.Marshal(tool.InputSchema)
			if strings.Contains(string(b), "tenant_id") {
				t.Errorf("orders' input schema shows tenant_id: %s", b)
			}
		}
	}

	items := func(cs *mcp.ClientSession, args map[string]any) []string {
		t.Helper()
		res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "orders", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("orders: %s", text(res))
		}
		var rows []struct{ Item string } // a SQL tool's text is its rows' JSON
		if err := json.Unmarshal([]byte(text(res)), &rows); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Item)
		}
		return got
	}
	if got := items(acme, nil); !slices.Equal(got, []string{"anvil", "rocket"}) {
		t.Errorf("acme's orders: %v", got)
	}
	if got := items(glob, nil); !slices.Equal(got, []string{"laser"}) {
		t.Errorf("globex's orders: %v", got)
	}
	if got := items(glob, map[string]any{"item": "%a%"}); !slices.Equal(got, []string{"laser"}) {
		t.Errorf("globex's orders like %%a%%: %v", got)
	}

	tests := []struct {
		name, token string
		args        map[string]any
		want        string
	}{
		{"model sets it", "tok-glob", map[string]any{"tenant_id": "acme"}, "tenant_id is set from the authenticated caller; do not pass it"},
		{"no claim", "tok-none", nil, "needs an authenticated caller with claim org_id"},
		{"claim breaks the pattern", "tok-bad", nil, "does not fit param tenant_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, isErr, err := call(t, e.client(t, tc.token, modern), "orders", tc.args)
			if err != nil || !isErr || !strings.Contains(out, tc.want) {
				t.Errorf("got %q (isError %v, err %v), want a tool error with %q", out, isErr, err, tc.want)
			}
			if strings.Contains(out, "globex") && tc.token != "tok-glob" || strings.Contains(out, "anvil") {
				t.Errorf("rows leaked: %q", out)
			}
		})
	}
	t.Run("local user", func(t *testing.T) {
		out, isErr, err := call(t, e.stdio(t), "orders", nil)
		if err != nil || !isErr || !strings.Contains(out, "needs an authenticated caller with claim org_id") {
			t.Errorf("got %q (isError %v, err %v)", out, isErr, err)
		}
	})
}

func TestToolTimeout(t *testing.T) {
	e := newAuthzEnv(t, authzConfig)
	cs := e.client(t, "tok-acme", modern)
	start := time.Now()
	out, isErr, err := call(t, cs, "sleepy", nil)
	took := time.Since(start)
	if err != nil || !isErr || !strings.Contains(out, "timed out after 200ms") || !strings.Contains(out, "narrow the request") {
		t.Errorf("got %q (isError %v, err %v)", out, isErr, err)
	}
	if took > 3*time.Second {
		t.Errorf("the call took %s: the timeout did not stop it", took)
	}
}

func TestMaxConcurrency(t *testing.T) {
	e := newAuthzEnv(t, authzConfig)
	cs := e.client(t, "tok-acme", modern)
	type outcome struct {
		text  string
		isErr bool
	}
	results := make(chan outcome, 3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			out, isErr, err := call(t, cs, "busy", nil)
			if err != nil {
				t.Error(err)
			}
			results <- outcome{out, isErr}
		})
	}
	wg.Wait()
	close(results)
	var busy []string
	ok := 0
	for r := range results {
		if r.isErr {
			busy = append(busy, r.text)
		} else {
			ok++
		}
	}
	if ok != 2 || len(busy) != 1 {
		t.Fatalf("%d calls succeeded and %d failed (%v); want 2 and 1", ok, len(busy), busy)
	}
	if !strings.Contains(busy[0], "busy") || !strings.Contains(busy[0], "maximum of 2 calls") || !strings.Contains(busy[0], "retry in 1.0s") {
		t.Errorf("busy error: %q", busy[0])
	}
	// The slots are free again.
	if out, isErr, err := call(t, cs, "busy", nil); err != nil || isErr {
		t.Errorf("after the others: %q %v", out, err)
	}
}

var retryRE = regexp.MustCompile(`retry in ([0-9.]+)s`)

func retryDelay(t *testing.T, msg string) float64 {
	t.Helper()
	m := retryRE.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("no retry delay in %q", msg)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

func TestRateLimits(t *testing.T) {
	e := newAuthzEnv(t, authzConfig)
	acme := e.client(t, "tok-acme", modern)
	glob := e.client(t, "tok-glob", modern)

	t.Run("per tool", func(t *testing.T) {
		for i, cs := range []*mcp.ClientSession{acme, glob} {
			if out, isErr, err := call(t, cs, "per_tool", nil); err != nil || isErr {
				t.Fatalf("call %d: %q %v", i, out, err)
			}
		}
		// The tool's two calls a minute are used up, whoever asks.
		for _, cs := range []*mcp.ClientSession{acme, glob} {
			out, isErr, err := call(t, cs, "per_tool", nil)
			if err != nil || !isErr || !strings.Contains(out, "rate limited (2/m for all callers)") {
				t.Fatalf("third call: %q %v", out, err)
			}
			if d := retryDelay(t, out); d < 20 || d > 30 {
				t.Errorf("retry in %vs, want about 30s", d)
			}
		}
	})
	t.Run("per caller", func(t *testing.T) {
		for range 2 {
			if out, isErr, err := call(t, acme, "per_caller", nil); err != nil || isErr {
				t.Fatalf("%q %v", out, err)
			}
		}
		out, isErr, err := call(t, acme, "per_caller", nil)
		if err != nil || !isErr || !strings.Contains(out, "2/m per caller") {
			t.Fatalf("acme's third call: %q %v", out, err)
		}
		if d := retryDelay(t, out); d < 20 || d > 30 {
			t.Errorf("retry in %vs, want about 30s", d)
		}
		// Another caller has its own share.
		if out, isErr, err := call(t, glob, "per_caller", nil); err != nil || isErr {
			t.Errorf("globex after acme ran out: %q %v", out, err)
		}
	})
	t.Run("reload keeps the buckets", func(t *testing.T) {
		l := loader.Load([]string{e.dir}, e.reg, e.cur.Load(), "test")
		if l.Snapshot == nil {
			t.Fatalf("reload: %v", l.Diagnostics)
		}
		e.cur.Swap(l.Snapshot)
		if out, isErr, err := call(t, acme, "per_caller", nil); err != nil || !isErr || !strings.Contains(out, "rate limited") {
			t.Errorf("after a reload acme may call again: %q %v", out, err)
		}
	})
}
