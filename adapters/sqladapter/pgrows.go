package sqladapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/resultbuf"
)

// On PostgreSQL the text-only path (rawrows.go) reads rows from pgx
// itself, on the connection database/sql holds (conn.Raw): pgx's
// database/sql driver turns every text into a new string before
// database/sql sees it, where pgx's own rows are views of its read
// buffer. The query runs as the driver runs it (stdlib.Conn.QueryContext:
// the same result formats, the same arguments, the same context, inside
// the transaction the call opened on the connection), and each column is
// decoded as the driver decodes it (stdlib.Rows.Next), except the ones
// whose value is their bytes: text (TextCodec: text, varchar, bpchar,
// name, unknown) and binary bytea, read where they lie.

// pgResultFormats are the result formats pgx's database/sql driver asks
// for (databaseSQLResultFormats in pgx's stdlib): binary for these types,
// text for the others.
var pgResultFormats = pgx.QueryResultFormatsByOID{
	pgtype.BoolOID:        1,
	pgtype.ByteaOID:       1,
	pgtype.CIDOID:         1,
	pgtype.DateOID:        1,
	pgtype.Float4OID:      1,
	pgtype.Float8OID:      1,
	pgtype.Int2OID:        1,
	pgtype.Int4OID:        1,
	pgtype.Int8OID:        1,
	pgtype.OIDOID:         1,
	pgtype.TimestampOID:   1,
	pgtype.TimestamptzOID: 1,
	pgtype.XIDOID:         1,
}

// queryPGText runs a text-only tool's query on conn through pgx and
// builds its text as collectText does.
func (h *handler) queryPGText(ctx context.Context, conn *sql.Conn, query string, args []any, stop func(), bufs *resultbuf.Lease) (*adapter.Output, error) {
	var out *adapter.Output
	var err error
	raw := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("unexpected PostgreSQL driver connection %T", dc)
		}
		out, err = h.collectPG(ctx, c.Conn(), query, args, stop, bufs)
		return nil // an error of the query is not one of the connection's
	})
	if raw != nil {
		return nil, raw
	}
	return out, err
}

func (h *handler) collectPG(ctx context.Context, pc *pgx.Conn, query string, args []any, stop func(), bufs *resultbuf.Lease) (*adapter.Output, error) {
	if pc.IsClosed() {
		return nil, driver.ErrBadConn
	}
	rows, err := pc.Query(ctx, query, append([]any{pgResultFormats}, args...)...)
	if err != nil {
		if pgconn.SafeToRetry(err) {
			return nil, driver.ErrBadConn
		}
		return nil, err
	}
	defer rows.Close()
	// The columns are known once the first row is read (as in stdlib).
	more := rows.Next()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	fields := rows.FieldDescriptions()
	if len(fields) == 0 {
		// A statement that returned no result set after all.
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return h.written(nil), nil
	}
	m := pc.TypeMap()
	names := make([]string, len(fields))
	kinds := make([]colKind, len(fields))
	for i, fd := range fields {
		names[i] = fd.Name
		kinds[i] = columnKind(h.dialect, pgTypeName(m, fd.DataTypeOID))
	}
	r := &pgRawRows{rows: rows, first: true, more: more, funcs: pgValueFuncs(m, fields), vals: make([]any, len(fields))}
	return h.collectText(r, uniqueNames(names), kinds, stop, bufs)
}

// pgTypeName is a column's type name as stdlib.Rows reports it
// (ColumnTypeDatabaseTypeName).
func pgTypeName(m *pgtype.Map, oid uint32) string {
	if dt, ok := m.TypeForOID(oid); ok {
		return strings.ToUpper(dt.Name)
	}
	return strconv.FormatInt(int64(oid), 10)
}

type pgValueFunc func(src []byte) (any, error)

// pgRawRows reads pgx's rows; the first was read to learn the columns.
type pgRawRows struct {
	rows  pgx.Rows
	first bool
	more  bool
	funcs []pgValueFunc
	vals  []any
}

func (r *pgRawRows) next() bool {
	if r.first {
		r.first = false
		return r.more
	}
	return r.rows.Next()
}

func (r *pgRawRows) values() ([]any, error) {
	for i, rv := range r.rows.RawValues() {
		if rv == nil {
			r.vals[i] = nil
			continue
		}
		v, err := r.funcs[i](rv)
		if err != nil {
			return nil, fmt.Errorf("convert field %d failed: %w", i, err)
		}
		r.vals[i] = v
	}
	return r.vals, nil
}

func (r *pgRawRows) err() error { return r.rows.Err() }

func (r *pgRawRows) close() error {
	r.rows.Close()
	return r.rows.Err()
}

// pgValueFuncs decode each column as stdlib.Rows.Next does
// (initValueFuncs in pgx's stdlib), but for the columns whose value is
// their bytes, which it returns as views: a string over a text, the
// bytes of a binary bytea.
func pgValueFuncs(m *pgtype.Map, fields []pgconn.FieldDescription) []pgValueFunc {
	funcs := make([]pgValueFunc, len(fields))
	for i, fd := range fields {
		oid, format := fd.DataTypeOID, fd.Format
		switch oid {
		case pgtype.BoolOID:
			var d bool
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return d, err
			}
		case pgtype.ByteaOID:
			if format == pgx.BinaryFormatCode {
				// bytea's binary format is its bytes (the scan copies them).
				funcs[i] = func(src []byte) (any, error) { return src, nil }
				continue
			}
			var d []byte
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return d, err
			}
		case pgtype.CIDOID, pgtype.OIDOID, pgtype.XIDOID:
			var d pgtype.Uint32
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				if err := plan.Scan(src, &d); err != nil {
					return nil, err
				}
				return d.Value()
			}
		case pgtype.DateOID:
			var d pgtype.Date
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				if err := plan.Scan(src, &d); err != nil {
					return nil, err
				}
				return d.Value()
			}
		case pgtype.Float4OID:
			var d float32
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return float64(d), err
			}
		case pgtype.Float8OID:
			var d float64
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return d, err
			}
		case pgtype.Int2OID:
			var d int16
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return int64(d), err
			}
		case pgtype.Int4OID:
			var d int32
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return int64(d), err
			}
		case pgtype.Int8OID:
			var d int64
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return d, err
			}
		case pgtype.JSONOID, pgtype.JSONBOID, pgtype.XMLOID:
			var d []byte
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				if err := plan.Scan(src, &d); err != nil {
					return nil, err
				}
				return d, nil
			}
		case pgtype.TimestampOID:
			var d pgtype.Timestamp
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				if err := plan.Scan(src, &d); err != nil {
					return nil, err
				}
				return d.Value()
			}
		case pgtype.TimestamptzOID:
			var d pgtype.Timestamptz
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				if err := plan.Scan(src, &d); err != nil {
					return nil, err
				}
				return d.Value()
			}
		default:
			if t, ok := m.TypeForOID(oid); ok {
				if _, text := t.Codec.(pgtype.TextCodec); text {
					// A text's value is its bytes, in either format.
					funcs[i] = func(src []byte) (any, error) {
						return unsafe.String(unsafe.SliceData(src), len(src)), nil
					}
					continue
				}
			}
			var d string
			plan := m.PlanScan(oid, format, &d)
			funcs[i] = func(src []byte) (any, error) {
				err := plan.Scan(src, &d)
				return d, err
			}
		}
	}
	return funcs
}
