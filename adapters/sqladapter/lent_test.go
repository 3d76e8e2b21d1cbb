package sqladapter

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// A tool whose variables nothing reads (no result or logs block) gives
// the same text without them; lent buffers (engine/resultbuf), the same
// text built in one of them once it is large: small, large, cut at
// max_bytes, cut at max_rows, and with a structured result.
func TestLentText(t *testing.T) {
	eachDB(t, func(t *testing.T, db *testDB) {
		tbl := db.items(t)
		for i := 1; i <= 300; i++ {
			db.exec(t, fmt.Sprintf("INSERT INTO %s (id, name, note) VALUES (%d, 'n%d', '%s')", tbl, i, i, strings.Repeat(string(rune('a'+i%26)), 500)))
		}
		query := fmt.Sprintf("SELECT id, name, note FROM %s WHERE id <= :n ORDER BY id", tbl)
		params := map[string]string{"n": "integer"}
		for _, tc := range []struct {
			name  string
			n     int
			attrs []string
			lent  bool
		}{
			{name: "small", n: 3},
			{name: "large", n: 300, lent: true},
			{name: "cut at max_bytes", n: 300, attrs: []string{"max_bytes = 100000"}, lent: true},
			{name: "cut at max_rows", n: 300, attrs: []string{"max_rows = 200"}, lent: true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				block := sqlBlock(query, tc.attrs...)
				src := db.databaseBlock("") + block
				reads := db.mustCompile(t, block, params)
				unread := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Params: params, VarsUnread: true})
				args := map[string]any{"n": float64(tc.n)}
				want, err := adaptertest.Call(context.Background(), reads, params, args)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows(t, want)) == 0 {
					t.Fatal("no rows")
				}
				plain, err := adaptertest.Call(context.Background(), unread, params, args)
				if err != nil {
					t.Fatal(err)
				}
				l := resultbuf.NewPool().Lease()
				lent, err := adaptertest.Call(resultbuf.With(context.Background(), l), unread, params, args)
				if err != nil {
					t.Fatal(err)
				}
				for _, out := range []struct {
					name string
					text string
					vars map[string]any
				}{{"without variables", plain.Text, plain.Vars}, {"lent", lent.Text, lent.Vars}} {
					if out.text != want.Text {
						t.Errorf("%s: text of %d bytes, want %d: %.100q", out.name, len(out.text), len(want.Text), out.text)
					}
					if out.vars != nil {
						t.Errorf("%s: variables nothing reads: %v", out.name, out.vars)
					}
				}
				inLent := l.Lent(unsafe.Slice(unsafe.StringData(lent.Text), len(lent.Text)))
				if inLent != tc.lent {
					t.Errorf("the text is in a lent buffer: %v, want %v", inLent, tc.lent)
				}
			})
		}
		t.Run("structured", func(t *testing.T) {
			src := db.databaseBlock("") + sqlBlock(query)
			h := adaptertest.MustCompile(t, New(), "sql", adaptertest.Config{Src: src, Params: params, VarsUnread: true})
			h.(*handler).structured = true // as for a tool with an output_schema
			out, err := adaptertest.Call(resultbuf.With(context.Background(), resultbuf.NewPool().Lease()), h, params, map[string]any{"n": float64(300)})
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := out.Structured["rows"].([]any); len(r) != 300 || out.Structured["row_count"] != int64(300) {
				t.Errorf("structured: %d rows, row_count %v", len(r), out.Structured["row_count"])
			}
		})
	})
}
