package sqladapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// These tests load whole configs through the engine, as mcpd does, with
// every adapter registered (the default config uses all three), and call
// their tools with JSON arguments.

func loadConfig(t *testing.T, path string) *snapshot.Snapshot {
	t.Helper()
	reg := adapter.NewRegistry()
	reg.Register("sql", New())
	reg.Register("http", httpadapter.New())
	reg.Register("shell", shell.New())
	l := loader.Load([]string{path}, reg, nil, "test")
	for _, d := range l.Diagnostics {
		t.Logf("%s: %s: %s", d.Subject, d.Summary, d.Detail)
	}
	if l.Snapshot == nil {
		t.Fatalf("%s does not load", path)
	}
	t.Cleanup(l.Snapshot.Close)
	return l.Snapshot
}

// callTool calls a tool and returns its result's text and structured content.
func callTool(t *testing.T, snap *snapshot.Snapshot, name, args string) (text string, structured map[string]any, isError bool) {
	t.Helper()
	tl, ok := snap.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	res, err := tl.Call(context.Background(), &snapshot.CallRequest{Args: json.RawMessage(args)})
	if err != nil { // a protocol error: read as the tool error it would be
		return err.Error(), nil, true
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &structured); err != nil {
			t.Fatal(err)
		}
	}
	return text, structured, res.IsError
}

// textRows reads the rows' JSON of a result's text.
func textRows(t *testing.T, text string) []any {
	t.Helper()
	var rows []any
	if err := json.Unmarshal([]byte(text), &rows); err != nil {
		t.Fatalf("the text is not the rows' JSON: %v\n%s", err, text)
	}
	return rows
}

// The default config's SQL tools, against demo/seed.sql, laid out as in the
// repository: tools.hcl beside demo/.
func TestDemoTools(t *testing.T) {
	dir := t.TempDir()
	for src, dst := range map[string]string{
		"../../tools.hcl":     "tools.hcl",
		"../../demo/seed.sql": "demo/seed.sql",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, dst)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := loadConfig(t, filepath.Join(dir, "tools.hcl"))

	text, s, isErr := callTool(t, snap, "list_books", `{"genre": "mystery", "sort_by": "year", "limit": 3}`)
	if isErr || len(textRows(t, text)) != 3 || s != nil {
		t.Fatalf("list_books: %s (structured %v)", text, s)
	}
	first := textRows(t, text)[0].(map[string]any)
	if first["title"] != "The Murder of Roger Ackroyd" || first["year"] != 1926.0 || first["author"] != "Agatha Christie" {
		t.Errorf("list_books first row: %v", first)
	}
	if !strings.HasPrefix(text, `[{"id":`) {
		t.Errorf("list_books text:\n%s", text)
	}
	if text, _, _ = callTool(t, snap, "list_books", `{}`); len(textRows(t, text)) != 20 {
		t.Errorf("list_books default limit: %s", text)
	}
	if text, _, isErr = callTool(t, snap, "list_books", `{"sort_by": "author_id"}`); !isErr {
		t.Errorf("list_books with a sort_by outside the enum: %s", text)
	}

	if text, _, _ = callTool(t, snap, "search_books", `{"text": "le guin"}`); len(textRows(t, text)) != 5 {
		t.Errorf("search_books: %s", text)
	}
	if text, _, _ = callTool(t, snap, "search_books", `{"text": "' OR 1=1 --"}`); text != "[]" {
		t.Errorf("search_books injection: %s", text)
	}

	_, s, isErr = callTool(t, snap, "get_book", `{"id": 17}`)
	if isErr || s["title"] != "The Hobbit" || s["copies_sold"] != 3.0 || s["price"] != 10.99 {
		t.Errorf("get_book: %v", s)
	}
	if text, _, isErr = callTool(t, snap, "get_book", `{"id": 999}`); !isErr || !strings.Contains(text, "There is no book with id 999") {
		t.Errorf("get_book 999: %v %s", isErr, text)
	}

	text, _, _ = callTool(t, snap, "top_authors", `{"limit": 2}`)
	rows := textRows(t, text)
	if len(rows) != 2 || rows[0].(map[string]any)["author"] != "Ursula K. Le Guin" {
		t.Errorf("top_authors: %v", rows)
	}

	text, _, _ = callTool(t, snap, "sales_summary", `{"group_by": "month"}`)
	if !strings.HasPrefix(text, `[{"month":`) || len(textRows(t, text)) != 7 {
		t.Errorf("sales_summary by month: %s", text)
	}
	if text, _, _ = callTool(t, snap, "sales_summary", `{}`); !strings.Contains(text, `{"genre":"fiction","orders":5,"copies":10,"revenue":141.47}`) {
		t.Errorf("sales_summary by genre:\n%s", text)
	}

	// restock asks for confirmation: with no one to ask, it does not run.
	if text, _, isErr = callTool(t, snap, "restock", `{"id": 8, "copies": 4}`); !isErr || !strings.Contains(text, "did not run") {
		t.Errorf("restock without confirmation: isError %v, %s", isErr, text)
	}
	if _, s, _ = callTool(t, snap, "get_book", `{"id": 8}`); s["in_stock"] != 0.0 {
		t.Errorf("restock ran unconfirmed: %v", s)
	}
	s, isErr = confirmedCall(t, snap, "restock", `{"id": 8, "copies": 4}`)
	if isErr || s["in_stock"] != 4.0 {
		t.Errorf("restock: %v", s)
	}
	if _, s, _ = callTool(t, snap, "get_book", `{"id": 8}`); s["in_stock"] != 4.0 {
		t.Errorf("after restock: %v", s)
	}

	if _, err := os.Stat(filepath.Join(dir, ".mcpd", "demo.db")); err != nil {
		t.Errorf("demo database: %v", err)
	}
	// A second load (a restart, a reload) finds the database seeded.
	snap2 := loadConfig(t, filepath.Join(dir, "tools.hcl"))
	if _, s, _ = callTool(t, snap2, "get_book", `{"id": 8}`); s["in_stock"] != 4.0 {
		t.Errorf("after reload: %v", s)
	}
}

// examples/postgres against a schema of its own in the test database.
func TestPostgresExample(t *testing.T) {
	dsn := os.Getenv(envPostgres)
	if dsn == "" {
		t.Skipf("set %s to run examples/postgres against PostgreSQL", envPostgres)
	}
	db := openTestDB(t, "postgres")
	schema := fmt.Sprintf("mcpd_example_%08x", rand.Uint32())
	db.exec(t, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { db.raw.Exec("DROP SCHEMA " + schema + " CASCADE") })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	schemaSQL, err := os.ReadFile("../../examples/postgres/schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer scoped.Close()
	if _, err := scoped.Exec(string(schemaSQL)); err != nil {
		t.Fatalf("schema.sql: %v", err)
	}

	t.Setenv("DATABASE_URL", u.String())
	snap := loadConfig(t, "../../examples/postgres/tools.hcl")

	text, s, isErr := callTool(t, snap, "list_tickets", `{"status": "open", "sort_by": "priority"}`)
	if isErr || len(textRows(t, text)) == 0 {
		t.Fatalf("list_tickets: %s", text)
	}
	for _, r := range textRows(t, text) {
		if r.(map[string]any)["status"] != "open" {
			t.Errorf("list_tickets row: %v", r)
		}
	}
	_, s, isErr = callTool(t, snap, "get_ticket", `{"id": 1}`)
	comments, _ := s["comments"].([]any)
	if isErr || s["subject"] == nil || len(comments) == 0 {
		t.Errorf("get_ticket: %v", s)
	}
	before := len(comments)
	text, s, isErr = callTool(t, snap, "add_comment", `{"ticket_id": 1, "author": "agent@example.com", "body": "Looking into it'); DROP TABLE tickets; --"}`)
	if isErr || s["ticket_id"] != 1.0 {
		t.Fatalf("add_comment: %s", text)
	}
	if _, s, _ = callTool(t, snap, "get_ticket", `{"id": 1}`); len(s["comments"].([]any)) != before+1 {
		t.Errorf("comments after add_comment: %v", s["comments"])
	}
	text, _, _ = callTool(t, snap, "list_tickets", `{"sort_by": "priority", "limit": 3}`)
	if r := textRows(t, text); len(r) != 3 || r[0].(map[string]any)["priority"] != 1.0 {
		t.Errorf("list_tickets by priority: %s", text)
	}
	text, _, isErr = callTool(t, snap, "ticket_stats", `{}`)
	if isErr || len(textRows(t, text)) == 0 {
		t.Errorf("ticket_stats: %s", text)
	}
	if text, _, isErr = callTool(t, snap, "get_ticket", `{"id": 424242}`); !isErr {
		t.Errorf("get_ticket of a missing id: %s", text)
	}
}

// The result block of docs/adapter-sql.md, over the adapter's variables.
func TestResultVariablesInTheEngine(t *testing.T) {
	dir := t.TempDir()
	config := `
database "shop" {
  driver = "sqlite"
  dsn    = "file:shop.db"
  seed   = <<-SQL
    CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT, year INTEGER);
    INSERT INTO books VALUES (1, 'Dune', 1965), (2, 'Solaris', 1961);
  SQL
}

tool "get_book" {
  description = "A book by id"
  param "id" {
    type = "integer"
  }
  sql {
    database = "shop"
    query    = "SELECT id, title, year FROM books WHERE id = :id"
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no book with id ' + string(args.id)"
    structured    = "rows[0]"
    text          = "join(map(rows, {.title + ' (' + string(.year) + ')'}), ', ')"
  }
}

tool "all_books" {
  description = "Every book"
  output_schema = {
    type     = "object"
    required = ["columns", "rows", "row_count", "truncated"]
  }
  sql {
    database = "shop"
    query    = "SELECT id, title FROM books ORDER BY id"
  }
}

tool "first_book" {
  description = "The first book, cut at max_rows"
  output_schema = {
    type = "object"
  }
  sql {
    database = "shop"
    query    = "SELECT id, title FROM books ORDER BY id"
    max_rows = 1
  }
}

tool "next_book" {
  description = "The book after an id, through a params expression"
  param "id" {
    type = "integer"
  }
  sql {
    database = "shop"
    query    = "SELECT title FROM books WHERE id = :next"
    params   = { next = args.id + 1 }
  }
}

tool "add_book" {
  description = "Add a book"
  param "title" {
    type = "string"
  }
  sql {
    database  = "shop"
    read_only = false
    query     = "INSERT INTO books (title, year) VALUES (:title, 2000)"
  }
  result {
    text = "'added #' + string(last_insert_id) + ' (' + string(rows_affected) + ' row, truncated: ' + string(truncated) + ', columns: ' + string(len(columns)) + ')'"
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := loadConfig(t, filepath.Join(dir, "tools.hcl"))
	text, s, isErr := callTool(t, snap, "get_book", `{"id": 2}`)
	if isErr || text != "Solaris (1961)" || s["title"] != "Solaris" {
		t.Errorf("get_book: %v %q %v", isErr, text, s)
	}
	// With an output_schema, the rows come as the structured result, whose
	// JSON is the text.
	text, s, isErr = callTool(t, snap, "all_books", `{}`)
	want := `{"columns":["id","title"],"row_count":2,"rows":[{"id":1,"title":"Dune"},{"id":2,"title":"Solaris"}],"truncated":false}`
	if b, _ := json.Marshal(s); isErr || string(b) != want || text != want {
		t.Errorf("all_books: %v\ntext %s\nstructured %s\nwant %s", isErr, text, b, want)
	}
	if text, _, isErr = callTool(t, snap, "next_book", `{"id": 1}`); isErr || text != `[{"title":"Solaris"}]` {
		t.Errorf("next_book: %v %s", isErr, text)
	}
	// A cut result's text says so after the JSON.
	text, s, isErr = callTool(t, snap, "first_book", `{}`)
	want = `{"columns":["id","title"],"row_count":1,"rows":[{"id":1,"title":"Dune"}],"truncated":true}` +
		"\n(1 row shown; the query returned more, cut at max_rows)"
	if isErr || text != want || s["truncated"] != true {
		t.Errorf("first_book: %v\ntext %s\nstructured %v\nwant %s", isErr, text, s, want)
	}
	if text, _, isErr = callTool(t, snap, "get_book", `{"id": 3}`); !isErr || text != "There is no book with id 3" {
		t.Errorf("get_book 3: %v %q", isErr, text)
	}
	if text, _, isErr = callTool(t, snap, "add_book", `{"title": "Kindred"}`); isErr || text != "added #3 (1 row, truncated: false, columns: 0)" {
		t.Errorf("add_book: %v %q", isErr, text)
	}
}

// confirmedCall calls a tool that asks for confirmation and accepts it, as
// a client's user would.
func confirmedCall(t *testing.T, snap *snapshot.Snapshot, name, args string) (map[string]any, bool) {
	t.Helper()
	tl, _ := snap.Tool(name)
	req := &snapshot.CallRequest{Args: json.RawMessage(args), Answers: ask.Answers{Sealer: requeststate.MustRandomSealer(), Caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}}
	res, err := tl.Call(context.Background(), req)
	if err != nil || res.InputRequests == nil {
		t.Fatalf("%s did not ask for confirmation: %v %v", name, err, res)
	}
	req.Answers.Responses, req.Answers.State = mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}, res.RequestState
	if res, err = tl.Call(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s, res.IsError
}
