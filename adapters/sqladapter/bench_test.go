package sqladapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/funcs"
)

const benchRows = 10_000

// benchDB creates a SQLite file with a 10,000-row books table.
func benchDB(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	// WAL, as a database mcpd seeds is: in rollback-journal mode each read
	// takes and drops a file lock, several system calls per query.
	if _, err := raw.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		b.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT NOT NULL, author TEXT NOT NULL,
		year INTEGER, price DECIMAL(8,2), added DATETIME)`); err != nil {
		b.Fatal(err)
	}
	tx, err := raw.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := 1; i <= benchRows; i++ {
		if _, err := tx.Exec("INSERT INTO books VALUES (?, ?, ?, ?, ?, ?)", i, fmt.Sprintf("Book number %d", i),
			fmt.Sprintf("Author %d", i%500), 1900+i%120, float64(i%5000)/100, "2024-05-06 07:08:09"); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkSQLitePointQuery is one call of a read-only tool, as the engine
// makes it: arguments in, structured rows and a text table out.
func BenchmarkSQLitePointQuery(b *testing.B) {
	path := benchDB(b)
	src := fmt.Sprintf("database \"main\" {\n  driver = \"sqlite\"\n  dsn = %s\n}\n", hclString("file:"+path)) +
		sqlBlock("SELECT id, title, author, year, price, added FROM books WHERE id = :id")
	params := map[string]string{"id": "integer"}
	h := adaptertest.MustCompile(b, New(), "sql", adaptertest.Config{Src: src, Params: params})
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: params}
	ctx := context.Background()
	reqs := make([]*adapter.Request, 1024)
	for i := range reqs {
		args := map[string]any{"id": float64(i*7%benchRows + 1)}
		reqs[i] = &adapter.Request{Tool: "bench", Args: args, Eval: scope.CallContext(args), Progress: func(float64, float64, string) {}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		out, err := h.Call(ctx, reqs[i%len(reqs)])
		if err != nil || out.Vars["row_count"] != int64(1) {
			b.Fatal(err, out)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkSQLitePointQueryDriver is the same query through database/sql
// alone, on a pool set up as the adapter's read-only pool, with a timeout
// per call and scanning into the same []any: the floor the adapter's own
// cost sits on.
func BenchmarkSQLitePointQueryDriver(b *testing.B) {
	path := benchDB(b)
	db, err := sql.Open("sqlite", sqliteDSN("file:"+path, true))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	dest := make([]any, 6)
	ptrs := make([]any, 6)
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		ctx, cancel := context.WithTimeout(ctx, defaultQueryTimeout)
		rows, err := db.QueryContext(ctx, "SELECT id, title, author, year, price, added FROM books WHERE id = ?", int64(i*7%benchRows+1))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := rows.Close(); err != nil || n != 1 {
			b.Fatal(err, n)
		}
		cancel()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkReadOnlyPointQuery is one call of a read-only tool on each
// server database (skipped without its DSN): on MySQL it includes
// re-asserting the read-only session when the pooled connection is checked
// out (one round trip), on PostgreSQL the BEGIN READ ONLY ... ROLLBACK.
func BenchmarkReadOnlyPointQuery(b *testing.B) {
	for _, kind := range []string{"postgres", "mysql"} {
		b.Run(kind, func(b *testing.B) {
			db := openTestDB(b, kind)
			tbl := fmt.Sprintf("mcpd_bench_%s", kind)
			db.exec(b, "DROP TABLE IF EXISTS "+tbl)
			db.exec(b, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, title VARCHAR(100))")
			defer db.raw.Exec("DROP TABLE " + tbl)
			db.exec(b, "INSERT INTO "+tbl+" VALUES (1, 'one'), (2, 'two')")
			tl := db.tool(b, "SELECT id, title FROM "+tbl+" WHERE id = :id", map[string]string{"id": "integer"})
			args := map[string]any{"id": 1.0}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tl.call(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRowText is what the text of a result costs per row (a point
// query's row: five columns of each kind), against encoding/json writing
// the same rows as maps, as the engine writes a structured result.
func BenchmarkRowText(b *testing.B) {
	names := []string{"id", "name", "price", "stock", "added"}
	vals := []any{int64(4242), "Item number 4242", 43.41, int64(24), "2026-01-02 03:04:05"}
	row := map[string]any{}
	for i, n := range names {
		row[n] = vals[i]
	}
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("rows=%d/appendRow", n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = append(buf[:0], '[')
				for i := range n {
					if i > 0 {
						buf = append(buf, ',')
					}
					buf = appendRow(buf, names, vals)
				}
				buf = append(buf, ']')
			}
			b.ReportMetric(float64(len(buf))/float64(n), "bytes/row")
		})
		b.Run(fmt.Sprintf("rows=%d/encoding-json", n), func(b *testing.B) {
			rows := make([]any, n)
			for i := range rows {
				rows[i] = row
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(rows); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSQLitePointQueryConn and BenchmarkSQLitePointQueryRaw measure
// issue #21's question: would reading a read-only query's rows through the
// driver connection itself (sql.Conn.Raw, driver.QueryerContext and
// driver.Rows.Next into []driver.Value) remove real per-query work from
// database/sql (its Rows, the goroutine that watches the context, Scan's
// conversions)? Both take a connection from the pool per call, as the
// adapter does; the difference between them is what Raw would save.
func BenchmarkSQLitePointQueryConn(b *testing.B) {
	db, query := pointDB(b)
	ctx := context.Background()
	dest := make([]any, 6)
	ptrs := make([]any, 6)
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		qctx, cancel := context.WithTimeout(ctx, defaultQueryTimeout)
		conn, err := db.Conn(qctx)
		if err != nil {
			b.Fatal(err)
		}
		rows, err := conn.QueryContext(qctx, query, int64(i*7%benchRows+1))
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := rows.Close(); err != nil || n != 1 {
			b.Fatal(err, n)
		}
		conn.Close()
		cancel()
	}
}

func BenchmarkSQLitePointQueryRaw(b *testing.B) {
	db, query := pointDB(b)
	ctx := context.Background()
	dest := make([]driver.Value, 6)
	args := make([]driver.NamedValue, 1)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		qctx, cancel := context.WithTimeout(ctx, defaultQueryTimeout)
		conn, err := db.Conn(qctx)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		err = conn.Raw(func(dc any) error {
			args[0] = driver.NamedValue{Ordinal: 1, Value: int64(i*7%benchRows + 1)}
			rows, err := dc.(driver.QueryerContext).QueryContext(qctx, query, args)
			if err != nil {
				return err
			}
			for rows.Next(dest) == nil {
				n++
			}
			return rows.Close()
		})
		if err != nil || n != 1 {
			b.Fatal(err, n)
		}
		conn.Close()
		cancel()
	}
}

func pointDB(b *testing.B) (*sql.DB, string) {
	path := benchDB(b)
	db, err := sql.Open("sqlite", sqliteDSN("file:"+path, true))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db, "SELECT id, title, author, year, price, added FROM books WHERE id = ?"
}

// BenchmarkTextOnlyPointQuery is one call of a read-only point query of a
// tool without output_schema, result or logs block, whose text alone is
// read (the text-only path, rawrows.go), on each database (the servers
// skipped without their DSN).
func BenchmarkTextOnlyPointQuery(b *testing.B) {
	for _, kind := range []string{"sqlite", "postgres", "mysql"} {
		b.Run(kind, func(b *testing.B) {
			db := openTestDB(b, kind)
			tbl := fmt.Sprintf("mcpd_bench_text_%s", kind)
			db.exec(b, "DROP TABLE IF EXISTS "+tbl)
			db.exec(b, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, title VARCHAR(100), author VARCHAR(100), year INT, price DECIMAL(10,2), added DATE)")
			defer db.raw.Exec("DROP TABLE " + tbl)
			db.exec(b, "INSERT INTO "+tbl+" VALUES (1, 'Book number 1', 'Author 1', 1937, 12.50, '2024-05-06'), (2, 'two', 'Author 2', 1954, 3.25, '2024-05-07')")
			params := map[string]string{"id": "integer"}
			h := adaptertest.MustCompile(b, New(), "sql", adaptertest.Config{
				Src: db.databaseBlock("") + sqlBlock("SELECT id, title, author, year, price, added FROM "+tbl+" WHERE id = :id"), Params: params, VarsUnread: true})
			args := map[string]any{"id": 1.0}
			b.ReportAllocs()
			for b.Loop() {
				out, err := adaptertest.Call(context.Background(), h, params, args)
				if err != nil || !strings.Contains(out.Text, "Book number 1") {
					b.Fatal(err, out)
				}
			}
		})
	}
}
