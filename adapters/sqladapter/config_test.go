package sqladapter

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/funcs"
)

// A broken config must fail at load time with a diagnostic that points at
// the offending text: the test marks it with ⟪…⟫ in the source.
func TestLoadDiagnostics(t *testing.T) {
	sqliteDB := `database "main" {
  driver = "sqlite"
  dsn    = "file:` + filepath.Join(t.TempDir(), "x.db") + `"
}
`
	tests := []struct {
		name    string
		src     string // ⟪ and ⟫ mark the range the diagnostic must start at
		params  map[string]string
		summary string
		detail  string
	}{
		{
			name: "unknown placeholder",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT * FROM books WHERE id = :id AND year > ⟪:yaer⟫"
}`,
			params:  map[string]string{"id": "integer", "year": "integer"},
			summary: "Unknown placeholder",
			detail:  ":yaer names no param of this tool; declared params: id, year.",
		},
		{
			name: "unknown placeholder in a heredoc",
			src: sqliteDB + `sql {
  database = "main"
  query    = <<-SQL
    SELECT *
    FROM books
    WHERE genre = ⟪:genre⟫
  SQL
}`,
			summary: "Unknown placeholder",
			detail:  "declared params: none",
		},
		{
			name: "unknown placeholder in a plain heredoc",
			src: sqliteDB + `sql {
  database = "main"
  query    = <<SQL
SELECT *
FROM books -- ':genre' in a comment is fine
WHERE genre = ':genre' AND author = ⟪:author⟫
SQL
}`,
			summary: "Unknown placeholder",
		},
		{
			name: "interpolated query",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT * FROM books WHERE id = ${⟪args.id⟫}"
}`,
			params:  map[string]string{"id": "integer"},
			summary: "Query must be fixed text",
			detail:  "Write :id where the value goes",
		},
		{
			name: "interpolation in format()",
			src: sqliteDB + `sql {
  database = "main"
  query    = format("SELECT * FROM %s", ⟪args.table⟫)
}`,
			params:  map[string]string{"table": "string"},
			summary: "Query must be fixed text",
			detail:  "{{table}}",
		},
		{
			name: "unknown database",
			src: sqliteDB + `sql {
  database = ⟪"mian"⟫
  query    = "SELECT 1"
}`,
			summary: "Unknown database",
			detail:  `There is no database named "mian"`,
		},
		{
			name: "bad driver",
			src: `database "main" {
  driver = ⟪"oracle"⟫
  dsn    = "x"
}
sql {
  database = "main"
  query    = "SELECT 1"
}`,
			summary: "Unknown database driver",
			detail:  `use "sqlite", "postgres" or "mysql"`,
		},
		{
			name: "positional placeholder",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT * FROM books WHERE id = ⟪?⟫"
}`,
			summary: "Positional placeholder",
		},
		{
			name: "two statements",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT 1; ⟪DELETE FROM books⟫"
}`,
			summary: "More than one statement",
		},
		{
			name: "identifier slot without a list",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT * FROM books ORDER BY ⟪{{sort_by}}⟫"
}`,
			params:  map[string]string{"sort_by": "string"},
			summary: "Identifier slot without allowed names",
		},
		{
			name: "identifier slot naming no param",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT * FROM books ORDER BY ⟪{{sort}}⟫"
}`,
			summary: "Unknown identifier slot",
		},
		{
			name: "identifier param must be a string",
			src: sqliteDB + `sql {
  database    = "main"
  query       = "SELECT * FROM books ORDER BY {{n}}"
  identifiers = ⟪{ n = ["id"] }⟫
}`,
			params:  map[string]string{"n": "integer"},
			summary: "Identifier param must be a string",
		},
		{
			name: "escaped quotes are measured",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT \"x\"\tFROM t WHERE a = ⟪:nope⟫"
}`,
			summary: "Unknown placeholder",
		},
		{
			name: "bad timeout",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT 1"
  timeout  = ⟪"soon"⟫
}`,
			summary: "Invalid duration",
		},
		{
			name: "max_rows must be positive",
			src: sqliteDB + `sql {
  database = "main"
  query    = "SELECT 1"
  max_rows = ⟪0⟫
}`,
			summary: "Invalid number",
		},
		{
			name: "seed is for sqlite",
			src: `database "main" {
  driver = "postgres"
  dsn    = "postgres://u@localhost/db"
  seed   = ⟪"CREATE TABLE t (id int)"⟫
}
sql {
  database = "main"
  query    = "SELECT 1"
}`,
			summary: "Seed is for SQLite only",
		},
		{
			name: "in-memory sqlite",
			src: `database "main" {
  driver = "sqlite"
  dsn    = ⟪"file::memory:?cache=shared"⟫
}
sql {
  database = "main"
  query    = "SELECT 1"
}`,
			summary: "Invalid dsn",
			detail:  "in-memory",
		},
		{
			name: "dsn from a missing variable",
			src: `database "main" {
  driver = "postgres"
  dsn    = ⟪env("MCPD_TEST_SURELY_UNSET_VARIABLE")⟫
}
sql {
  database = "main"
  query    = "SELECT 1"
}`,
			summary: "Error in function call",
			detail:  "MCPD_TEST_SURELY_UNSET_VARIABLE is not set",
		},
		{
			name: "dsn that depends on args",
			src: `database "main" {
  driver = "postgres"
  dsn    = ⟪args⟫.dsn
}
sql {
  database = "main"
  query    = "SELECT 1"
}`,
			summary: "Value must be known at load time",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, line, col := mark(t, tt.src)
			params := tt.params
			if params == nil {
				params = map[string]string{}
			}
			_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src, Params: params})
			var found *hcl.Diagnostic
			for _, d := range diags {
				if d.Severity == hcl.DiagError && d.Summary == tt.summary {
					found = d
				}
			}
			if found == nil {
				t.Fatalf("no error %q in:\n%s", tt.summary, diags.Error())
			}
			if !strings.Contains(found.Detail, tt.detail) {
				t.Errorf("detail %q does not contain %q", found.Detail, tt.detail)
			}
			if found.Subject == nil || found.Subject.Filename != "test.hcl" || found.Subject.Start.Line != line || found.Subject.Start.Column != col {
				t.Errorf("diagnostic at %v, want test.hcl:%d,%d", found.Subject, line, col)
			}
		})
	}
}

// mark removes ⟪ and ⟫ from src and returns the line and column of ⟪.
func mark(t *testing.T, src string) (string, int, int) {
	t.Helper()
	i := strings.Index(src, "⟪")
	if i < 0 {
		t.Fatal("no ⟪ in the test source")
	}
	before := src[:i]
	line := strings.Count(before, "\n") + 1
	col := utf8.RuneCountInString(before[strings.LastIndex(before, "\n")+1:]) + 1
	return strings.NewReplacer("⟪", "", "⟫", "").Replace(src), line, col
}

func TestLoadWarnings(t *testing.T) {
	db := openTestDB(t, "sqlite")
	src := db.databaseBlock("") + sqlBlock("SELECT * FROM t WHERE id = :id", `identifiers = { sort = ["a"] }`)
	_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src, Params: map[string]string{"id": "integer", "verbose": "boolean", "sort": "string"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Summary+": "+d.Detail)
	}
	want := []string{
		"Unused identifiers entry: identifiers.sort is declared but the query has no {{sort}}.",
		`Param not used in the query: param "sort" appears in the query neither as :sort nor as {{sort}}. That is fine if the result block uses it; otherwise the argument is ignored.`,
		`Param not used in the query: param "verbose" appears in the query neither as :verbose nor as {{verbose}}. That is fine if the result block uses it; otherwise the argument is ignored.`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The DSN (and its password) never appears in a diagnostic or an error.
func TestDSNIsNeverShown(t *testing.T) {
	for _, tt := range []struct{ driver, dsn string }{
		{"postgres", "postgres://app:hunter2-secret@db.example:notaport/app"},
		{"mysql", "app:hunter2-secret@tcp(db.example:3306"},
	} {
		src := fmt.Sprintf("database \"main\" {\n  driver = %q\n  dsn = %q\n}\nsql {\n  database = \"main\"\n  query = \"SELECT 1\"\n}\n", tt.driver, tt.dsn)
		_, diags := adaptertest.Compile(t, New(), "sql", adaptertest.Config{Src: src})
		if ok, text := adaptertest.DiagContains(diags, "Invalid dsn"); !ok {
			t.Errorf("%s: no Invalid dsn diagnostic: %s", tt.driver, text)
		}
		for _, d := range diags {
			if strings.Contains(d.Summary+d.Detail, "hunter2") || strings.Contains(d.Summary+d.Detail, "db.example") {
				t.Errorf("%s: diagnostic shows the dsn: %s", tt.driver, d.Detail)
			}
		}
	}
}

// A database that is down is a quick tool error naming the database, with
// nothing of the DSN in it.
func TestUnavailableDatabase(t *testing.T) {
	for _, tt := range []struct {
		driver, dsn, reason string
	}{
		{"postgres", "postgres://app:hunter2-secret@127.0.0.1:1/app?sslmode=disable", "connect: connection refused"},
		{"mysql", "app:hunter2-secret@tcp(127.0.0.1:1)/app", "connect: connection refused"},
		{"sqlite", "file:/proc/mcpd-no-such-dir/app.db", "cannot create the directory of the database file: no such file or directory"},
	} {
		t.Run(tt.driver, func(t *testing.T) {
			src := fmt.Sprintf("database \"down\" {\n  driver = %q\n  dsn = %q\n}\nsql {\n  database = \"down\"\n  query = \"SELECT 1\"\n}\n", tt.driver, tt.dsn)
			h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src})
			start := time.Now()
			_, err := adaptertest.Call(context.Background(), h, nil, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, `database "down" is unavailable: `) || !strings.Contains(msg, tt.reason) {
				t.Errorf("err = %q", msg)
			}
			// A SQLite file's path is no secret: the error names it
			// (TestSQLiteFileErrorNamesThePath).
			for _, secret := range []string{"hunter2", "127.0.0.1", "app@"} {
				if strings.Contains(msg, secret) {
					t.Errorf("err %q shows %q", msg, secret)
				}
			}
		})
	}
}

// A SQLite file that cannot be created (its directory is read-only, as a
// config mounted read-only in a container, or cannot be made) is an error
// that names the file and says where a writable one goes, instead of
// SQLite's bare "unable to open database file".
func TestSQLiteFileErrorNamesThePath(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	isDir := filepath.Join(dir, "a-directory.db")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, seed, reason string
	}{
		{"directory cannot be made", filepath.Join(notDir, "sub", "app.db"), "", "cannot create the directory of the database file"},
		{"cannot open, seeded", isDir, "CREATE TABLE t (x);", "unable to open database file"},
		{"cannot open, no seed", isDir, "", "unable to open database file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			seed := ""
			if tt.seed != "" {
				seed = fmt.Sprintf("  seed = %q\n", tt.seed)
			}
			// A bare path as the dsn: redacted whole, yet the path shows.
			src := fmt.Sprintf("database \"notes\" {\n  driver = \"sqlite\"\n  dsn = %q\n%s}\nsql {\n  database = \"notes\"\n  query = \"SELECT 1\"\n}\n", tt.file, seed)
			h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src})
			_, err := adaptertest.Call(context.Background(), h, nil, nil)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, want := range []string{`database "notes" is unavailable: `, tt.reason, "the file is " + tt.file + ";", "MCPD_DATA_DIR"} {
				if !strings.Contains(msg, want) {
					t.Errorf("err = %q, want it to contain %q", msg, want)
				}
			}
		})
	}
}

// A server that accepts connections but never answers: connecting ends at
// the tool's timeout, and the error says so.
func TestConnectTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for driver, dsn := range map[string]string{
		"postgres": fmt.Sprintf("postgres://app:hunter2-secret@127.0.0.1:%d/app", port),
		"mysql":    fmt.Sprintf("app:hunter2-secret@tcp(127.0.0.1:%d)/app", port),
	} {
		src := fmt.Sprintf("database \"silent\" {\n  driver = %q\n  dsn = %q\n}\nsql {\n  database = \"silent\"\n  query = \"SELECT 1\"\n  timeout = \"300ms\"\n}\n", driver, dsn)
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src})
		start := time.Now()
		_, err := adaptertest.Call(context.Background(), h, nil, nil)
		const want = `database "silent" is unavailable: connecting did not finish within the 300ms timeout`
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v, want %s", driver, err, want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %s", driver, d)
		}
	}
}

// A server that refuses the connection gives its reason, still without the
// DSN.
func TestUnknownDatabaseOnTheServer(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		var dsn, want string
		switch db.kind {
		case "sqlite":
			t.Skip("SQLite creates the database")
		case "postgres":
			u, err := url.Parse(db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			u.Path = "/mcpd_no_such_database"
			dsn, want = u.String(), `database "mcpd_no_such_database" does not exist (SQLSTATE 3D000)`
		case "mysql":
			cfg, err := mysqlConfig(db.dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.DBName = "mcpd_no_such_database"
			dsn, want = cfg.FormatDSN(), "Unknown database 'mcpd_no_such_database'"
		}
		src := fmt.Sprintf("database \"gone\" {\n  driver = %q\n  dsn = %s\n}\n", db.kind, hclString(dsn)) + sqlBlock("SELECT 1")
		src = strings.Replace(src, `database = "main"`, `database = "gone"`, 1)
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src})
		_, err := adaptertest.Call(context.Background(), h, nil, nil)
		if err == nil || err.Error() != `database "gone" is unavailable: `+want {
			t.Errorf("err = %v, want %s", err, want)
		}
	})
}

// Open must not connect: a database that is down still loads.
func TestOpenDoesNotConnect(t *testing.T) {
	cfg, diags := New().DecodeBackend(backendBlock(t, `driver = "postgres"
dsn = "postgres://u@127.0.0.1:1/db"`))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	start := time.Now()
	be, err := cfg.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if time.Since(start) > 100*time.Millisecond {
		t.Errorf("Open took %s", time.Since(start))
	}
}

func TestFingerprint(t *testing.T) {
	fp := func(body string) string {
		cfg, diags := New().DecodeBackend(backendBlock(t, body))
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return cfg.Fingerprint()
	}
	a := fp("driver = \"postgres\"\ndsn = \"postgres://u:pw@h/db\"")
	if a != fp("driver = \"postgres\"\ndsn = \"postgres://u:pw@h/db\"") {
		t.Error("equal settings, different fingerprints")
	}
	if a == fp("driver = \"postgres\"\ndsn = \"postgres://u:pw@h/db2\"") || a == fp("driver = \"postgres\"\ndsn = \"postgres://u:pw@h/db\"\nmax_open_conns = 3") {
		t.Error("different settings, equal fingerprints")
	}
	if strings.Contains(a, "pw") || strings.Contains(a, "postgres") {
		t.Errorf("fingerprint %q shows the dsn", a)
	}
}

func TestDatabaseDefaults(t *testing.T) {
	cfg, diags := New().DecodeBackend(backendBlock(t, "driver = \"mysql\"\ndsn = \"u@tcp(h:3306)/db?multiStatements=true&interpolateParams=true\""))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	c := cfg.(*dbConfig)
	if c.maxOpen != 10 || c.maxIdle != 5 || c.maxLifetime != 30*time.Minute || c.maxIdleTime != 5*time.Minute || c.queryTimeout != 30*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	mc, err := mysqlConfig(c.dsn)
	if err != nil || mc.MultiStatements || mc.InterpolateParams || !mc.ParseTime || mc.AllowAllFiles {
		t.Errorf("mysql settings not forced: %+v %v", mc, err)
	}
	cfg, diags = New().DecodeBackend(backendBlock(t, `driver = "sqlite"
dsn = "file:data/app.db?_pragma=foreign_keys(1)"
max_open_conns = 2
max_idle_conns = 0
conn_max_lifetime = "0s"
conn_max_idle_time = "1m"
query_timeout = "5s"`))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	c = cfg.(*dbConfig)
	if c.maxOpen != 2 || c.maxIdle != 0 || c.maxLifetime != 0 || c.maxIdleTime != time.Minute || c.queryTimeout != 5*time.Second {
		t.Errorf("settings: %+v", c)
	}
}

func TestSQLiteDSN(t *testing.T) {
	for _, tt := range []struct{ dsn, dir, want, file string }{
		{"file:data/app.db", "/cfg", "file:/cfg/data/app.db", "/cfg/data/app.db"},
		{"data/app.db?_pragma=foreign_keys(1)", "/cfg", "/cfg/data/app.db?_pragma=foreign_keys(1)", "/cfg/data/app.db"},
		{"file:/abs/app.db?mode=rwc", "/cfg", "file:/abs/app.db?mode=rwc", "/abs/app.db"},
		{"file:///abs/my%20app.db", "/cfg", "file:///abs/my%20app.db", "/abs/my app.db"},
		{"file:my app?.db", "/cfg", "file:/cfg/my%20app?.db", "/cfg/my app"},
	} {
		got, file := resolveSQLite(tt.dsn, tt.dir)
		if got != tt.want || file != tt.file {
			t.Errorf("resolveSQLite(%q) = %q, %q; want %q, %q", tt.dsn, got, file, tt.want, tt.file)
		}
	}
	if got := sqliteDSN("file:/a.db?_query_only=0&mode=rwc", true); got != "file:/a.db?_busy_timeout=5000&_query_only=1&mode=rwc" {
		t.Errorf("read-only dsn = %q", got)
	}
	if got := sqliteDSN("/a.db?_pragma=busy_timeout(100)", false); got != "/a.db?_pragma=busy_timeout%28100%29&_txlock=immediate" {
		t.Errorf("read-write dsn = %q", got)
	}
}

// A relative SQLite path is relative to the config file, and its directory
// is created on first use.
func TestSQLiteRelativePathAndDirectory(t *testing.T) {
	dir := t.TempDir()
	src := "database \"main\" {\n  driver = \"sqlite\"\n  dsn = \"file:state/nested/app.db\"\n}\n" + sqlBlock("SELECT 1 AS one")
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Dir: dir})
	if _, err := adaptertest.Call(context.Background(), h, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "nested", "app.db")); err != nil {
		t.Errorf("database file: %v", err)
	}
}

const testSeed = `
CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO authors (id, name) VALUES (1, 'Ursula K. Le Guin'), (2, 'Italo Calvino');
CREATE TABLE books (id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES authors (id), title TEXT);
INSERT INTO books (author_id, title) VALUES (1, 'The Dispossessed'), (2, 'Invisible Cities');
`

func seededSource(path, seed string) string {
	return fmt.Sprintf("database \"main\" {\n  driver = \"sqlite\"\n  dsn = %s\n  seed = %s\n}\n", hclString("file:"+path), hclString(seed)) +
		sqlBlock("SELECT count(*) AS n FROM books")
}

// Several processes (here: backends with pools of their own) starting at
// once on a new file seed it exactly once.
func TestSeedRunsOnceUnderConcurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo", "seeded.db")
	var handlers []adapter.Handler
	for range 4 {
		handlers = append(handlers, adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: seededSource(path, testSeed)}))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := adaptertest.Call(context.Background(), handlers[i%len(handlers)], nil, nil)
			if err == nil && out.Vars["rows"].([]any)[0].(map[string]any)["n"] != int64(2) {
				err = fmt.Errorf("books: %v", out.Vars)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode string
	if err := raw.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode of a seeded database = %q (%v), want wal", mode, err)
	}
}

// A seed does not run on a database that has a schema already.
func TestSeedSkipsADatabaseWithTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "existing.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TABLE books (id INTEGER PRIMARY KEY); INSERT INTO books VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: seededSource(path, testSeed)})
	out, err := adaptertest.Call(context.Background(), h, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := out.Vars["rows"].([]any)[0].(map[string]any)["n"]; n != int64(1) {
		t.Errorf("books = %v, want the existing 1", n)
	}
}

// A seed that fails leaves nothing behind, and the error says so.
func TestSeedFailureLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.db")
	h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: seededSource(path, testSeed+"\nINSERT INTO nowhere VALUES (1);")})
	for range 2 { // and it is retried, failing the same way
		_, err := adaptertest.Call(context.Background(), h, nil, nil)
		if err == nil || !strings.HasPrefix(err.Error(), `database "main" could not be seeded: the seed script failed: `) || !strings.Contains(err.Error(), "nowhere") {
			t.Fatalf("err = %v", err)
		}
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil || n != 0 {
		t.Errorf("schema objects after a failed seed: %d (%v)", n, err)
	}
}

// backendBlock parses the body of a database block for DecodeBackend.
func backendBlock(t *testing.T, body string) *adapter.BackendBlock {
	t.Helper()
	file, diags := hclParse("database \"main\" {\n" + body + "\n}\n")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	content, diags := file.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "database", LabelNames: []string{"name"}}}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	b := content.Blocks[0]
	return &adapter.BackendBlock{Name: "main", Body: b.Body, Range: b.DefRange, Scope: &adapter.Scope{Dir: t.TempDir(), Functions: funcsTable()}}
}

func hclParse(src string) (*hcl.File, hcl.Diagnostics) {
	return hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
}

func funcsTable() map[string]function.Function { return funcs.Table(".") }

// The same, with real processes: this test binary, started several times,
// each seeding the same new file through its own backend.
func TestSeedRunsOnceAcrossProcesses(t *testing.T) {
	if path := os.Getenv("MCPD_TEST_SEED_CHILD"); path != "" {
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: seededSource(path, testSeed)})
		out, err := adaptertest.Call(context.Background(), h, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := out.Vars["rows"].([]any)[0].(map[string]any)["n"]; n != int64(2) {
			t.Fatalf("books = %v", n)
		}
		return
	}
	path := filepath.Join(t.TempDir(), "procs", "seeded.db")
	var cmds []*exec.Cmd
	for range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSeedRunsOnceAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MCPD_TEST_SEED_CHILD="+path)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if t.Failed() {
				t.Log(out.String())
			}
		})
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
}

// The DSN's password is redacted from error messages in the forms a driver
// or a proxy may quote it in, with engine/redact's rules (the same as for
// every other secret of a config): raw, percent-encoded, JSON-escaped.
func TestDSNRedaction(t *testing.T) {
	const password = "s3cr/t:pw"
	dsn := "postgres://app:" + url.QueryEscape(password) + "@db.internal:5432/app"
	cfg := &dbConfig{name: "main", dialect: postgres, dsn: dsn}
	attr := &hcl.Attribute{Name: "dsn", Expr: hcl.StaticExpr(cty.StringVal(dsn), hcl.Range{})}
	if diags := checkDSN(cfg, attr, "."); diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, msg := range []string{
		"failed to connect to " + dsn,
		"password authentication failed: " + password,
		`{"password": "s3cr\/t:pw"}`,
		"password=" + url.QueryEscape(password),
	} {
		got := cfg.redact.String(msg)
		if strings.Contains(got, password) || strings.Contains(got, url.QueryEscape(password)) || strings.Contains(got, `s3cr\/t`) {
			t.Errorf("%q: the password survives: %q", msg, got)
		}
	}
}
