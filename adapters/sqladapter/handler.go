package sqladapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// handler runs one sql tool. It is built once at load time and is
// immutable: safe for concurrent calls.
type handler struct {
	be       *backend
	query    *compiledQuery
	binds    []bind                    // one per driver placeholder
	extra    map[string]hcl.Expression // the block's params = { ... }
	slots    []slot                    // the query's {{param}}s, by name
	readOnly bool
	exec     bool // a statement without a result set: Exec, not Query
	insert   bool // an INSERT or REPLACE: report last_insert_id
	maxRows  int
	maxBytes int // bytes of values kept before the result is cut
	// structured: the tool declares an output_schema, so its results carry
	// the structured result; otherwise the rows' JSON text alone says it
	// all, and the model does not read the same rows twice.
	structured bool
	// readsVars: the tool has a result or logs block, which reads the
	// output's variables (ToolBlock.ReadsVars); without one, and without
	// structured, a call leaves them out.
	readsVars bool
	timeout   time.Duration
	dialect   dialect
	text      string // the query as written, for spans (db.query.text)
	// identity is what each call sets in its session from the caller: the
	// database's identity block with the tool's over it; nil: nothing.
	identity *identity
}

// bind is the param bound to one driver placeholder.
type bind struct {
	name string
	typ  string         // the param's JSON type
	expr hcl.Expression // set for a name of the block's params attribute
}

// vars are the variables a sql tool's result block sees.
var vars = []string{"rows", "columns", "row_count", "truncated", "rows_affected", "last_insert_id"}

func (h *handler) Vars() []string { return slices.Clone(vars) }

// Traits: a call evaluates only the block's params expressions (the
// other values come from the arguments as they are); it runs in a
// read-only transaction or connection as read_only says (true by
// default); it runs as the caller when an identity sets its session from
// the caller's claims; its result is capped at max_bytes.
func (h *handler) Traits() adapter.Traits {
	readsEval := false
	for _, b := range h.binds {
		if b.expr != nil {
			readsEval = true
			break
		}
	}
	readOnly := h.readOnly
	return adapter.Traits{
		ReadsEval:      readsEval,
		ReadOnly:       &readOnly,
		ActsAsCaller:   h.identity != nil,
		MaxOutputBytes: int64(h.maxBytes),
	}
}

// querier is what runs a statement: a connection or a transaction on it.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (h *handler) Call(parent context.Context, req *adapter.Request) (*adapter.Output, error) {
	query, err := h.sql(req.Args)
	if err != nil {
		return nil, err
	}
	args := make([]any, len(h.binds))
	for i, b := range h.binds {
		if b.expr == nil {
			args[i] = bindValue(req.Args[b.name], b.typ)
			continue
		}
		v, diags := b.expr.Value(req.Eval)
		if diags.HasErrors() {
			return nil, fmt.Errorf("params.%s: %s", b.name, diags.Error())
		}
		g, err := adapter.ToGo(v)
		if err != nil {
			return nil, fmt.Errorf("params.%s: %v", b.name, err)
		}
		args[i] = bindValue(g, "")
	}
	var sess *session
	if h.identity != nil {
		// Read before a connection is taken: a caller without the values
		// costs the database nothing.
		if sess, err = h.identity.read(parent, h.be.cfg.name); err != nil {
			return nil, err
		}
		if adapter.Annotating(parent) {
			adapter.Annotate(parent, sess.attributes()...)
		}
	}
	ctx, cancel := context.WithTimeout(parent, h.timeout)
	defer cancel()
	var out *adapter.Output
	if w := h.be.workers; w != nil {
		w.do(func() { out, err = h.run(ctx, query, args, sess, req.Buffers) })
	} else {
		out, err = h.run(ctx, query, args, sess, req.Buffers)
	}
	if err != nil {
		return nil, h.explain(parent, ctx, err)
	}
	return out, nil
}

// slot is a {{param}} of the query and the identifiers it may become.
type slot struct {
	param   string
	allowed []string
}

// sql fills the identifier slots with the arguments, each checked against
// the tool's `identifiers` list.
func (h *handler) sql(args map[string]any) (string, error) {
	if len(h.slots) == 0 {
		return h.query.sql(h.dialect, nil), nil
	}
	chosen := make(map[string]string, len(h.slots))
	for _, s := range h.slots {
		v, ok := args[s.param].(string)
		if !ok || !slices.Contains(s.allowed, v) {
			got := "nothing"
			if args[s.param] != nil {
				j, _ := json.Marshal(args[s.param])
				got = truncate(string(j), 80)
			}
			return "", fmt.Errorf("argument %q must be one of %s (got %s)", s.param, strings.Join(s.allowed, ", "), got)
		}
		chosen[s.param] = v
	}
	return h.query.sql(h.dialect, func(name string) string { return chosen[name] }), nil
}

func (h *handler) run(ctx context.Context, query string, args []any, sess *session, bufs *resultbuf.Lease) (*adapter.Output, error) {
	conn, err := h.be.conn(ctx, h.readOnly)
	if err != nil {
		return nil, err
	}
	// qctx is the statement's. On PostgreSQL and MySQL, for read-only tools,
	// it is cancelled to stop a query whose result was cut at max_bytes:
	// closing the rows would otherwise read the rest of the result from the
	// server (MySQL has no other way to stop it). Not for tools that write:
	// cancelling would undo a write after it was reported. SQLite stops
	// when the statement is closed.
	qctx, stop := ctx, func() {}
	if h.readOnly && h.dialect != sqlite {
		var cancel context.CancelFunc
		qctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop = cancel
	}
	stopKill := func() bool { return true }
	if h.be.kill != nil {
		stopKill = h.be.killOnCancel(qctx, conn)
	}
	defer func() {
		if !stopKill() {
			// A KILL is on its way: never pool this connection.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}()

	if h.readOnly && h.dialect == sqlite {
		if err := limitSQLiteValues(conn, h.maxBytes); err != nil {
			return nil, err
		}
	}
	var q querier = conn
	var tx *sql.Tx
	if h.dialect == postgres && (h.readOnly || sess != nil) {
		// PostgreSQL refuses every write, DDL included, in a read-only
		// transaction; nothing is committed, so it is rolled back. The
		// caller's role and settings are LOCAL to the transaction, so a
		// tool that writes with an identity runs in one too, committed
		// once its statement succeeded.
		if tx, err = conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: h.readOnly}); err != nil {
			return nil, err
		}
		if sess != nil {
			// Runs after the rollback below: a connection whose
			// transaction did not end is closed, not pooled.
			defer pgIdle(conn)
		}
		defer tx.Rollback()
		q = tx
	}
	if sess != nil {
		if h.dialect == mysql {
			sess.mysqlArm(conn)
			defer sess.mysqlReset(ctx, conn)
		}
		if err := sess.apply(ctx, q); err != nil {
			return nil, err
		}
	}
	// A read-only statement on PostgreSQL always goes through Query: pgx
	// sends a statement without arguments by the simple protocol, which
	// runs every statement of a "a; b" text, and a COMMIT among them would
	// end the READ ONLY transaction. Query uses the extended protocol,
	// where the server runs exactly one statement.
	if h.exec && !(h.readOnly && h.dialect == postgres) {
		res, err := q.ExecContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		if err := h.commit(tx); err != nil {
			return nil, err
		}
		return h.written(res), nil
	}
	if h.dialect == postgres && !h.structured && !h.readsVars {
		// Only the text is read: from pgx's buffer (pgrows.go).
		out, err := h.queryPGText(qctx, conn, query, args, stop, bufs)
		if err != nil {
			return nil, err
		}
		if err := h.commit(tx); err != nil {
			return nil, err
		}
		return out, nil
	}
	rows, err := q.QueryContext(qctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out, err := h.collect(rows, stop, bufs)
	if err != nil {
		return nil, err
	}
	if tx != nil && !h.readOnly {
		rows.Close()
		if err := h.commit(tx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commit commits the transaction of a tool that writes (one with an
// identity on PostgreSQL); a read-only tool's is rolled back.
func (h *handler) commit(tx *sql.Tx) error {
	if tx == nil || h.readOnly {
		return nil
	}
	return tx.Commit()
}

// collect reads at most max_rows rows, and one more to know whether the
// result was cut, and stops once the values read reach max_bytes: then the
// row that crossed the limit is dropped, unless it is the first, whose long
// values are cut to fit. stop is called before the rest of the result is
// discarded. The text is built in buffers of bufs when it grows large.
func (h *handler) collect(rows *sql.Rows, stop func(), bufs *resultbuf.Lease) (*adapter.Output, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	if len(types) == 0 {
		// A statement that returned no result set after all (a write
		// through a CTE, say): nothing to show but that it ran.
		if err := rows.Close(); err != nil {
			return nil, err
		}
		return h.written(nil), nil
	}
	names := columnNames(types)
	kinds := make([]colKind, len(types))
	for i, t := range types {
		kinds[i] = columnKind(h.dialect, t.DatabaseTypeName())
	}
	// The rows as values, for the structured result and the result
	// block's variables; a tool with neither reads only the text, built
	// from the driver's values where they lie (rawrows.go).
	keepRows := h.structured || h.readsVars
	if !keepRows {
		return h.collectText(newSQLRawRows(rows, len(types)), names, kinds, stop, bufs)
	}
	dest := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	vals := make([]any, len(types)) // one row's values, in column order
	out := make([]any, 0, min(h.maxRows, 16))
	nrows := 0 // rows kept
	text := make([]byte, 0, 256)
	text = append(text, '[')
	truncated, overBytes := false, false
	used := 0 // bytes of the rows kept
	for rows.Next() {
		if nrows == h.maxRows {
			truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		size, cut := 0, false
		for i, name := range names {
			size += len(name)
			v, n, c := fitValue(dest[i], kinds[i], h.maxBytes-used-size)
			vals[i], size, cut = v, size+n, cut || c
			dest[i] = nil // a large value is not kept alive by the next Scan
		}
		keep := !(cut || used+size > h.maxBytes)
		if !keep {
			truncated, overBytes = true, true
			stop()
		}
		if keep || nrows == 0 { // the first row is cut to fit: better than nothing
			row := make(map[string]any, len(names))
			for i, name := range names {
				row[name] = vals[i]
			}
			out = append(out, row)
			if !h.structured {
				if nrows > 0 {
					text = append(text, ',')
				}
				text = appendRow(h.growText(text, size, bufs), names, vals)
			}
			nrows++
		}
		if !keep {
			break
		}
		used += size
	}
	if truncated {
		rows.Close() // discards the rest; its error does not spoil the rows we have
	} else if err := rows.Err(); err != nil {
		return nil, err
	}
	columns := make([]any, len(names))
	for i, n := range names {
		columns[i] = n
	}
	count := int64(nrows)
	o := &adapter.Output{Vars: map[string]any{
		"columns": columns, "rows": out, "row_count": count, "truncated": truncated,
		"rows_affected": nil, "last_insert_id": nil,
	}}
	note := truncationNote(nrows, truncated, overBytes, h.maxBytes)
	if h.structured {
		// The text is then the structured result's JSON, as the MCP spec
		// asks of a tool with an output schema: the engine writes it, unless
		// the note of a cut result follows it.
		o.Structured = map[string]any{"columns": columns, "rows": out, "row_count": count, "truncated": truncated}
		if note != "" {
			j, err := json.Marshal(o.Structured)
			if err != nil {
				return nil, err
			}
			o.Text = string(j) + "\n" + note
		}
		return o, nil
	}
	text = append(text, ']')
	if note != "" {
		text = append(append(text, '\n'), note...)
	}
	o.Text = textString(text, bufs)
	return o, nil
}

// growText makes room for a row of about n bytes of values in text.
// append alone grows a large slice by a quarter at a time, which for a text
// of 1 MiB allocates 5 MiB on the way; doubling allocates 2.
//
// With a lease (bufs), a text that outgrows the small sizes moves to a
// lent buffer of about the largest text max_bytes allows (the values,
// and a sixteenth for names, quotes and commas), and from there by a
// quarter at a time, each outgrown lent buffer given back at once: the
// text is then built in one buffer, reused by the next call, where
// doubling would leave the text's size in garbage behind it.
func (h *handler) growText(text []byte, n int, bufs *resultbuf.Lease) []byte {
	room := 2*n + 64 // quotes, escapes, names
	need := len(text) + room
	if need <= cap(text) {
		return text
	}
	want := max(2*cap(text), need)
	if bufs != nil && want >= resultbuf.MinPooled {
		if bufs.Lent(text) {
			want = max(need, cap(text)+cap(text)/4)
		} else if most := h.maxBytes + h.maxBytes/16; most <= resultbuf.MaxPooled {
			want = max(need+need/4, most)
		}
		return bufs.Grow(text, room, want)
	}
	b := make([]byte, len(text), want)
	copy(b, text)
	return b
}

// written is the output of a statement without a result set.
func (h *handler) written(res sql.Result) *adapter.Output {
	var affected, lastID any
	text := "The statement ran."
	if res != nil {
		if n, err := res.RowsAffected(); err == nil {
			affected = n
			text = plural(int(n), "row") + " affected."
			if h.insert && n > 0 {
				if id, err := res.LastInsertId(); err == nil {
					lastID = id
					text += " Last insert id: " + strconv.FormatInt(id, 10) + "."
				}
			}
		}
	}
	o := &adapter.Output{
		Text: text,
		Vars: map[string]any{
			"columns": []any{}, "rows": []any{}, "row_count": int64(0), "truncated": false,
			"rows_affected": affected, "last_insert_id": lastID,
		},
	}
	if h.structured {
		o.Text = ""
		o.Structured = map[string]any{"rows_affected": affected}
		if lastID != nil {
			o.Structured["last_insert_id"] = lastID
		}
	}
	return o
}

// columnNames are the result's column names, with duplicates (SELECT a.id,
// b.id) made unique as id, id_2, id_3 so that no value is lost in a row
// object.
func columnNames(types []*sql.ColumnType) []string {
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.Name()
	}
	return uniqueNames(names)
}

// uniqueNames makes the names unique in place, as columnNames does.
func uniqueNames(names []string) []string {
	seen := make(map[string]bool, len(names))
	for i, orig := range names {
		name := orig
		for n := 2; seen[name]; n++ {
			name = orig + "_" + strconv.Itoa(n)
		}
		seen[name] = true
		names[i] = name
	}
	return names
}

// bindValue converts one argument for the driver. Whole numbers of integer
// (or untyped) params are bound as int64, so that the database sees 42 and
// not 42.0; arrays and objects are bound as JSON text, for the database's
// JSON functions to unpack.
func bindValue(v any, typ string) any {
	switch x := v.(type) {
	case float64:
		if typ != "number" && x == math.Trunc(x) && math.Abs(x) <= maxSafeInt {
			return int64(x)
		}
		return x
	case []any, map[string]any:
		j, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(j)
	case int64:
		if typ == "number" {
			return float64(x) // arguments carry whole numbers as int64; a number param is still a double
		}
		return x
	case nil, string, bool:
		return x
	case int:
		return int64(x)
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

// truncate cuts s to at most n characters.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
