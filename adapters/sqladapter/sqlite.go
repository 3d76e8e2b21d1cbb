package sqladapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	sqlite3 "modernc.org/sqlite"
)

// sqliteReadOnly opens the connections of SQLite's read-only pool. Each is
// opened with PRAGMA query_only = 1 (sqliteDSN), which SQL could turn off
// again, and gets an authorizer that SQL cannot remove: SQLite then
// refuses, when it compiles a statement, what would change the connection
// for the next call or act outside the database file:
//
//   - a PRAGMA with a value (query_only = 0, journal_mode = ...), except
//     the schema reads that take a name (table_info(t), ...), and the
//     pragmas that act without one (optimize, wal_checkpoint, ...);
//   - ATTACH and DETACH (ATTACH creates the file it names; VACUUM INTO
//     attaches its target first, so it is refused too);
//   - load_extension().
//
// The refusal is SQLITE_AUTH ("not authorized"), reported to the model as
// the read-only tool's refusal. The authorizer runs when a statement is
// compiled, so the statements these connections keep prepared
// (stmtCacheConn) were all checked.
type sqliteReadOnly struct{ driver.Connector }

func (c sqliteReadOnly) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	reg, ok := dc.(sqlite3.AuthorizerRegisterer)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("unexpected SQLite driver connection %T", dc)
	}
	if err := reg.RegisterAuthorizer(readOnlyAuthorizer); err != nil {
		dc.Close()
		return nil, err
	}
	cc, err := newStmtCacheConn(dc)
	if err != nil {
		dc.Close()
		return nil, err
	}
	return cc, nil
}

func readOnlyAuthorizer(action sqlite3.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite3.AuthorizerReturnCode {
	switch action {
	case sqlite3.AuthAttach, sqlite3.AuthDetach:
		return sqlite3.AuthorizerDeny
	case sqlite3.AuthPragma:
		// arg1 is the pragma as written, arg2 its value or argument ("" for none).
		name := strings.ToLower(arg1)
		if (arg2 != "" && !pragmaArgReads[name]) || pragmaActions[name] {
			return sqlite3.AuthorizerDeny
		}
	case sqlite3.AuthFunction:
		if strings.EqualFold(arg2, "load_extension") {
			return sqlite3.AuthorizerDeny
		}
	}
	return sqlite3.AuthorizerOK
}

// sqliteMaxValue is the largest string or blob a read-only SQLite
// statement may build or read, unless the tool's max_bytes is larger. SQLite
// allows 1 GB, and builds a value whole before the driver copies it (SELECT
// hex(zeroblob(300000000)) took 600 MB twice); a value over max_bytes is
// cut anyway.
const sqliteMaxValue = 16 << 20

// sqliteLimitLength is SQLITE_LIMIT_LENGTH for sqlite3_limit.
const sqliteLimitLength = 0

// limitSQLiteValues sets the largest value the statement about to run on
// conn may build or read: max(max_bytes, sqliteMaxValue). It is a C call
// on the connection, no SQL, so it is set on every call (max_bytes is the
// tool's, the connection the pool's).
func limitSQLiteValues(conn *sql.Conn, maxBytes int) error {
	_, err := sqlite3.Limit(conn, sqliteLimitLength, max(maxBytes, sqliteMaxValue))
	return err
}
