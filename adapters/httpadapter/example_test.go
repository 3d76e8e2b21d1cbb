package httpadapter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// exampleTool is one tool of an example file, compiled with this adapter.
type exampleTool struct {
	handler adapter.Handler
	params  map[string]string
	result  map[string]string // result attribute → expr-lang source
}

// loadExample compiles the http blocks of an example config the way the
// engine does, without the engine: backends decoded and opened, each
// tool's http block compiled with its params in scope.
func loadExample(t *testing.T, file string) map[string]*exampleTool {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, file, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	dir := filepath.Dir(file)
	fns := funcs.Table(dir)
	top, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "http_backend", LabelNames: []string{"name"}},
		{Type: "tool", LabelNames: []string{"name"}},
	}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	a := New()
	live := map[string]adapter.Backend{}
	for _, b := range top.Blocks.OfType("http_backend") {
		cfg, diags := a.DecodeBackend(&adapter.BackendBlock{Name: b.Labels[0], Body: b.Body, Range: b.DefRange, Scope: &adapter.Scope{Dir: dir, Functions: fns}})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		be, err := cfg.Open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { be.Close() })
		live[b.Labels[0]] = be
	}
	tools := map[string]*exampleTool{}
	for _, tb := range top.Blocks.OfType("tool") {
		content, _, diags := tb.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
			{Type: "param", LabelNames: []string{"name"}},
			{Type: "http"},
			{Type: "result"},
		}})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		et := &exampleTool{params: map[string]string{}, result: map[string]string{}}
		for _, pb := range content.Blocks.OfType("param") {
			pc, _, _ := pb.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type"}}})
			typ := ""
			if attr := pc.Attributes["type"]; attr != nil {
				v, _ := attr.Expr.Value(nil)
				typ = v.AsString()
			}
			et.params[pb.Labels[0]] = typ
		}
		for _, rb := range content.Blocks.OfType("result") {
			attrs, _ := rb.Body.JustAttributes()
			for name, attr := range attrs {
				v, diags := attr.Expr.Value(nil)
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				et.result[name] = v.AsString()
			}
		}
		hb := content.Blocks.OfType("http")
		if len(hb) != 1 {
			t.Fatalf("tool %s has %d http blocks", tb.Labels[0], len(hb))
		}
		h, diags := a.CompileTool(&adapter.ToolBlock{
			Tool: tb.Labels[0], Type: "http", Body: hb[0].Body, Range: hb[0].DefRange,
			Scope: &adapter.Scope{Dir: dir, Functions: fns, Params: et.params},
			Backend: func(typ, name string) (adapter.Backend, bool) {
				be, ok := live[name]
				return be, ok && typ == "http_backend"
			},
		})
		if diags.HasErrors() {
			t.Fatalf("tool %s: %s", tb.Labels[0], diags.Error())
		}
		et.handler = h
		tools[tb.Labels[0]] = et
	}
	return tools
}

// run calls the tool and evaluates its result expressions as the engine's
// result block does: expr-lang over the adapter's Vars plus args.
func (et *exampleTool) run(t *testing.T, args map[string]any) (map[string]any, error) {
	t.Helper()
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: et.params}
	out, err := et.handler.Call(context.Background(), &adapter.Request{Tool: "example", Args: args, Eval: scope.CallContext(args), Progress: func(float64, float64, string) {}})
	if err != nil {
		return nil, err
	}
	env := map[string]any{"args": args}
	for k, v := range out.Vars {
		env[k] = v
	}
	res := map[string]any{}
	for name, src := range et.result {
		v, err := expr.Eval(src, env)
		if err != nil {
			t.Fatalf("result.%s = %q: %v", name, src, err)
		}
		res[name] = v
	}
	return res, nil
}

func TestGitHubExample(t *testing.T) {
	const token = "ghp_exampleTestToken123"
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		switch {
		case r.URL.Path == "/users/octocat":
			io.WriteString(w, `{"login":"octocat","name":"The Octocat","type":"User","bio":null,"location":"San Francisco","followers":20000,"public_repos":8,"html_url":"https://github.com/octocat"}`)
		case r.URL.Path == "/users/octocat/repos":
			io.WriteString(w, `[{"full_name":"octocat/Hello-World","description":"My first repo","language":null,"stargazers_count":3000,"fork":false,"pushed_at":"2024-01-01T00:00:00Z","html_url":"https://github.com/octocat/Hello-World"}]`)
		case r.URL.Path == "/search/issues":
			io.WriteString(w, `{"total_count":1,"incomplete_results":false,"items":[{"number":42,"title":"Bug","state":"open","pull_request":{"url":"x"},"user":{"login":"gopher"},"comments":2,"html_url":"https://github.com/golang/go/issues/42"}]}`)
		case r.URL.Path == "/repos/octocat/Hello-World/issues" && r.Method == "POST":
			w.WriteHeader(201)
			io.WriteString(w, `{"number":7,"html_url":"https://github.com/octocat/Hello-World/issues/7","state":"open"}`)
		default:
			w.WriteHeader(404)
			io.WriteString(w, `{"message":"Not Found"}`)
		}
	})
	t.Setenv("GITHUB_API_URL", srv.URL)
	t.Setenv("GITHUB_TOKEN", token)
	tools := loadExample(t, "../../examples/github/tools.hcl")

	check := func(name string, args map[string]any, wantURI string, want map[string]any) {
		t.Helper()
		got, err := tools[name].run(t, args)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		req := srv.last(t)
		u, _ := url.ParseRequestURI(req.RequestURI)
		wu, _ := url.ParseRequestURI(wantURI)
		if u.Path != wu.Path || !reflect.DeepEqual(u.Query(), wu.Query()) {
			t.Errorf("%s: server saw %s, want %s", name, req.RequestURI, wantURI)
		}
		if req.Header.Get("Authorization") != "Bearer "+token || req.Header.Get("X-Github-Api-Version") != "2022-11-28" {
			t.Errorf("%s: headers %v", name, req.Header)
		}
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: result\n%s\nwant\n%s", name, gotJSON, wantJSON)
		}
	}

	check("get_user", map[string]any{"login": "octocat"}, "/users/octocat", map[string]any{"structured": map[string]any{
		"bio": nil, "followers": 20000, "location": "San Francisco", "login": "octocat", "name": "The Octocat",
		"public_repos": 8, "type": "User", "url": "https://github.com/octocat",
	}})
	check("list_repos", map[string]any{"login": "octocat", "type": "owner", "sort": "pushed", "per_page": float64(30), "page": float64(1)},
		"/users/octocat/repos?type=owner&sort=pushed&per_page=30&page=1",
		map[string]any{"structured": map[string]any{"repos": []any{map[string]any{
			"description": "My first repo", "fork": false, "language": nil, "name": "octocat/Hello-World",
			"pushed_at": "2024-01-01T00:00:00Z", "stars": 3000, "url": "https://github.com/octocat/Hello-World",
		}}}})
	check("search_issues", map[string]any{"q": "repo:golang/go is:open http2", "order": "desc", "per_page": float64(20)},
		"/search/issues?q=repo%3Agolang%2Fgo+is%3Aopen+http2&order=desc&per_page=20",
		map[string]any{"structured": map[string]any{"incomplete": false, "issues": []any{map[string]any{
			"author": "gopher", "comments": 2, "is_pull_request": true, "number": 42, "state": "open",
			"title": "Bug", "url": "https://github.com/golang/go/issues/42",
		}}, "total": 1}})
	check("create_issue", map[string]any{"owner": "octocat", "repo": "Hello-World", "title": `Crash on "ü" input`},
		"/repos/octocat/Hello-World/issues",
		map[string]any{
			"structured": map[string]any{"number": 7, "state": "open", "url": "https://github.com/octocat/Hello-World/issues/7"},
			"text":       "Opened issue #7: https://github.com/octocat/Hello-World/issues/7",
		})
	if body := string(srv.last(t).Body); body != `{"title":"Crash on \"ü\" input"}` {
		t.Errorf("create_issue sent %s", body)
	}

	// A user that does not exist is a tool error naming the request.
	if _, err := tools["get_user"].run(t, map[string]any{"login": "nobody"}); err == nil ||
		!strings.Contains(err.Error(), "GET "+srv.URL+"/users/nobody returned 404 Not Found") {
		t.Errorf("get_user(nobody): %v", err)
	}
}

func TestGitHubExampleWithoutToken(t *testing.T) {
	srv := newServer(t, jsonHandler(200, `{"login":"octocat"}`))
	t.Setenv("GITHUB_API_URL", srv.URL)
	t.Setenv("GITHUB_TOKEN", "")
	tools := loadExample(t, "../../examples/github/tools.hcl")
	if _, err := tools["get_user"].run(t, map[string]any{"login": "octocat"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.last(t).Header["Authorization"]; ok {
		t.Errorf("an Authorization header was sent without a token")
	}
}
