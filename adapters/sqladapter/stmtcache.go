package sqladapter

import (
	"context"
	"database/sql/driver"
	"errors"
)

// maxCachedStmts bounds the statements one connection keeps prepared. A
// pool serves every read-only tool of its database, each with one SQL text
// (more with {{identifier}} slots), so this is rarely reached; when it is,
// the cache starts over.
const maxCachedStmts = 64

// stmtCacheConn is a SQLite connection of the read-only pool that keeps
// the statements it runs prepared, by SQL text. Preparing (SQLite's parser
// and code generator) was a third of a point query's time in the driver;
// a prepared statement is reset after each use and prepared again by
// SQLite itself when the schema changes.
//
// It serves QueryContext only: read-only tools run every statement
// through Query (handler.run), and everything else (Exec, transactions,
// Prepare) goes to the connection as it is. A call holds its connection
// (sql.Conn) for one statement and closes the statement's rows, which
// resets it, before it lets the connection go, so no two queries of one
// text are ever open at once on a connection and one prepared statement
// per text is enough. (Two open queries of the same text on one
// connection would share it: the second would reset the first.)
//
// modernc's helpers that take a *sql.Conn (sqlite3.Limit) reach the
// driver's connection through Unwrap.
type stmtCacheConn struct {
	driver.Conn
	stmts map[string]driver.Stmt
}

// connInterfaces is what database/sql and mcpd use of a SQLite connection
// beyond driver.Conn; modernc's connections implement all of it.
type connInterfaces interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.QueryerContext
	driver.ExecerContext
	driver.ConnBeginTx
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

func newStmtCacheConn(c driver.Conn) (driver.Conn, error) {
	if _, ok := c.(connInterfaces); !ok {
		return nil, errors.New("the SQLite driver's connection lacks an interface the statement cache needs")
	}
	return &stmtCacheConn{Conn: c, stmts: map[string]driver.Stmt{}}, nil
}

func (c *stmtCacheConn) inner() connInterfaces { return c.Conn.(connInterfaces) }

// Unwrap is the driver's connection (see modernc's Limit).
func (c *stmtCacheConn) Unwrap() driver.Conn { return c.Conn }

func (c *stmtCacheConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, ok := c.stmts[query]
	if !ok {
		var err error
		if s, err = c.inner().PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		if len(c.stmts) >= maxCachedStmts {
			c.closeStmts()
		}
		c.stmts[query] = s
	}
	rows, err := s.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		// The statement is reset after a failure; dropping it anyway
		// costs one prepare and leaves nothing to reason about.
		delete(c.stmts, query)
		s.Close()
		return nil, err
	}
	return rows, nil
}

func (c *stmtCacheConn) closeStmts() {
	for q, s := range c.stmts {
		s.Close()
		delete(c.stmts, q)
	}
}

func (c *stmtCacheConn) Close() error {
	c.closeStmts()
	return c.Conn.Close()
}

func (c *stmtCacheConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.inner().PrepareContext(ctx, query)
}

func (c *stmtCacheConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.inner().ExecContext(ctx, query, args)
}

func (c *stmtCacheConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.inner().BeginTx(ctx, opts)
}

func (c *stmtCacheConn) ResetSession(ctx context.Context) error { return c.inner().ResetSession(ctx) }

func (c *stmtCacheConn) IsValid() bool { return c.inner().IsValid() }

func (c *stmtCacheConn) Ping(ctx context.Context) error { return c.inner().Ping(ctx) }
