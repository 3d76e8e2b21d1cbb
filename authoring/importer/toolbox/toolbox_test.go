package toolbox_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	mysqldriver "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/authoring/importer/importtest"
	"github.com/mcpd/mcpd/authoring/importer/toolbox"
	"github.com/mcpd/mcpd/engine/adapter"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func convert(t *testing.T, name string) *toolbox.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := toolbox.Convert(data, toolbox.Options{Source: name})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated output (run go test -update and review the diff):\n%s", path, got)
	}
}

// setEnv sets what the generated configuration reads with env().
func setEnv(t *testing.T, sqlitePath, bookingURL string) {
	t.Setenv("HOTELS_SQLITE", sqlitePath)
	t.Setenv("PG_DATABASE", "test")
	t.Setenv("PG_USER", "postgres")
	t.Setenv("BOOKING_URL", bookingURL)
	t.Setenv("BOOKING_API_AUTHORIZATION", "Bearer booking-token-1")
	t.Setenv("GOOGLE_CLIENT_ID", "client-1.apps.googleusercontent.com")
	t.Setenv("HOTELS_MYSQL_PASSWORD", "unused-password")
	if os.Getenv("MCPD_TEST_POSTGRES_DSN") == "" {
		t.Setenv("MCPD_TEST_POSTGRES_DSN", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
}

// TestGolden converts both Toolbox formats of one configuration: the HCL
// must be the same, match the golden file and load with the real loader.
func TestGolden(t *testing.T) {
	setEnv(t, filepath.Join(t.TempDir(), "hotels.db"), "https://booking.example.com/api")
	v1 := convert(t, "tools-v1.yaml")
	v2 := convert(t, "tools-v2.yaml")
	golden(t, "tools.hcl", v1.HCL)
	body := func(b []byte) string { return string(b[bytes.IndexByte(b, '\n'):]) }
	if body(v1.HCL) != body(v2.HCL) {
		t.Errorf("the two formats give different configs:\n%s\n---\n%s", v1.HCL, v2.HCL)
	}
	for name, res := range map[string]*toolbox.Result{"tools-v1": v1, "tools-v2": v2} {
		var rep bytes.Buffer
		res.Report.Write(&rep)
		golden(t, name+".report.txt", rep.Bytes())
	}
	if len(v1.Report.Issues) != len(v2.Report.Issues) {
		t.Errorf("%d issues from the old format, %d from the new", len(v1.Report.Issues), len(v2.Report.Issues))
	}
	s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": v1.HCL})
	if len(s.Tools) != v1.Tools || v1.Tools != 9 {
		t.Errorf("%d tools loaded, %d converted, want 9", len(s.Tools), v1.Tools)
	}
	// Nothing written inline as a secret reaches the generated file.
	for _, secret := range []string{"my-secret-password", "not-to-be-copied-123"} {
		if bytes.Contains(v1.HCL, []byte(secret)) {
			t.Errorf("the generated config holds %q", secret)
		}
	}
}

// TestRows runs the converted SQL tools against a real SQLite file and
// the real PostgreSQL, next to the same tools written by hand, and
// compares their rows.
func TestRows(t *testing.T) {
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "hotels.db")
	setEnv(t, dbPath, "https://booking.example.com/api")
	seedSQLite(t, dbPath)
	seedPostgres(t)

	for _, format := range []string{"tools-v1.yaml", "tools-v2.yaml"} {
		t.Run(format, func(t *testing.T) {
			hand, err := os.ReadFile(filepath.Join("testdata", "handwritten.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": convert(t, format).HCL, "hand.hcl": hand})
			cs := importtest.Connect(t, s)
			cases := []struct {
				converted, hand string
				args            map[string]any
				rows            int
			}{
				{"search-hotels-by-name", "hand_search_by_name", map[string]any{"name": "hotel"}, 3},
				{"search-hotels-by-name", "hand_search_by_name", map[string]any{"name": "o'brien"}, 1},
				{"hotels-in-price-range", "hand_price_range", map[string]any{"min_price": 100}, 3},
				{"hotels-in-price-range", "hand_price_range", map[string]any{"min_price": 0, "max_price": 150, "location": "Basel"}, 1},
				{"sqlite-hotels-by-location", "hand_by_location", map[string]any{"location": "Basel"}, 2},
				{"sqlite-hotels-by-location", "hand_by_location", map[string]any{"location": "Basel", "limit": 1}, 1},
				{"sqlite-hotels-sorted", "hand_sorted", map[string]any{"column": "price"}, 4},
			}
			for _, c := range cases {
				got := importtest.Call(t, cs, c.converted, c.args)
				want := importtest.Call(t, cs, c.hand, c.args)
				if got.IsError || want.IsError {
					t.Fatalf("%s%v: %s / %s", c.converted, c.args, importtest.Text(got), importtest.Text(want))
				}
				gr, wr := textRows(t, got), textRows(t, want)
				if !reflect.DeepEqual(gr, wr) || len(gr) != c.rows {
					t.Errorf("%s%v: rows %v, the hand-written tool's %v (want %d rows)", c.converted, c.args, gr, wr, c.rows)
				}
			}
			// The caller-bound param needs an authenticated caller: the
			// in-memory client is the local user, who has no claims.
			res := importtest.Call(t, cs, "book-hotel", map[string]any{"hotel_id": 1})
			if !res.IsError || !strings.Contains(importtest.Text(res), "authenticated caller") {
				t.Errorf("book-hotel as the local user: %s", importtest.Text(res))
			}
			// A value the Toolbox parameter did not allow.
			res = importtest.Call(t, cs, "sqlite-hotels-sorted", map[string]any{"column": "id; DROP TABLE hotels"})
			if !res.IsError {
				t.Errorf("an identifier outside allowedValues was accepted: %s", importtest.Text(res))
			}
		})
	}
}

func seedSQLite(t *testing.T, path string) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE hotels (id INTEGER PRIMARY KEY, name TEXT, location TEXT, price REAL)",
		"INSERT INTO hotels VALUES (1, 'Hotel Krafft', 'Basel', 180), (2, 'Les Trois Rois', 'Basel', 450), (3, 'Baur au Lac', 'Zurich', 700), (4, '?', 'Basel', 90)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

// seedPostgres creates a scratch schema on the test database and drops it
// when the test ends.
func seedPostgres(t *testing.T) {
	dsn := os.Getenv("MCPD_TEST_POSTGRES_DSN")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Skipf("PostgreSQL at %s: %v", dsn, err)
	}
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS mcpd_import_test CASCADE")
		conn.Close(context.Background())
	})
	for _, q := range []string{
		"DROP SCHEMA IF EXISTS mcpd_import_test CASCADE",
		"CREATE SCHEMA mcpd_import_test",
		"CREATE TABLE mcpd_import_test.hotels (id int PRIMARY KEY, name text, location text, price numeric(8,2))",
		"INSERT INTO mcpd_import_test.hotels VALUES (1, 'Hotel Krafft', 'Basel', 120), (2, 'Grand Hotel', 'Zurich', 300), (3, 'O''Brien''s Inn', 'Geneva', 95.5), (4, 'City Hotel', 'Geneva', 150)",
		"CREATE TABLE mcpd_import_test.bookings (hotel_id int, email text)",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHTTPTools calls the converted http tools against a server that
// checks each request.
func TestHTTPTools(t *testing.T) {
	type req struct {
		Method, Path, Auth, Trace string
		Query                     url.Values
		Body                      any
	}
	got := make(chan req, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body any
		if len(raw) > 0 {
			json.Unmarshal(raw, &body)
		}
		got <- req{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Trace"), r.URL.Query(), body}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer api.Close()
	setEnv(t, filepath.Join(t.TempDir(), "hotels.db"), api.URL+"/api")
	s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": convert(t, "tools-v2.yaml").HCL})
	cs := importtest.Connect(t, s)

	tests := []struct {
		tool string
		args map[string]any
		want req
	}{
		{"get-booking", map[string]any{"booking_id": "b/1", "x_trace": "t-1"},
			req{"GET", "/api/bookings/b/1", "Bearer booking-token-1", "t-1", url.Values{"expand": {"hotel"}}, nil}},
		{"get-booking", map[string]any{"booking_id": "b2", "lang": "de"},
			req{"GET", "/api/bookings/b2", "Bearer booking-token-1", "", url.Values{"expand": {"hotel"}, "lang": {"de"}}, nil}},
		{"create-booking", map[string]any{"hotel_id": 3, "guest": "Ann \"A\" O'Neil", "nights": []any{"2024-05-06"}, "breakfast": true},
			req{"POST", "/api/bookings", "Bearer booking-token-1", "", url.Values{}, map[string]any{
				"hotel": float64(3), "guest": "Ann \"A\" O'Neil", "nights": []any{"2024-05-06"}, "extras": map[string]any{"breakfast": true}}}},
	}
	for _, tt := range tests {
		res := importtest.Call(t, cs, tt.tool, tt.args)
		if res.IsError {
			t.Fatalf("%s: %s", tt.tool, importtest.Text(res))
		}
		r := <-got
		if !reflect.DeepEqual(r, tt.want) {
			t.Errorf("%s%v:\n got %+v\nwant %+v", tt.tool, tt.args, r, tt.want)
		}
	}
}

// TestMySQL runs a converted mysql-sql tool, with its ? placeholders
// rewritten, against the real MariaDB/MySQL (MCPD_TEST_MYSQL_DSN, or
// root@127.0.0.1:3306/test).
func TestMySQL(t *testing.T) {
	dsn := os.Getenv("MCPD_TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = "root@tcp(127.0.0.1:3306)/test"
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Skipf("MySQL at %s: %v", dsn, err)
	}
	for _, q := range []string{
		"DROP TABLE IF EXISTS mcpd_import_hotels",
		"CREATE TABLE mcpd_import_hotels (id INT PRIMARY KEY, name TEXT, city TEXT, price INT)",
		"INSERT INTO mcpd_import_hotels VALUES (1, 'Krafft', 'Basel', 180), (2, 'Trois Rois', 'Basel', 450), (3, '?', 'Basel', 90), (4, 'Baur', 'Zurich', 700)",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS mcpd_import_hotels") })
	cfg, err := mysqldriver.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(cfg.Addr, ":")
	t.Setenv("MYSQL_HOST", host)
	t.Setenv("MYSQL_PORT", port)
	t.Setenv("MYSQL_DATABASE", cfg.DBName)
	t.Setenv("MYSQL_USER", cfg.User)
	t.Setenv("MYSQL_PASSWORD", cfg.Passwd)

	s := importtest.Load(t, registry(), map[string][]byte{"tools.hcl": convert(t, "tools-mysql.yaml").HCL})
	cs := importtest.Connect(t, s)
	res := importtest.Call(t, cs, "hotels-by-city", map[string]any{"city": "Basel", "max": 1})
	if res.IsError {
		t.Fatal(importtest.Text(res))
	}
	rows := textRows(t, res)
	want := []any{map[string]any{"id": float64(1), "name": "Krafft"}}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
}

// textRows reads the rows of a SQL tool's result: its text is their JSON.
func textRows(t *testing.T, res *mcp.CallToolResult) []any {
	t.Helper()
	var rows []any
	if err := json.Unmarshal([]byte(importtest.Text(res)), &rows); err != nil {
		t.Fatalf("the result's text is not the rows' JSON: %v\n%s", err, importtest.Text(res))
	}
	return rows
}

// registry holds every shipped adapter, as mcpd's own.
func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	return reg
}
