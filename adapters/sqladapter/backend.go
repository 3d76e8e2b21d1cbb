package sqladapter

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	sqlite3 "modernc.org/sqlite" // also registers the "sqlite" driver

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/redact"
)

// Defaults of the database block.
const (
	defaultMaxOpenConns    = 10
	defaultMaxIdleConns    = 5
	defaultConnMaxLifetime = 30 * time.Minute
	defaultConnMaxIdleTime = 5 * time.Minute
	defaultQueryTimeout    = 30 * time.Second
	// sqliteBusyTimeout is how long a SQLite connection waits for another
	// connection's lock (milliseconds) unless the dsn says otherwise.
	sqliteBusyTimeout = "5000"
	// sqliteBusyWait is sqliteBusyTimeout, for what mcpd retries itself;
	// sqliteBusy is SQLITE_BUSY, the primary result code.
	sqliteBusyWait = 5 * time.Second
	sqliteBusy     = 5
)

// dbConfig is one decoded `database` block: plain settings, no connection.
type dbConfig struct {
	name         string
	dialect      dialect
	dsn          string // a secret: never in a message or a log
	maxOpen      int
	maxIdle      int
	maxLifetime  time.Duration
	maxIdleTime  time.Duration
	queryTimeout time.Duration
	maxBytes     int              // the default of the database's tools
	seed         string           // sqlite: the script that fills a new database
	sqliteFile   string           // sqlite: the database file, for creating its directory
	redact       *redact.Redactor // the DSN and its password; nil changes nothing
	// remote are the span attributes of the database, from the DSN
	// (db.system.name, db.namespace, server.address, server.port).
	remote []adapter.Attribute
	// identity is what every call sets in the session from its caller
	// (identity.go); nil: nothing.
	identity *identity
	// dsnUnknown: the dsn reads an unset environment variable, which a load
	// for validation allows (and reports). Such a backend declares the
	// database, so that its tools are still checked, but has no pool.
	dsnUnknown bool
}

// Fingerprint hashes every setting, so that a reload that changes nothing
// keeps the live pool, and the DSN never appears in it.
func (c *dbConfig) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d\x00%s\x00%s\x00%s\x00%s\x00%d", c.dialect, c.dsn, c.maxOpen, c.maxIdle,
		c.maxLifetime, c.maxIdleTime, c.queryTimeout, c.seed, c.maxBytes)
	// The identity lives in the backend's settings, which a reload that
	// keeps the pool keeps too: a changed identity must open a new one.
	if id := c.identity; id != nil {
		if id.role != nil {
			fmt.Fprintf(h, "\x00role\x00%s", id.role)
		}
		for _, s := range id.settings {
			fmt.Fprintf(h, "\x00setting\x00%s\x00%s", s.name, s.value)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Open builds the pools. database/sql connects lazily, so nothing here
// touches the network or the database file.
func (c *dbConfig) Open() (adapter.Backend, error) {
	b := &backend{cfg: c, prepareLock: make(chan struct{}, 1)}
	if c.dsnUnknown {
		return b, nil
	}
	switch c.dialect {
	case postgres:
		pc, err := pgx.ParseConfig(c.dsn)
		if err != nil {
			return nil, fmt.Errorf("database %q: the dsn is not a valid PostgreSQL connection string", c.name)
		}
		// On timeout or cancellation, send PostgreSQL a cancel request and
		// keep the connection (pgx's default closes it, cancelling too,
		// but every timeout then costs a reconnect). The socket deadline
		// is the fallback for a server that does not answer.
		pc.BuildContextWatcherHandler = func(conn *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: time.Second}
		}
		b.db = stdlib.OpenDB(*pc)
	case mysql:
		mc, err := mysqlConfig(c.dsn)
		if err != nil {
			return nil, fmt.Errorf("database %q: the dsn is not a valid MySQL dsn", c.name)
		}
		conn, err := mysqldrv.NewConnector(mc)
		if err != nil {
			return nil, fmt.Errorf("database %q: %s", c.name, c.redact.String(err.Error()))
		}
		b.kill = conn
		b.db = sql.OpenDB(mysqlConnector{Connector: conn})
		b.ro = sql.OpenDB(mysqlConnector{Connector: conn, readOnly: true})
	case sqlite:
		rw, err := sql.Open("sqlite", sqliteDSN(c.dsn, false))
		if err != nil {
			return nil, fmt.Errorf("database %q: %s", c.name, c.redact.String(err.Error()))
		}
		roConn, err := sqlite3.NewConnector(sqliteDSN(c.dsn, true))
		if err != nil {
			rw.Close()
			return nil, fmt.Errorf("database %q: %s", c.name, c.redact.String(err.Error()))
		}
		b.db, b.ro = rw, sql.OpenDB(sqliteReadOnly{roConn})
		b.workers = newWorkers(2 * c.maxOpen) // both pools
	}
	for _, db := range []*sql.DB{b.db, b.ro} {
		if db != nil {
			db.SetMaxOpenConns(c.maxOpen)
			db.SetMaxIdleConns(c.maxIdle)
			db.SetConnMaxLifetime(c.maxLifetime)
			db.SetConnMaxIdleTime(c.maxIdleTime)
		}
	}
	return b, nil
}

// mysqlConfig parses a MySQL DSN and forces the settings mcpd relies on:
// times as time.Time, values bound by the server (never interpolated by
// the client), one statement per query, and no LOAD DATA LOCAL INFILE.
func mysqlConfig(dsn string) (*mysqldrv.Config, error) {
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.ParseTime = true
	cfg.MultiStatements = false
	cfg.InterpolateParams = false
	cfg.AllowAllFiles = false
	return cfg, nil
}

// backend is the live side of one database block.
type backend struct {
	cfg *dbConfig
	db  *sql.DB // tools that write; on postgres, every tool
	// ro is the pool of read-only tools on SQLite and MySQL: each of its
	// connections is made read-only when it opens (PRAGMA query_only; SET
	// SESSION TRANSACTION READ ONLY), so the database itself refuses
	// writes. No call can change that for the next: SQLite's connections
	// carry an authorizer that refuses PRAGMA writes and ATTACH
	// (sqliteReadOnly), and MySQL's are made read-only again on every
	// checkout (mysqlConn.ResetSession).
	// PostgreSQL needs no second pool: each read-only call runs in a
	// BEGIN READ ONLY transaction, which refuses DDL as well.
	ro *sql.DB
	// kill opens connections outside the pool for KILL CONNECTION (mysql).
	kill        driver.Connector
	prepared    atomic.Bool
	prepareLock chan struct{} // a mutex that a context can give up on
	// workers run SQLite's statements (see workers.go); nil for the
	// other databases, whose drivers need no deep stack.
	workers *workers
}

// errNoDSN is what a backend without a pool answers (dbConfig.dsnUnknown).
func (b *backend) errNoDSN() error {
	return fmt.Errorf("database %q has no dsn: an environment variable it reads is not set", b.cfg.name)
}

func (b *backend) Close() error {
	if b.workers != nil {
		b.workers.close()
	}
	if b.db == nil {
		return nil
	}
	err := b.db.Close()
	if b.ro != nil {
		if e := b.ro.Close(); err == nil {
			err = e
		}
	}
	return err
}

// conn returns a dedicated connection for one call: from the read-only pool
// for a read-only tool on SQLite and MySQL, from the main pool otherwise. Failing to
// get one is an unavailableError: the database is down or unreachable.
func (b *backend) conn(ctx context.Context, readOnly bool) (*sql.Conn, error) {
	if b.db == nil {
		return nil, b.errNoDSN()
	}
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	pool := b.db
	if readOnly && b.ro != nil {
		pool = b.ro
	}
	c, err := pool.Conn(ctx)
	if err != nil {
		return nil, &unavailableError{err}
	}
	return c, nil
}

// prepare runs once, on the first call that needs the database: for SQLite
// it creates the directory of the database file and runs the seed script
// when the database is empty. A failure is retried on the next call.
func (b *backend) prepare(ctx context.Context) error {
	if b.cfg.dialect != sqlite || b.prepared.Load() {
		return nil
	}
	select {
	case b.prepareLock <- struct{}{}:
		defer func() { <-b.prepareLock }()
	case <-ctx.Done():
		return ctx.Err()
	}
	if b.prepared.Load() {
		return nil
	}
	if dir := filepath.Dir(b.cfg.sqliteFile); b.cfg.sqliteFile != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err // explain names the file
			}
			return &unavailableError{&sqliteFileError{fmt.Errorf("cannot create the directory of the database file: %w", err)}}
		}
	}
	if b.cfg.seed != "" {
		if err := b.seed(ctx); err != nil {
			return err
		}
	}
	b.prepared.Store(true)
	return nil
}

// seed runs the seed script when the database has no schema at all. It
// runs in one IMMEDIATE transaction (the read-write pool's _txlock), which
// takes SQLite's write lock before looking: when two processes start at
// once, the second waits, then finds the tables and does nothing. A script
// that fails leaves nothing behind.
//
// A database mcpd creates is switched to WAL first, so that reads do not
// wait for writes (and take fewer system calls). Databases that were not
// empty keep their journal mode.
func (b *backend) seed(ctx context.Context) error {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return &unavailableError{err}
	}
	defer conn.Close()
	empty, err := schemaEmpty(ctx, conn)
	if err != nil {
		return &unavailableError{err}
	}
	if !empty {
		return nil
	}
	if err := switchToWAL(ctx, conn); err != nil {
		return &unavailableError{err}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return &unavailableError{err}
	}
	defer tx.Rollback()
	if empty, err = schemaEmpty(ctx, tx); err != nil {
		return &unavailableError{err}
	} else if !empty {
		return nil // another process seeded it meanwhile
	}
	if _, err := tx.ExecContext(ctx, b.cfg.seed); err != nil {
		return &seedError{err}
	}
	if err := tx.Commit(); err != nil {
		return &seedError{err}
	}
	return nil
}

// switchToWAL sets a new database's journal mode to WAL. SQLite answers
// SQLITE_BUSY at once, without waiting under the busy timeout, when another
// connection (a second process seeding the same new file) holds the file
// at that moment: the switch is tried again for as long as the busy
// timeout would have waited.
func switchToWAL(ctx context.Context, conn *sql.Conn) error {
	deadline := time.Now().Add(sqliteBusyWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		_, err := conn.ExecContext(ctx, "PRAGMA journal_mode = WAL")
		var se interface{ Code() int }
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqliteBusy || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// schemaEmpty reports whether a SQLite database has no tables, views,
// indexes or triggers.
func schemaEmpty(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (bool, error) {
	var objects int
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&objects)
	return objects == 0, err
}

// sqliteTarget finds the database file a SQLite DSN names: "path",
// "path?params", "file:path?params" or "file:///path". memory reports an
// in-memory database.
func sqliteTarget(dsn string) (path string, memory bool) {
	base, query, _ := strings.Cut(dsn, "?")
	if q, err := url.ParseQuery(query); err == nil && q.Get("mode") == "memory" {
		return "", true
	}
	if rest, ok := strings.CutPrefix(base, "file:"); ok {
		rest, _, _ = strings.Cut(rest, "#")
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			// file://host/path: the authority is empty or localhost.
			if i := strings.IndexByte(after, '/'); i >= 0 {
				rest = after[i:]
			} else {
				rest = ""
			}
		}
		if p, err := url.PathUnescape(rest); err == nil {
			rest = p
		}
		base = rest
	}
	if base == "" || base == ":memory:" {
		return "", true
	}
	return base, false
}

// resolveSQLite makes the file of a SQLite DSN absolute, relative to dir
// (the directory of the config file), and returns the rewritten DSN.
func resolveSQLite(dsn, dir string) (newDSN, file string) {
	path, _ := sqliteTarget(dsn)
	if filepath.IsAbs(path) {
		return dsn, path
	}
	abs := filepath.Join(dir, path)
	if a, err := filepath.Abs(abs); err == nil {
		abs = a
	}
	_, query, hasQuery := strings.Cut(dsn, "?")
	if strings.HasPrefix(dsn, "file:") {
		newDSN = "file:" + (&url.URL{Path: abs}).EscapedPath()
	} else {
		newDSN = abs
	}
	if hasQuery {
		newDSN += "?" + query
	}
	return newDSN, abs
}

// sqliteDSN adds mcpd's connection settings to a SQLite DSN: a busy timeout
// (unless the DSN sets one), IMMEDIATE transactions for the read-write pool
// (the seed), and query_only for the read-only pool, whatever the DSN says.
func sqliteDSN(dsn string, readOnly bool) string {
	base, query, _ := strings.Cut(dsn, "?")
	q, _ := url.ParseQuery(query)
	hasBusy := q.Has("_busy_timeout") || q.Has("_timeout")
	for _, p := range q["_pragma"] {
		hasBusy = hasBusy || strings.HasPrefix(strings.ToLower(strings.TrimSpace(p)), "busy_timeout")
	}
	if !hasBusy {
		q.Set("_busy_timeout", sqliteBusyTimeout)
	}
	if readOnly {
		q.Set("_query_only", "1") // applied after every _pragma
	} else if !q.Has("_txlock") {
		q.Set("_txlock", "immediate")
	}
	return base + "?" + q.Encode()
}
