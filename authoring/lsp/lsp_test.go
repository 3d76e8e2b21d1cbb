package lsp_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/authoring/lsp"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	return reg
}

// client is the editor's end of a pipe to a Server.
type client struct {
	t     *testing.T
	conn  *jsonrpc2.Conn
	diags chan protocol.PublishDiagnosticsParams
	dir   string
}

func newClient(t *testing.T, debounce time.Duration) *client {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"db.hcl", "tools.hcl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "shop", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("MCPD_LSP_TEST_DIR", dir)
	ctx, cancel := context.WithCancel(context.Background())
	srvEnd, cliEnd := net.Pipe()
	srv := lsp.New(registry(), lsp.Options{Debounce: debounce})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, srvEnd) }()
	c := &client{t: t, dir: dir, diags: make(chan protocol.PublishDiagnosticsParams, 100)}
	c.conn = jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(cliEnd, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Method == "textDocument/publishDiagnostics" {
				var p protocol.PublishDiagnosticsParams
				if err := json.Unmarshal(*req.Params, &p); err != nil {
					t.Errorf("publishDiagnostics: %v", err)
				}
				c.diags <- p
			}
			return nil, nil
		}))
	t.Cleanup(func() {
		c.conn.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the client disconnected")
		}
	})
	var init map[string]any
	c.call("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &init)
	caps, _ := init["capabilities"].(map[string]any)
	for _, k := range []string{"completionProvider", "hoverProvider", "definitionProvider", "documentFormattingProvider"} {
		if caps[k] == nil {
			t.Errorf("initialize: no %s in %v", k, caps)
		}
	}
	c.notify("initialized", map[string]any{})
	return c
}

func (c *client) call(method string, params, result any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Call(ctx, method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) uri(name string) string { return "file://" + filepath.Join(c.dir, name) }

func (c *client) open(name, text string) {
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": c.uri(name), "languageId": "hcl", "version": 1, "text": text}})
}

func (c *client) change(name, text string, version int) {
	c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": c.uri(name), "version": version},
		"contentChanges": []any{map[string]any{"text": text}}})
}

// waitDiags returns the first diagnostics published for name.
func (c *client) waitDiags(name string) []protocol.Diagnostic {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p := <-c.diags:
			if p.URI == c.uri(name) {
				return p.Diagnostics
			}
		case <-deadline:
			c.t.Fatalf("no diagnostics published for %s", name)
		}
	}
}

func (c *client) file(name string) string {
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

// at is the position of the n-th byte after the first occurrence of find
// in text (ASCII text: bytes are UTF-16 units).
func at(t *testing.T, text, find string, n int) map[string]any {
	t.Helper()
	i := strings.Index(text, find)
	if i < 0 {
		t.Fatalf("%q not in text", find)
	}
	i += n
	line := strings.Count(text[:i], "\n")
	col := i - (strings.LastIndex(text[:i], "\n") + 1)
	return map[string]any{"line": line, "character": col}
}

func (c *client) docPos(name, text, find string, n int) map[string]any {
	return map[string]any{"textDocument": map[string]any{"uri": c.uri(name)}, "position": at(c.t, text, find, n)}
}

// validate is what `mcpd validate` says about dir, as "line:col: text".
func validate(t *testing.T, dir string, overlay map[string][]byte) map[string][]string {
	loaded := loader.LoadWith([]string{dir}, registry(), nil, "test", loader.Options{UnsetEnvWarning: true, Overlay: overlay})
	if loaded.Snapshot != nil {
		loaded.Snapshot.Close()
	}
	out := map[string][]string{}
	for _, d := range loaded.Diagnostics {
		out[filepath.Base(d.Subject.Filename)] = append(out[filepath.Base(d.Subject.Filename)],
			strings.Join([]string{itoa(d.Subject.Start.Line - 1), itoa(d.Subject.Start.Column - 1), d.Summary + ": " + d.Detail}, ":"))
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func render(ds []protocol.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, strings.Join([]string{itoa(int(d.Range.Start.Line)), itoa(int(d.Range.Start.Character)), d.Message}, ":"))
	}
	return out
}

// The unsaved buffer is what is checked, with the loader's own position
// and text (did-you-mean included); fixing it clears the diagnostics.
func TestDiagnosticsOfUnsavedBuffer(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := strings.Replace(c.file("tools.hcl"), `database = "shop"`, `database = "shpo"`, 1)
	c.open("tools.hcl", text)
	got := render(c.waitDiags("tools.hcl"))
	want := validate(t, c.dir, map[string][]byte{filepath.Join(c.dir, "tools.hcl"): []byte(text)})["tools.hcl"]
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("diagnostics = %q, want the loader's %q", got, want)
	}
	if !strings.Contains(got[0], `Did you mean "shop"?`) || !strings.HasPrefix(got[0], "7:15:") {
		t.Errorf("diagnostic = %q, want the did-you-mean at 7:15", got[0])
	}
	c.change("tools.hcl", c.file("tools.hcl"), 2)
	if got := c.waitDiags("tools.hcl"); len(got) != 0 {
		t.Errorf("after the fix: %q, want none", render(got))
	}
}

// A change in one file is checked against the others: renaming the
// database in an open db.hcl breaks tools.hcl, which is not open.
func TestDiagnosticsAcrossFiles(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	c.open("db.hcl", strings.Replace(c.file("db.hcl"), `database "shop"`, `database "store"`, 1))
	for {
		ds := c.waitDiags("tools.hcl")
		if len(ds) == 1 && strings.Contains(ds[0].Message, `There is no database named "shop"`) {
			return
		}
		t.Fatalf("tools.hcl diagnostics = %q, want the unknown database", render(ds))
	}
}

// Changes that come faster than the debounce are loaded once, as the last
// of them.
func TestDiagnosticsDebounced(t *testing.T) {
	c := newClient(t, 300*time.Millisecond)
	orig := c.file("tools.hcl")
	c.open("tools.hcl", strings.Replace(orig, `"shop"`, `"a"`, 1))
	c.change("tools.hcl", strings.Replace(orig, `"shop"`, `"b"`, 1), 2)
	c.change("tools.hcl", strings.Replace(orig, `"shop"`, `"shpo"`, 1), 3)
	got := render(c.waitDiags("tools.hcl"))
	if len(got) != 1 || !strings.Contains(got[0], `"shpo"`) {
		t.Fatalf("first diagnostics = %q, want only the last text's", got)
	}
	select {
	case p := <-c.diags:
		if p.URI == c.uri("tools.hcl") {
			t.Errorf("a second load was published: %q", render(p.Diagnostics))
		}
	case <-time.After(500 * time.Millisecond):
	}
}

type item struct {
	Label string `json:"label"`
}

func labels(items []item) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.Label)
	}
	return out
}

func TestCompletion(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := c.file("tools.hcl")
	text = strings.Replace(text, "    max_rows = 10 * 10\n", "    max_rows = 10 * 10\n    \n", 1)
	text = strings.Replace(text, `path    = "/users/${args.name}"`, `path    = "/users/${args.}"`, 1)
	text += "\n\n"
	c.open("tools.hcl", text)
	tests := []struct {
		name      string
		find      string
		n         int
		want, not []string
	}{
		{"sql block attributes from the adapter's schema", "10 * 10\n    \n", 12, []string{"database", "query", "max_rows", "read_only"}, []string{"description", "base_url"}},
		{"database names", `database = "shop"`, 12, []string{"shop"}, []string{"api"}},
		{"http_backend names", `backend = "api"`, 11, []string{"api"}, []string{"shop"}},
		{"param types", `type    = "integer"`, 11, []string{"string", "integer", "number", "boolean", "array", "object"}, nil},
		{"param attributes", "    type    = \"integer\"\n", 0, []string{"type", "minimum", "pattern", "enum", "default"}, []string{"query"}},
		{"tool attributes and blocks", "  description = \"A book", 2, []string{"description", "timeout", "param", "sql", "http", "shell", "result"}, []string{"base_url"}},
		{"top-level blocks", "}\n\n\n", 3, []string{"tool", "resource", "prompt", "server", "auth", "database", "http_backend"}, []string{"param"}},
		{"params after args.", "${args.}", 7, []string{"name"}, []string{"id"}},
		{"functions in a value", "max_rows = ", 11, []string{"env", "file", "args"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var items []item
			c.call("textDocument/completion", c.docPos("tools.hcl", text, tt.find, tt.n), &items)
			got := labels(items)
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %q in %q", w, got)
				}
			}
			for _, n := range tt.not {
				if slices.Contains(got, n) {
					t.Errorf("%q offered in %q", n, got)
				}
			}
		})
	}
}

func TestHover(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := c.file("tools.hcl")
	c.open("tools.hcl", text)
	if ds := c.waitDiags("tools.hcl"); len(ds) != 0 { // the load that compiles the params
		t.Fatalf("diagnostics: %q", render(ds))
	}
	tests := []struct {
		name string
		find string
		n    int
		want []string
	}{
		{"block", `tool "get_book"`, 1, []string{"One MCP tool"}},
		{"adapter attribute", `database = "shop"`, 2, []string{"**database** (required)", "The name of the `database` block"}},
		{"static value", "max_rows = 10", 2, []string{"Value: `100`"}},
		{"param's JSON Schema", `param "id"`, 2, []string{"JSON Schema", `"type": "integer"`, `"minimum": 1`}},
		{"args in a template", "args.name", 6, []string{`param "name" of tool "get_user"`, `"type": "string"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h struct {
				Contents struct{ Value string } `json:"contents"`
			}
			c.call("textDocument/hover", c.docPos("tools.hcl", text, tt.find, tt.n), &h)
			for _, w := range tt.want {
				if !strings.Contains(h.Contents.Value, w) {
					t.Errorf("hover = %q, want %q in it", h.Contents.Value, w)
				}
			}
		})
	}
	// An attribute that calls a function (env, file: maybe a secret) shows
	// no value.
	db := c.file("db.hcl")
	var h struct {
		Contents struct{ Value string } `json:"contents"`
	}
	c.call("textDocument/hover", c.docPos("db.hcl", db, "dsn", 1), &h)
	if !strings.Contains(h.Contents.Value, "**dsn** (required)") || strings.Contains(h.Contents.Value, "Value") || strings.Contains(h.Contents.Value, c.dir) {
		t.Errorf("hover of dsn = %q, want its reference and no value", h.Contents.Value)
	}
}

func TestDefinition(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := c.file("tools.hcl")
	c.open("tools.hcl", text)
	db := c.file("db.hcl")
	tests := []struct {
		name     string
		find     string
		n        int
		file     string
		wantText string
		wantFind string
	}{
		{"database", `database = "shop"`, 13, "db.hcl", db, `"shop"`},
		{"http_backend", `backend = "api"`, 12, "db.hcl", db, `"api"`},
		{"args in a template", "args.name", 6, "tools.hcl", text, `"name"`},
		{"placeholder in a query", ":id", 1, "tools.hcl", text, `"id"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var loc *protocol.Location
			c.call("textDocument/definition", c.docPos("tools.hcl", text, tt.find, tt.n), &loc)
			if loc == nil {
				t.Fatal("no definition")
			}
			want := at(t, tt.wantText, tt.wantFind, 0)
			if loc.URI != c.uri(tt.file) || int(loc.Range.Start.Line) != want["line"] || int(loc.Range.Start.Character) != want["character"] {
				t.Errorf("definition = %s %d:%d, want %s %v", loc.URI, loc.Range.Start.Line, loc.Range.Start.Character, tt.file, want)
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := "tool \"x\" {\ndescription=\"y\"\n    timeout = \"1s\"\n}\n"
	c.open("x.hcl", text)
	var edits []protocol.TextEdit
	c.call("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": c.uri("x.hcl")}, "options": map[string]any{"tabSize": 2, "insertSpaces": true}}, &edits)
	want := "tool \"x\" {\n  description = \"y\"\n  timeout     = \"1s\"\n}\n"
	if len(edits) != 1 || edits[0].NewText != want || edits[0].Range.End.Line != 4 {
		t.Fatalf("edits = %+v, want the whole text as %q", edits, want)
	}
	// A buffer that does not parse is left alone.
	c.change("x.hcl", "tool \"x\" {\n", 2)
	edits = nil
	c.call("textDocument/formatting", map[string]any{"textDocument": map[string]any{"uri": c.uri("x.hcl")}, "options": map[string]any{"tabSize": 2, "insertSpaces": true}}, &edits)
	if len(edits) != 0 {
		t.Errorf("edits of a broken buffer = %+v", edits)
	}
}

// The did-you-mean of a diagnostic is a quick fix that makes the change.
func TestCodeActionDidYouMean(t *testing.T) {
	// A debounce long enough that the stale check below runs before the
	// reload of its edit.
	c := newClient(t, time.Second)
	orig := c.file("tools.hcl")
	text := strings.Replace(orig, `database = "shop"`, `database = "shpo"`, 1)
	text = strings.Replace(text, `description = "A user`, `descripton = "A user`, 1)
	c.open("tools.hcl", text)
	if ds := c.waitDiags("tools.hcl"); len(ds) < 2 {
		t.Fatalf("diagnostics = %q, want the two misspellings", render(ds))
	}
	tests := []struct{ find, want string }{
		{`"shpo"`, `"shop"`},
		{`descripton`, `description`},
	}
	for _, tt := range tests {
		var actions []protocol.CodeAction
		pos := at(t, text, tt.find, 1)
		c.call("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": c.uri("tools.hcl")},
			"range": map[string]any{"start": pos, "end": pos}, "context": map[string]any{"diagnostics": []any{}}}, &actions)
		if len(actions) != 1 || actions[0].Edit == nil {
			t.Fatalf("at %s: actions = %+v, want one fix", tt.find, actions)
		}
		edits := actions[0].Edit.Changes[c.uri("tools.hcl")]
		if len(edits) != 1 {
			t.Fatalf("edits = %+v", edits)
		}
		start := at(t, text, tt.find, 0)
		if edits[0].NewText != tt.want || int(edits[0].Range.Start.Line) != start["line"] || int(edits[0].Range.Start.Character) != start["character"] ||
			int(edits[0].Range.End.Character) != start["character"].(int)+len(tt.find) {
			t.Errorf("edit = %+v, want %s over %s at %v", edits[0], tt.want, tt.find, start)
		}
	}
	// After an edit the load has not seen yet, no fix is offered.
	c.change("tools.hcl", "\n"+text, 2)
	var actions []protocol.CodeAction
	pos := at(t, "\n"+text, `"shpo"`, 1)
	c.call("textDocument/codeAction", map[string]any{"textDocument": map[string]any{"uri": c.uri("tools.hcl")},
		"range": map[string]any{"start": pos, "end": pos}, "context": map[string]any{"diagnostics": []any{}}}, &actions)
	if len(actions) != 0 {
		t.Errorf("a fix on a stale load: %+v", actions)
	}
}

func TestReferences(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := c.file("tools.hcl") + `
tool "count_books" {
  description = "How many books"
  sql {
    database = "shop"
    query    = "SELECT count(*) FROM books"
  }
}
`
	c.open("tools.hcl", text)
	db := c.file("db.hcl")
	refs := func(name, src, find string, n int) []string {
		var locs []protocol.Location
		p := c.docPos(name, src, find, n)
		p["context"] = map[string]any{"includeDeclaration": true}
		c.call("textDocument/references", p, &locs)
		var out []string
		for _, l := range locs {
			out = append(out, filepath.Base(l.URI)+":"+itoa(int(l.Range.Start.Line))+":"+itoa(int(l.Range.Start.Character)))
		}
		return out
	}
	// The database, from its declaration: itself and both tools' uses.
	want := []string{"db.hcl:0:9", "tools.hcl:7:15", "tools.hcl:27:15"}
	if got := refs("db.hcl", db, `"shop"`, 1); !slices.Equal(got, want) {
		t.Errorf("references of database shop = %q, want %q", got, want)
	}
	// The param id, from its placeholder: the declaration and the :id.
	want = []string{"tools.hcl:2:8", "tools.hcl:8:56"}
	if got := refs("tools.hcl", text, ":id", 1); !slices.Equal(got, want) {
		t.Errorf("references of param id = %q, want %q", got, want)
	}
	// The param name, from its declaration: itself and args.name.
	want = []string{"tools.hcl:15:8", "tools.hcl:20:24"}
	if got := refs("tools.hcl", text, `param "name"`, 7); !slices.Equal(got, want) {
		t.Errorf("references of param name = %q, want %q", got, want)
	}
}

// An untitled buffer has no directory: it is never loaded (the server's
// working directory is not the author's config), but completion reads it.
func TestUntitledBuffer(t *testing.T) {
	c := newClient(t, 10*time.Millisecond)
	text := "tool \"x\" {\n  \n}\n"
	c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": "untitled:Untitled-1", "languageId": "hcl", "version": 1, "text": text}})
	var items []item
	c.call("textDocument/completion", map[string]any{"textDocument": map[string]any{"uri": "untitled:Untitled-1"}, "position": at(t, text, "  \n", 2)}, &items)
	if !slices.Contains(labels(items), "description") {
		t.Errorf("completion = %q, want the tool's attributes", labels(items))
	}
	select {
	case p := <-c.diags:
		t.Errorf("diagnostics published for an untitled buffer: %+v", p)
	case <-time.After(300 * time.Millisecond):
	}
}
