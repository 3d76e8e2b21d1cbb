package sqladapter

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for test setup

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// The suite runs against SQLite always, and against PostgreSQL and
// MySQL/MariaDB when these variables hold a DSN:
//
//	MCPD_TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable
//	MCPD_TEST_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test'
const (
	envPostgres = "MCPD_TEST_POSTGRES_DSN"
	envMySQL    = "MCPD_TEST_MYSQL_DSN"
)

// testDB is one database the suite runs against.
type testDB struct {
	kind string // "sqlite", "postgres", "mysql"
	d    dialect
	dsn  string
	raw  *sql.DB // for setting up and checking, outside the adapter
}

// eachDB runs f as a subtest per database, in parallel: every test uses
// tables of its own.
func eachDB(t *testing.T, f func(t *testing.T, db *testDB)) {
	t.Helper()
	for _, kind := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f(t, openTestDB(t, kind))
		})
	}
}

func openTestDB(t testing.TB, kind string) *testDB {
	t.Helper()
	db := &testDB{kind: kind, d: dialects[kind]}
	var driverName string
	switch kind {
	case "sqlite":
		db.dsn = "file:" + filepath.Join(t.TempDir(), "test.db")
		driverName = "sqlite"
	case "postgres":
		db.dsn = os.Getenv(envPostgres)
		if db.dsn == "" {
			t.Skipf("set %s (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run against PostgreSQL", envPostgres)
		}
		driverName = "pgx"
	case "mysql":
		db.dsn = os.Getenv(envMySQL)
		if db.dsn == "" {
			t.Skipf("set %s (e.g. root@tcp(127.0.0.1:3306)/test) to run against MySQL/MariaDB", envMySQL)
		}
		driverName = "mysql"
	}
	raw, err := sql.Open(driverName, db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	db.raw = raw
	return db
}

// exec runs setup SQL outside the adapter.
func (db *testDB) exec(t testing.TB, query string) {
	t.Helper()
	if _, err := db.raw.Exec(query); err != nil {
		t.Fatalf("setup %q: %v", query, err)
	}
}

// table creates a table of a unique name, dropped when the test ends.
// columns maps a kind of database to its column definitions.
func (db *testDB) table(t testing.TB, columns map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("mcpd_test_%08x", rand.Uint32())
	suffix := ""
	if db.kind == "mysql" {
		suffix = " DEFAULT CHARSET=utf8mb4"
	}
	db.exec(t, fmt.Sprintf("CREATE TABLE %s (%s)%s", name, columns[db.kind], suffix))
	t.Cleanup(func() { db.raw.Exec("DROP TABLE IF EXISTS " + name) })
	return name
}

// itemsColumns is the table most tests use, in each dialect.
var itemsColumns = map[string]string{
	"sqlite": "id INTEGER PRIMARY KEY, name TEXT, note TEXT, price DECIMAL(12,2), big INTEGER, ratio REAL, " +
		"flag BOOLEAN, created DATETIME, day DATE, data BLOB, doc JSON",
	"postgres": "id BIGSERIAL PRIMARY KEY, name TEXT, note TEXT, price NUMERIC(12,2), big BIGINT, ratio DOUBLE PRECISION, " +
		"flag BOOLEAN, created TIMESTAMPTZ, day DATE, data BYTEA, doc JSONB",
	"mysql": "id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(255), note TEXT, price DECIMAL(12,2), big BIGINT, ratio DOUBLE, " +
		"flag BOOLEAN, created DATETIME(6), day DATE, data BLOB, doc JSON",
}

func (db *testDB) items(t testing.TB) string { return db.table(t, itemsColumns) }

// count returns the number of rows of a table, read outside the adapter.
func (db *testDB) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := db.raw.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatalf("counting %s: %v", table, err)
	}
	return n
}

// databaseBlock is `database "main"` for db, with extra attributes.
func (db *testDB) databaseBlock(extra string) string {
	return fmt.Sprintf("database \"main\" {\n  driver = %q\n  dsn    = %s\n%s\n}\n", db.kind, hclString(db.dsn), extra)
}

// compile compiles `database "main"` plus one sql block.
func (db *testDB) compile(t testing.TB, sqlBlock string, params map[string]string) (adapter.Handler, hcl.Diagnostics) {
	t.Helper()
	return adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: db.databaseBlock("") + sqlBlock, Params: params})
}

func (db *testDB) mustCompile(t testing.TB, sqlBlock string, params map[string]string) adapter.Handler {
	t.Helper()
	h, diags := db.compile(t, sqlBlock, params)
	if diags.HasErrors() {
		t.Fatalf("compiling:\n%s\n%s", sqlBlock, diags.Error())
	}
	return h
}

// sqlBlock is a sql block on database "main" with the query as a heredoc.
func sqlBlock(query string, attrs ...string) string {
	var b strings.Builder
	b.WriteString("sql {\n  database = \"main\"\n")
	for _, a := range attrs {
		b.WriteString("  " + a + "\n")
	}
	b.WriteString("  query = <<EOT\n" + escapeTemplate(query) + "\nEOT\n}\n")
	return b.String()
}

// tool is a compiled tool with its params, ready to call.
type tool struct {
	h      adapter.Handler
	params map[string]string
}

func (db *testDB) tool(t testing.TB, query string, params map[string]string, attrs ...string) tool {
	t.Helper()
	if params == nil {
		params = map[string]string{}
	}
	return tool{db.mustCompile(t, sqlBlock(query, attrs...), params), params}
}

func (tl tool) call(args map[string]any) (*adapter.Output, error) {
	return adaptertest.Call(context.Background(), tl.h, tl.params, args)
}

func (tl tool) mustCall(t testing.TB, args map[string]any) *adapter.Output {
	t.Helper()
	out, err := tl.call(args)
	if err != nil {
		t.Fatalf("call %v: %v", args, err)
	}
	return out
}

// rows is the rows of an output, as result expressions see them. It fails
// the test unless the output's text is the JSON of the same rows (and of
// nothing else, except the note of a result that was cut).
func rows(t testing.TB, out *adapter.Output) []map[string]any {
	t.Helper()
	list, ok := out.Vars["rows"].([]any)
	if !ok {
		t.Fatalf("no rows in %#v", out.Vars)
	}
	res := make([]map[string]any, len(list))
	for i, r := range list {
		res[i] = r.(map[string]any)
	}
	text, note, _ := strings.Cut(out.Text, "\n")
	if (note != "") != (out.Vars["truncated"] == true) {
		t.Errorf("truncated is %v, and the text says %q", out.Vars["truncated"], note)
	}
	var fromText, fromRows any
	want, err := json.Marshal(list)
	if err != nil {
		t.Fatalf("rows are not JSON: %v", err)
	}
	if err := json.Unmarshal([]byte(text), &fromText); err != nil {
		t.Fatalf("the text is not JSON: %v\n%s", err, out.Text)
	}
	json.Unmarshal(want, &fromRows)
	if !reflect.DeepEqual(fromText, fromRows) {
		t.Errorf("the text does not hold the rows:\ntext %s\nrows %s", text, want)
	}
	return res
}

// hclString quotes s as an HCL string literal.
func hclString(s string) string {
	q := fmt.Sprintf("%q", s)
	return escapeTemplate(q)
}

// escapeTemplate keeps HCL from reading ${ and %{ as template syntax.
func escapeTemplate(s string) string {
	return strings.NewReplacer("${", "$${", "%{", "%%{").Replace(s)
}
