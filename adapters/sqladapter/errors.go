package sqladapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "modernc.org/sqlite"
)

// unavailableError is a failure to get a connection: the database is down,
// unreachable, or refuses the credentials.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// seedError is a failure of the SQLite seed script.
type seedError struct{ err error }

func (e *seedError) Error() string { return e.err.Error() }
func (e *seedError) Unwrap() error { return e.err }

// explain turns a failed call into the tool error the model sees: what went
// wrong in terms it can act on, never the DSN or its password.
func (h *handler) explain(parent, ctx context.Context, err error) error {
	cfg := h.be.cfg
	var msg string
	// hint is added after redaction: a SQLite dsn that is a bare path is
	// redacted whole, yet the file's path is what the operator must see.
	var hint string
	var unavailable *unavailableError
	var seed *seedError
	var ident *identityError
	switch {
	case parent.Err() != nil:
		msg = "the call was cancelled before the query finished"
	case errors.As(err, &unavailable):
		msg = fmt.Sprintf("database %q is unavailable: %s", cfg.name, connectReason(unavailable.err))
		if ctx.Err() != nil {
			msg = fmt.Sprintf("database %q is unavailable: connecting did not finish within the %s timeout", cfg.name, h.timeout)
		} else if cfg.sqliteFile != "" && sqliteCantOpen(unavailable.err) {
			hint = sqliteFileHint(cfg.sqliteFile)
		}
	case cfg.sqliteFile != "" && sqliteCantOpen(err):
		msg = fmt.Sprintf("database %q is unavailable: %s", cfg.name, driverMessage(err))
		hint = sqliteFileHint(cfg.sqliteFile)
	case ctx.Err() != nil:
		msg = fmt.Sprintf("the query did not finish within its %s timeout and was cancelled", h.timeout)
	case errors.As(err, &ident):
		msg = fmt.Sprintf("database %q could not run the call as its caller (%s): %s", cfg.name, ident.what, driverMessage(ident.err))
	case errors.As(err, &seed):
		msg = fmt.Sprintf("database %q could not be seeded: the seed script failed: %s", cfg.name, driverMessage(seed.err))
	case writeRefused(err):
		msg = "this tool is read-only: the database refused a write: " + driverMessage(err)
	case h.readOnly && sqliteTooBig(err):
		msg = fmt.Sprintf("the query failed: a value is larger than the %s a read-only tool may build or read on SQLite "+
			"(the larger of max_bytes and 16 MiB); build or select smaller values (length() measures one without reading it): %s", byteSize(max(h.maxBytes, sqliteMaxValue)), driverMessage(err))
	case h.readOnly && sqliteNotAuthorized(err):
		msg = "this tool is read-only: the database refused a statement that would change the connection or act outside the database " +
			"(a PRAGMA with a value, ATTACH, DETACH, VACUUM INTO, load_extension()): " + driverMessage(err)
	default:
		msg = "the query failed: " + driverMessage(err)
	}
	return errors.New(cfg.redact.String(msg) + hint)
}

// connectReason says why a connection failed without the driver's framing,
// which names the host, user and database of the DSN.
func connectReason(err error) string {
	var pgErr *pgconn.PgError
	var myErr *mysqldrv.MySQLError
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
	case errors.As(err, &myErr):
		return myErr.Message
	case errors.As(err, &dnsErr):
		return "the database host name does not resolve"
	case errors.As(err, &opErr):
		if opErr.Timeout() {
			return "connecting timed out"
		}
		return opErr.Err.Error() // e.g. "connect: connection refused"
	case errors.Is(err, context.DeadlineExceeded):
		return "connecting timed out"
	}
	return driverMessage(err)
}

// driverMessage is the database's own message for a failed statement.
func driverMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg := pgErr.Message
		if pgErr.Detail != "" {
			msg += " (" + strings.TrimSuffix(pgErr.Detail, ".") + ")"
		}
		if pgErr.Hint != "" {
			msg += "; hint: " + pgErr.Hint
		}
		return msg + " [SQLSTATE " + pgErr.Code + "]"
	}
	return err.Error()
}

// writeRefused reports the database refusing a write because the
// transaction or connection is read-only.
func writeRefused(err error) bool {
	var pgErr *pgconn.PgError
	var myErr *mysqldrv.MySQLError
	var liteErr *sqlite3.Error
	switch {
	case errors.As(err, &pgErr):
		return pgErr.Code == "25006" // read_only_sql_transaction
	case errors.As(err, &myErr):
		// ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION, ER_OPTION_PREVENTS_STATEMENT
		// (--read-only), ER_READ_ONLY_MODE
		return myErr.Number == 1792 || myErr.Number == 1290 || myErr.Number == 1836
	case errors.As(err, &liteErr):
		return liteErr.Code()&0xff == 8 // SQLITE_READONLY and its extended codes
	}
	return false
}

// sqliteNotAuthorized reports SQLite refusing a statement through the
// read-only pool's authorizer (sqlite.go): SQLITE_ERROR "not authorized"
// when a statement is compiled, SQLITE_AUTH when one SQLite runs inside
// another (VACUUM INTO's ATTACH).
func sqliteNotAuthorized(err error) bool {
	var liteErr *sqlite3.Error
	return errors.As(err, &liteErr) && (liteErr.Code()&0xff == 23 || strings.Contains(liteErr.Error(), "not authorized"))
}

// sqliteFileError is a failure to create the directory of a SQLite file.
type sqliteFileError struct{ err error }

func (e *sqliteFileError) Error() string { return e.err.Error() }
func (e *sqliteFileError) Unwrap() error { return e.err }

// sqliteCantOpen reports that SQLite could not open or create its file
// (SQLITE_CANTOPEN, whose message, "unable to open database file", names
// neither the file nor the reason) or that its directory could not be made.
func sqliteCantOpen(err error) bool {
	var liteErr *sqlite3.Error
	var fileErr *sqliteFileError
	return errors.As(err, &fileErr) || errors.As(err, &liteErr) && liteErr.Code()&0xff == 14
}

// sqliteFileHint names the file and where a writable one goes: the usual
// cause is a config directory mounted read-only, as in the container image.
func sqliteFileHint(file string) string {
	return fmt.Sprintf(" (the file is %s; mcpd must be able to create it and write in its directory: "+
		"point the dsn at a writable directory, e.g. dsn = \"file:${env(\"MCPD_DATA_DIR\", \".mcpd\")}/%s\"; "+
		"the container image sets MCPD_DATA_DIR=/var/lib/mcpd, a writable volume)", file, filepath.Base(file))
}

// sqliteTooBig reports SQLITE_TOOBIG: a value over the connection's
// SQLITE_LIMIT_LENGTH (limitSQLiteValues).
func sqliteTooBig(err error) bool {
	var liteErr *sqlite3.Error
	return errors.As(err, &liteErr) && liteErr.Code()&0xff == 18
}
