package sqladapter

import (
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// One huge value is cut to max_bytes (1 MiB by default), text at a
// character boundary with "…", binary before it is encoded, and the result
// says so.
func TestMaxBytesCutsAHugeValue(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		const n = 5_000_000
		text := map[string]string{
			"sqlite":   "SELECT hex(zeroblob(:n / 2)) AS h",
			"postgres": "SELECT repeat('x', :n::int) AS h",
			"mysql":    "SELECT REPEAT('x', :n) AS h",
		}[db.kind]
		binary := map[string]string{
			"sqlite":   "SELECT zeroblob(:n) AS h",
			"postgres": "SELECT convert_to(repeat('x', :n::int), 'UTF8') AS h",
			"mysql":    "SELECT CAST(REPEAT('x', :n) AS BINARY) AS h",
		}[db.kind]
		params := map[string]string{"n": "integer"}
		for _, tt := range []struct {
			query  string
			binary bool
		}{{text, false}, {binary, true}} {
			out := db.tool(t, tt.query, params).mustCall(t, map[string]any{"n": float64(n)})
			got := rows(t, out)
			if len(got) != 1 || out.Vars["truncated"] != true {
				t.Fatalf("%s: %d rows, truncated %v", tt.query, len(got), out.Vars["truncated"])
			}
			h, _ := got[0]["h"].(string)
			if tt.binary {
				b, err := base64.StdEncoding.DecodeString(h)
				if err != nil || len(h) > defaultMaxBytes || len(h) < defaultMaxBytes-8 || strings.Trim(string(b), "x\x00") != "" {
					t.Errorf("%s: %d bytes of base64 (err %v), want a valid prefix of about %d", tt.query, len(h), err, defaultMaxBytes)
				}
			} else if !strings.HasSuffix(h, "…") || len(h) > defaultMaxBytes+len("…") || len(h) < defaultMaxBytes-8 {
				t.Errorf("%s: value of %d bytes, want about %d ending with …", tt.query, len(h), defaultMaxBytes)
			}
			if !strings.Contains(out.Text, "the result was cut at max_bytes (1 MiB)") {
				t.Errorf("text does not say the result was cut:\n%s", out.Text)
			}
		}
	})
}

// Rows are counted while they are read: once max_bytes is reached no more
// are read, and the server stops sending them. 1000 rows of 100 kB (100 MB)
// with max_bytes = 250000 keep two rows, and the call allocates a fraction
// of what the whole result would take. Sequential, so that the allocation
// count is this test's alone.
func TestMaxBytesStopsReading(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(kind, func(t *testing.T) {
			db := openTestDB(t, kind)
			query := map[string]string{
				"sqlite":   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) SELECT x, hex(zeroblob(50000)) AS h FROM c",
				"postgres": "SELECT x, repeat('x', 100000) AS h FROM generate_series(1, 1000) AS x",
				"mysql":    "SELECT seq AS x, REPEAT('x', 100000) AS h FROM seq_1_to_1000",
			}[kind]
			tl := db.tool(t, query, nil, "max_bytes = 250000")
			tl.mustCall(t, nil) // connect, warm up
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			out := tl.mustCall(t, nil)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			got := rows(t, out)
			if len(got) != 2 || got[0]["x"] != int64(1) || got[1]["x"] != int64(2) || out.Vars["truncated"] != true {
				t.Errorf("%d rows, truncated %v; want rows 1 and 2, truncated", len(got), out.Vars["truncated"])
			}
			if h, _ := got[0]["h"].(string); len(h) != 100000 {
				t.Errorf("a row that fits was cut to %d bytes", len(h))
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %s, %.1f MB allocated for a 100 MB result", kind, elapsed.Round(time.Millisecond), float64(allocated)/1e6)
			if allocated > 20e6 {
				t.Errorf("the call allocated %.1f MB: it read far more than max_bytes", float64(allocated)/1e6)
			}
			// The connection (PostgreSQL: cancelled; MySQL: killed and
			// dropped) leaves the pool healthy.
			for range 3 {
				if r := rows(t, db.tool(t, "SELECT 1 AS one", nil).mustCall(t, nil)); r[0]["one"] != int64(1) {
					t.Errorf("after the cut: %v", r)
				}
				if r := rows(t, tl.mustCall(t, nil)); len(r) != 2 {
					t.Errorf("again: %d rows", len(r))
				}
			}
		})
	}
}

// A database's max_bytes is the default of its tools; a tool's own wins.
func TestMaxBytesDefaults(t *testing.T) {
	db := openTestDB(t, "sqlite")
	src := db.databaseBlock("  max_bytes = 100")
	query := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) SELECT 'abcdefghij' AS s FROM c"
	for _, tt := range []struct {
		attrs []string
		want  int
	}{{nil, 9}, {[]string{"max_bytes = 1000"}, 50}} {
		h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src + sqlBlock(query, tt.attrs...)})
		out, err := adaptertest.Call(t.Context(), h, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(rows(t, out)); n != tt.want { // each row: "s" + 10 bytes
			t.Errorf("%v: %d rows, want %d", tt.attrs, n, tt.want)
		}
	}
	if !strings.Contains(mustText(t, db, query, "max_bytes = 100"), "(9 rows shown; the result was cut at max_bytes (100 bytes)") {
		t.Error("text does not name the limit")
	}
}

func mustText(t *testing.T, db *testDB, query string, attrs ...string) string {
	t.Helper()
	return db.tool(t, query, nil, attrs...).mustCall(t, nil).Text
}

func TestFitValue(t *testing.T) {
	tests := []struct {
		v    any
		k    colKind
		room int
		want any
		size int
		cut  bool
	}{
		{"short", kindAuto, 10, "short", 5, false},
		{"ééé", kindAuto, 3, "é…", 3, true}, // never half a character
		{"ééé", kindAuto, 4, "éé…", 4, true},
		{"abc", kindAuto, -5, "…", 0, true},
		{[]byte("text"), kindText, 2, "te…", 2, true},
		{[]byte{0, 1, 2, 3, 4, 5, 6}, kindAuto, 8, "AAECAwQF", 8, true}, // 6 bytes whose base64 fits
		{[]byte{0, 1, 2}, kindAuto, 8, "AAEC", 4, false},
		{[]byte(`{"a":1}`), kindJSON, 100, map[string]any{"a": 1.0}, 7, false},
		{[]byte(`{"a":1}`), kindJSON, 3, `{"a…`, 3, true},
		{int64(7), kindAuto, 0, int64(7), 8, false},
		{nil, kindAuto, 0, nil, 8, false},
	}
	for _, tt := range tests {
		got, size, cut := fitValue(tt.v, tt.k, tt.room)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || size != tt.size || cut != tt.cut {
			t.Errorf("fitValue(%v, room %d) = %#v, %d, %v; want %#v, %d, %v", tt.v, tt.room, got, size, cut, tt.want, tt.size, tt.cut)
		}
		if s, ok := got.(string); ok && !utf8.ValidString(s) {
			t.Errorf("fitValue(%v) = invalid UTF-8 %q", tt.v, s)
		}
	}
}

// SQLite builds a value whole before the driver copies it: read-only tools
// may not build or read one over 16 MiB (or max_bytes when larger), so
// SELECT hex(zeroblob(:n)) fails at once instead of taking memory.
func TestSQLiteReadOnlyValueLimit(t *testing.T) {
	db := openTestDB(t, "sqlite")
	params := map[string]string{"n": "integer"}
	tl := db.tool(t, "SELECT hex(zeroblob(:n)) AS h", params)
	tl.mustCall(t, map[string]any{"n": 1.0}) // connect
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := tl.call(map[string]any{"n": 50_000_000.0}) // 100 MB of hex
	runtime.ReadMemStats(&after)
	const want = "the query failed: a value is larger than the 16 MiB a read-only tool may build or read on SQLite"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %s...", err, want)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 20e6 {
		t.Errorf("the call allocated %.1f MB", float64(allocated)/1e6)
	}
	// A larger max_bytes raises the limit; tools that write have none.
	big := db.tool(t, "SELECT hex(zeroblob(:n)) AS h", params, "max_bytes = 40000000")
	if out := big.mustCall(t, map[string]any{"n": 10_000_000.0}); out.Vars["truncated"] != false {
		t.Errorf("20 MB with max_bytes 40 MB: truncated")
	}
	writer := db.tool(t, "SELECT hex(zeroblob(:n)) AS h", params, "read_only = false")
	if out := writer.mustCall(t, map[string]any{"n": 10_000_000.0}); out.Vars["truncated"] != true {
		t.Errorf("write tool: not cut at max_bytes")
	}
}
