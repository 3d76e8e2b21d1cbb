package sqladapter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/resultbuf"
	"github.com/mcpd/mcpd/internal/wait"
)

// everyTypeColumns is a table with a column of every type a result may
// hold, in each dialect.
var everyTypeColumns = map[string]string{
	"sqlite": "id INTEGER PRIMARY KEY, i INTEGER, big INTEGER, r REAL, f FLOAT, d DECIMAL(30,10), n NUMERIC, b BOOLEAN, " +
		"t TEXT, v VARCHAR(20), c CHAR(5), bl BLOB, dt DATETIME, dd DATE, ts TIMESTAMP, j JSON, x",
	"postgres": "id INT PRIMARY KEY, i2 SMALLINT, i4 INT, i8 BIGINT, num NUMERIC(40,20), numx NUMERIC, r4 REAL, r8 DOUBLE PRECISION, " +
		"b BOOLEAN, t TEXT, v VARCHAR(20), c CHAR(5), nm NAME, qc \"char\", by BYTEA, j JSON, jb JSONB, dd DATE, ts TIMESTAMP, " +
		"tz TIMESTAMPTZ, tm TIME, tmz TIMETZ, iv INTERVAL, u UUID, ip INET, cid CIDR, mac MACADDR, arr INT[], tarr TEXT[], " +
		"x XML, o OID, bits VARBIT, mn MONEY, pt POINT, rng INT4RANGE",
	"mysql": "id INT PRIMARY KEY, i1 TINYINT, i2 SMALLINT, i3 MEDIUMINT, i4 INT, i8 BIGINT, u8 BIGINT UNSIGNED, num DECIMAL(40,20), " +
		"r4 FLOAT, r8 DOUBLE, bt BIT(12), b BOOLEAN, c CHAR(5), v VARCHAR(20), t MEDIUMTEXT, lt LONGTEXT, bn BINARY(4), vb VARBINARY(20), " +
		"bl BLOB, j JSON, dd DATE, dt DATETIME(6), ts TIMESTAMP(3) NULL, tm TIME(6), y YEAR, e ENUM('a','b\u00e9'), st SET('x','y'), g GEOMETRY",
}

// everyTypeRows are rows over everyTypeColumns: edge values, unicode,
// escapes, a large text and binary value, and a row of NULLs.
var everyTypeRows = map[string][]string{
	"sqlite": {
		`(1, 0, 9007199254740993, 0.1, 1e300, '12345678901234567890.0123456789', 3.5, 1, 'plain "quoted" \ back', 'ünï 日本 🎉', 'ab', x'00ff10', '2024-02-29 13:14:15.123456', '2024-02-29', '2024-02-29T01:02:03Z', '{"a":[1,2.50,9007199254740993],"b":"x\u2028"}', 42)`,
		`(2, -9007199254740991, -9223372036854775808, -0.0, 1e-7, '-0.0000000001', 'text in numeric', 0, char(1,9,10,13,8232,8233,127), '', 'x', zeroblob(0), 'not a date', '1999-12-31', 1700000000, 'not json', x'c3')`,
		`(3, 2, 3, 4.25, 5, '6', 7, 2, replace(hex(zeroblob(100000)), '00', 'a€'), 'v', 'c', randomblob(50000), NULL, NULL, NULL, '[]', 'x')`,
		`(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
		`(5, 1, 2, 3, 4, 5, 6, 1, CAST(x'61ff62' AS TEXT), 'bad', 'utf8', x'', '2024-01-01', '2024-01-01', '2024-01-01', '{"k":"\ud83c"}', 3.25)`,
	},
	"postgres": {
		`(1, 32767, 2147483647, 9223372036854775807, 12345678901234567890.01234567890123456789, 'NaN', 0.1, 0.1, true, 'plain "quoted" \ back', 'ünï 日本 🎉', 'ab', 'name', 'q', '\x00ff10', '{"a":[1,2.50,9007199254740993],"b":"x\u2028"}', '{"b":1, "a":[true,null]}', '2024-02-29', '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.5+05:30', '13:14:15', '13:14:15+02', '1 year 2 mons 3 days 04:05:06.7', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '{1,2,NULL}', '{"a b","c\"d",NULL}', '<a>x</a>', 4294967295, B'1011', 12.34, '(1,2)', '[1,10)')`,
		`(2, -32768, -2147483648, -9223372036854775808, -0.00000000000000000001, 1e-30, 'Infinity', '-Infinity', false, E'\x01\t\n\r\u2028\u2029\x7f', '', 'x', '', ' ', '\x', 'null', '[]', '0001-01-01', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', '00:00:00', '00:00:00+00', '0', '00000000-0000-0000-0000-000000000000', '::1', '::/0', '00:00:00:00:00:00', '{}', '{}', '<a/>', 0, B'', -1, '(0,0)', 'empty')`,
		`(3, 1, 2, 3, 4, 5, 'NaN', 'NaN', true, repeat('a€', 100000), 'v', 'c', 'n', 'c', decode(repeat('00ff', 25000), 'hex'), '{"big":"` + strings.Repeat("j", 3000) + `"}', '{"k":[1,2,3]}', '2024-01-01', '2024-01-01', '2024-01-01 00:00:00+00', '23:59:59.999999', '23:59:59.999999-12', '-1 days', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1.2.3.4', '1.2.3.0/24', 'ff:ff:ff:ff:ff:ff', '{1}', '{x}', '<b/>', 1, B'1', 0, '(-1.5,2.25)', '(1,2]')`,
		`(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	},
	"mysql": {
		`(1, 127, 32767, 8388607, 2147483647, 9223372036854775807, 18446744073709551615, 12345678901234567890.01234567890123456789, 0.1, 0.1, b'101010101010', true, 'ab', 'ünï 日本 🎉', 'plain "quoted" \\ back', 'lt', x'00ff10', x'00ff10', x'00ff10', '{"a":[1,2.50,9007199254740993],"b":"x\u2028"}', '2024-02-29', '2024-02-29 13:14:15.123456', '2024-02-29 13:14:15.5', '-838:59:59.000000', 2024, 'bé', 'x,y', ST_GeomFromText('POINT(1 2)'))`,
		`(2, -128, -32768, -8388608, -2147483648, -9223372036854775808, 0, -0.00000000000000000001, -0.0, 1e-7, b'0', false, '', '', '\0\t\n\r\Z ' , '', x'', x'', x'', 'null', '1000-01-01', '1000-01-01 00:00:00', NULL, '00:00:00', 1901, 'a', '', ST_GeomFromText('POINT(0 0)'))`,
		`(3, 1, 2, 3, 4, 5, 9007199254740993, 1, 3.4e38, 1.7e308, b'111111111111', 1, 'c', 'v', REPEAT('a€', 100000), REPEAT('x', 300000), x'ffffffff', RANDOM_BYTES(20), RANDOM_BYTES(1024), '{"big":"` + strings.Repeat("j", 3000) + `"}', '9999-12-31', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999', '838:59:59', 2155, 'bé', 'y', ST_GeomFromText('LINESTRING(0 0,1 1)'))`,
		`(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	},
}

// The text-only path (rawrows.go, pgrows.go), which reads the drivers'
// values where they lie, gives byte for byte the text of the path that
// reads them through database/sql into values (collect, taken by a tool
// whose variables are read): every column type, NULLs, unicode, invalid
// UTF-8, binary, large values, numeric precision, dates and times, JSON;
// whole, and cut at many max_bytes and at max_rows; without arguments and
// with (MySQL's text and binary protocols; PostgreSQL's simple and
// extended); with and without a lease.
func TestRawTextMatches(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.table(t, everyTypeColumns)
		for _, row := range everyTypeRows[db.kind] {
			db.exec(t, fmt.Sprintf("INSERT INTO %s VALUES %s", tbl, row))
		}
		queries := []struct {
			query  string
			params map[string]string
			args   map[string]any
		}{
			{query: "SELECT * FROM " + tbl + " ORDER BY id"},
			{query: "SELECT * FROM " + tbl + " WHERE id >= :min ORDER BY id", params: map[string]string{"min": "integer"}, args: map[string]any{"min": 1.0}},
			{query: "SELECT id AS a, id AS a, NULL AS n, 1.5 AS f, 'lit' AS s FROM " + tbl + " ORDER BY id"},
		}
		type limit struct{ rows, bytes int }
		limits := []limit{{}, {rows: 2}, {rows: 1}}
		for _, n := range []int{0, 1, 7, 50, 100, 150, 333, 700, 1500, 5000, 60000, 100000, 140000, 200000, 400000} {
			limits = append(limits, limit{bytes: n})
		}
		for qi, q := range queries {
			block := sqlBlock(q.query)
			oldH := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: db.databaseBlock("") + block, Params: q.params})
			rawH := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: db.databaseBlock("") + block, Params: q.params, VarsUnread: true})
			for _, lim := range limits {
				name := fmt.Sprintf("query %d, max_rows %d, max_bytes %d", qi, lim.rows, lim.bytes)
				// One pool per handler: copies with other limits.
				old, raw := *oldH.(*handler), *rawH.(*handler)
				if lim.rows > 0 {
					old.maxRows, raw.maxRows = lim.rows, lim.rows
				}
				if lim.bytes > 0 {
					old.maxBytes, raw.maxBytes = lim.bytes, lim.bytes
				}
				want, wantErr := adaptertest.Call(context.Background(), &old, q.params, q.args)
				if wantErr != nil && lim == (limit{}) {
					t.Fatalf("%s: %v", name, wantErr)
				}
				for _, lease := range []bool{false, true} {
					ctx := context.Background()
					if lease {
						ctx = resultbuf.With(ctx, resultbuf.NewPool().Lease())
					}
					got, err := adaptertest.Call(ctx, &raw, q.params, q.args)
					switch {
					case (err != nil) != (wantErr != nil) || err != nil && err.Error() != wantErr.Error():
						t.Errorf("%s (lease %v): error %v, want %v", name, lease, err, wantErr)
					case err != nil:
					case got.Text != want.Text:
						at := 0
						for at < min(len(got.Text), len(want.Text)) && got.Text[at] == want.Text[at] {
							at++
						}
						t.Errorf("%s (lease %v): the texts differ at byte %d of %d/%d:\n got %.200q\nwant %.200q",
							name, lease, at, len(got.Text), len(want.Text), got.Text[max(0, at-40):], want.Text[max(0, at-40):])
					case got.Vars != nil:
						t.Errorf("%s: variables nothing reads: %v", name, got.Vars)
					}
				}
			}
		}
	})
}

// A text-only call copies no value: of a result of 1 MB of text, what
// it allocates (its lease warm) is a fraction, where reading the values
// through database/sql copied each once more (PostgreSQL, MySQL).
// SQLite's driver copies each text it reads (modernc.org/sqlite's
// columnText), so SQLite is not measured.
func TestRawTextCopiesNoValue(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not measured under the race detector")
	}
	for _, kind := range []string{"postgres", "mysql"} {
		t.Run(kind, func(t *testing.T) {
			db := openTestDB(t, kind)
			tbl := db.items(t)
			db.exec(t, fmt.Sprintf("INSERT INTO %s (id, note) VALUES (1, '%s')", tbl, strings.Repeat("n", 990)))
			for i := 1; i < 1000; i *= 2 {
				db.exec(t, fmt.Sprintf("INSERT INTO %s (id, note) SELECT id + %d, note FROM %s WHERE id <= %d", tbl, i, tbl, min(i, 1000-i)))
			}
			h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: db.databaseBlock("") + sqlBlock("SELECT id, note FROM "+tbl+" ORDER BY id"), VarsUnread: true})
			pool := resultbuf.NewPool()
			call := func() int {
				l := pool.Lease()
				out, err := adaptertest.Call(resultbuf.With(context.Background(), l), h, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				n := len(out.Text)
				l.Bind(out)
				l.Release(out)
				return n
			}
			size := call() // the lease's buffers exist
			if size < 1000000 {
				t.Fatalf("a result of %d bytes", size)
			}
			// No collection empties the pool the lease's buffers go back to.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
			metrics.Read(s)
			before := s[0].Value.Uint64()
			const calls = 5
			for range calls {
				call()
			}
			metrics.Read(s)
			per := int(s[0].Value.Uint64()-before) / calls
			t.Logf("%d bytes allocated per call of a %d-byte result", per, size)
			if per > size/2 {
				t.Errorf("a call allocated %d bytes for a %d-byte result: the values were copied", per, size)
			}
		})
	}
}

// The text-only path runs as the caller (PostgreSQL: the role and
// settings of the call's transaction, RLS applied), and a timeout cancels
// its query on the server, leaving the pool healthy: as collect's path.
func TestRawTextIdentityAndTimeout(t *testing.T) {
	t.Run("postgres identity", func(t *testing.T) {
		db := openTestDB(t, "postgres")
		r := setupPGRLS(t, db)
		src := fmt.Sprintf("database \"main\" {\n  driver = \"postgres\"\n  dsn = %s\n  max_open_conns = 2\n  identity {\n    role {\n      from_caller = \"claims.db_role\"\n      enum = [%q]\n    }\n    setting \"tenant\" {\n      from_caller = \"claims.tenant\"\n      pattern = \"^[a-z]+$\"\n    }\n  }\n}\n"+
			"sql {\n  database = \"main\"\n  query = \"SELECT tenant, current_user AS who FROM %s.orders ORDER BY id\"\n}\n", hclString(r.dsn), r.reader, r.schema)
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Auth: openCallers, VarsUnread: true})
		for _, tenant := range []string{"a", "b", "a"} {
			ctx := asCaller(context.Background(), "u"+tenant, map[string]any{"tenant": tenant, "db_role": r.reader})
			out, err := adaptertest.Call(ctx, h, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			other := map[string]string{"a": "b", "b": "a"}[tenant]
			if !strings.Contains(out.Text, `"tenant":"`+tenant+`"`) || strings.Contains(out.Text, `"tenant":"`+other+`"`) ||
				!strings.Contains(out.Text, `"who":"`+r.reader+`"`) {
				t.Errorf("tenant %s: %s", tenant, out.Text)
			}
		}
	})
	eachDB(t, func(t *testing.T, db *testDB) {
		marker := fmt.Sprintf("mcpd_rawtimeout_%08x", rand.Uint32())
		slow := map[string]string{
			"postgres": "SELECT pg_sleep(10) AS " + marker,
			"mysql":    "SELECT BENCHMARK(20000000000, MD5('" + marker + "')) AS x",
			"sqlite":   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS " + marker + " FROM c",
		}[db.kind]
		compile := func(query string) adapter.Handler {
			return adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: db.databaseBlock("") + sqlBlock(query, `timeout = "200ms"`), VarsUnread: true})
		}
		_, err := adaptertest.Call(context.Background(), compile(slow), nil, nil)
		if err == nil || err.Error() != "the query did not finish within its 200ms timeout and was cancelled" {
			t.Fatalf("err = %v", err)
		}
		running := map[string]string{
			"postgres": "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%" + marker + "%'",
			"mysql":    "SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%" + marker + "%'",
		}[db.kind]
		if running != "" {
			wait.Until(t, "the query ends on the server", func() bool {
				var n int
				return db.raw.QueryRow(running).Scan(&n) == nil && n == 0
			})
		}
		out, err := adaptertest.Call(context.Background(), compile("SELECT 1 AS one"), nil, nil)
		if err != nil || out.Text != `[{"one":1}]` {
			t.Errorf("after the timeout: %v %v", out, err)
		}
	})
}
