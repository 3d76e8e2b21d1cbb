package sqladapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strconv"
	"time"
)

// MySQL has no cancel request: when a context ends, go-sql-driver closes the
// socket, and the server runs the query on until it next writes to the
// client (which, for a long aggregate, is at the end). So mcpd remembers
// each connection's thread id and, when a call's context ends while it
// holds the connection, sends KILL <id> on a separate connection. KILL
// CONNECTION, not KILL QUERY: a KILL QUERY that reaches the server before
// the query has started (a loaded server, a context that ends as the query
// is sent) hits nothing, and the query then runs to its end, for hours; a
// killed connection runs nothing more, and it is never pooled again anyway.

// mysqlDriverConn is every interface go-sql-driver's connection implements;
// the wrapper forwards them all so that database/sql sees no difference.
type mysqlDriverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.Pinger
	driver.NamedValueChecker
	driver.SessionResetter
	driver.Validator
}

// mysqlConn is a driver connection that knows its server thread id.
type mysqlConn struct {
	mysqlDriverConn
	id       uint64
	readOnly bool // of the read-only pool
	// pendingReset clears the caller's session variables that a call set
	// (see identity.go); "" once that call reset them itself. Only the
	// call holding the connection touches it.
	pendingReset string
	// identityStmts are the statements that set callers' variables,
	// prepared once per connection (execSet): with client-side
	// interpolation off, each call would otherwise prepare, run and close
	// the statement, three round trips instead of one.
	identityStmts map[string]driver.Stmt
}

// maxIdentityStmts bounds identityStmts: there is one text per identity
// block (and tool that adds to it), so it is rarely reached; when it is,
// the cache starts over.
const maxIdentityStmts = 16

// execSet runs query (a SET of the caller's variables) with args through
// a statement prepared once on this connection. (The server frees a
// connection's statements when it closes.)
func (c *mysqlConn) execSet(ctx context.Context, query string, args []any) error {
	st, ok := c.identityStmts[query]
	if !ok {
		var err error
		if st, err = c.PrepareContext(ctx, query); err != nil {
			return err
		}
		if c.identityStmts == nil || len(c.identityStmts) >= maxIdentityStmts {
			c.closeIdentityStmts()
			c.identityStmts = map[string]driver.Stmt{}
		}
		c.identityStmts[query] = st
	}
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	_, err := st.(driver.StmtExecContext).ExecContext(ctx, named)
	if err != nil {
		delete(c.identityStmts, query)
		st.Close()
	}
	return err
}

func (c *mysqlConn) closeIdentityStmts() {
	for q, st := range c.identityStmts {
		st.Close()
		delete(c.identityStmts, q)
	}
}

// ResetSession runs before database/sql hands a pooled connection to the
// next call. On the read-only pool it makes the session read-only again:
// the previous call may have run SET SESSION TRANSACTION READ WRITE (the
// load-time check refuses SET, but not a stored procedure that runs it),
// and the next read-only call must not be able to write. Any failure
// discards the connection (database/sql ignores other errors here).
func (c *mysqlConn) ResetSession(ctx context.Context) error {
	if err := c.mysqlDriverConn.ResetSession(ctx); err != nil {
		return err
	}
	if c.readOnly {
		if _, err := c.ExecContext(ctx, setReadOnly, nil); err != nil {
			return driver.ErrBadConn
		}
	}
	if c.pendingReset != "" {
		// The call that set the caller's variables did not clear them:
		// the next call must not run with them.
		if _, err := c.ExecContext(ctx, c.pendingReset, nil); err != nil {
			return driver.ErrBadConn
		}
		c.pendingReset = ""
	}
	return nil
}

// setReadOnly makes a MySQL session read-only. (A READ ONLY transaction
// is not enough in MySQL: DDL commits it implicitly and then runs.)
const setReadOnly = "SET SESSION TRANSACTION READ ONLY"

// mysqlConnector asks each new connection for its thread id and, for the
// read-only pool, makes the session read-only. (A READ ONLY transaction is
// not enough in MySQL: DDL commits it implicitly and then runs.)
type mysqlConnector struct {
	driver.Connector
	readOnly bool
}

func (c mysqlConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	full, ok := dc.(mysqlDriverConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("unexpected MySQL driver connection %T", dc)
	}
	if c.readOnly {
		if _, err := full.ExecContext(ctx, setReadOnly, nil); err != nil {
			dc.Close()
			return nil, err
		}
	}
	id, err := connectionID(ctx, full)
	if err != nil {
		dc.Close()
		return nil, err
	}
	return &mysqlConn{mysqlDriverConn: full, id: id, readOnly: c.readOnly}, nil
}

func connectionID(ctx context.Context, c driver.QueryerContext) (uint64, error) {
	rows, err := c.QueryContext(ctx, "SELECT CONNECTION_ID()", nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			err = fmt.Errorf("CONNECTION_ID() returned no row")
		}
		return 0, err
	}
	switch v := dest[0].(type) {
	case int64:
		return uint64(v), nil
	case uint64:
		return v, nil
	case []byte:
		return strconv.ParseUint(string(v), 10, 64)
	}
	return 0, fmt.Errorf("CONNECTION_ID() returned %T", dest[0])
}

// killOnCancel arranges for the query running on conn to be killed on the
// server when ctx ends. The returned stop reports false when the kill was
// started: the caller must then discard the connection rather than pool
// it, so that a late KILL cannot hit the next query that uses it.
func (b *backend) killOnCancel(ctx context.Context, conn *sql.Conn) (stop func() bool) {
	var id uint64
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*mysqlConn); ok {
			id = c.id
		}
		return nil
	})
	if id == 0 {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() { b.killQuery(id) })
}

func (b *backend) killQuery(id uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := b.kill.Connect(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	if ex, ok := c.(driver.ExecerContext); ok {
		ex.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatUint(id, 10), nil)
	}
}
