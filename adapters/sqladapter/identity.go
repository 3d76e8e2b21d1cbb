package sqladapter

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/principal"
)

// The caller's identity in the database. A database block (for all its
// tools) or a sql block (for one tool) may declare
//
//	identity {
//	  role {
//	    from_caller = "claims.db_role"
//	    enum        = ["reader", "writer"]
//	  }
//	  setting "tenant" {
//	    from_caller = "claims.tenant"
//	    pattern     = "^[a-z0-9-]+$"
//	  }
//	}
//
// and every call then runs with the verified caller's values in its
// database session, so that the database's own permissions and
// row-level-security policies apply to the person calling rather than to
// the DSN's one account:
//
//   - PostgreSQL: the call's statement runs in a transaction of its own
//     (read-only tools already did), which first runs SET LOCAL ROLE (the
//     role chosen from the declared enum, quoted as an identifier, never
//     free text) and SELECT set_config('app.<name>', $n, true) with the
//     values bound. Both are LOCAL: they end with the transaction, commit or
//     rollback, before the connection goes back to the pool.
//   - MySQL/MariaDB: SET @app_<name> = ? (bound) on the call's connection,
//     and SET @app_<name> = NULL before the connection goes back to the pool,
//     whatever happened (error, timeout, panic). If that reset fails the
//     connection is closed instead, and a connection that missed its reset
//     runs it again when it is next checked out (mysqlConn.ResetSession).
//     MySQL has no transaction-scoped variables, hence the reset. Roles are
//     not supported there (a load error).
//   - SQLite has no roles and no session variables (and one file's
//     permissions for everyone): identity is a load error.
//
// A call without a caller (the local user over stdio) or whose caller lacks
// a value, or has one that does not fit, is refused before any connection
// is taken: there is no default identity, because a default would be what
// every unauthenticated call gets.

// settingName is the name of a setting: it becomes app.<name> or
// @app_<name>, so it is an identifier, lower case, fixed by the config.
var settingName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// identity is one identity block, or a database's and a tool's merged.
type identity struct {
	role     *adapter.CallerValue // nil: no role switch
	roleStmt map[string]string    // postgres: allowed role → SET LOCAL ROLE "role"
	settings []idSetting          // sorted by name
	// setSQL sets every setting with bound values; resetSQL (mysql)
	// clears them again.
	setSQL, resetSQL string
	// names are the settings as the database sees them, for spans.
	names []string
}

type idSetting struct {
	name  string
	value *adapter.CallerValue
}

var identitySchema = &adapter.Schema{Blocks: []adapter.BlockSchema{
	{Type: "role", Schema: adapter.CallerValueSchema},
	{Type: "setting", LabelNames: []string{"name"}, Schema: adapter.CallerValueSchema},
}}

// identityBlockSchema is the identity block in the database and sql
// blocks' schemas.
var identityBlockSchema = adapter.BlockSchema{Type: "identity", Schema: identitySchema}

// decodeIdentity decodes the identity blocks among blocks (at most one)
// for dialect d; nil when there is none.
func decodeIdentity(dec *adapter.Decoder, blocks hcl.Blocks, d dialect) *identity {
	blk := dec.SingleBlock(blocks, "identity")
	if blk == nil {
		return nil
	}
	switch d {
	case sqlite:
		dec.Errorf(blk.DefRange, "Identity on SQLite",
			"SQLite has no roles and no session variables, and every connection has the same rights on the file, so a caller's identity cannot reach it. "+
				"Filter by caller in the query instead, with a param bound from the caller (from_caller = \"claims.tenant\") and :tenant.")
		return nil
	case 0:
		return nil // the driver is unknown: reported already
	}
	content, ok := dec.Content(blk.Body, identitySchema)
	if !ok {
		return nil
	}
	id := &identity{}
	if rb := dec.SingleBlock(content.Blocks, "role"); rb != nil {
		if d != postgres {
			dec.Errorf(rb.DefRange, "Role switch on MySQL",
				"A role switch is supported on PostgreSQL (SET LOCAL ROLE, undone with the transaction). On MySQL/MariaDB, pass the caller's identity as a setting and filter on it (in the query, or in a view through a function that returns @app_<name>), or give each role its own database block and DSN user.")
		} else if cv, ok := dec.DecodeCallerValue(rb.Body, "identity role"); ok {
			roles := cv.Enum()
			if len(roles) == 0 {
				dec.Errorf(rb.DefRange, "Role without an allow-list",
					"role must list the roles a caller may become in enum = [\"reader\", ...]: the role is an identifier in the SQL, so it is never taken from the caller as free text.")
			} else {
				id.role = cv
				id.roleStmt = make(map[string]string, len(roles))
				for _, r := range roles {
					if r == "" {
						dec.Errorf(rb.DefRange, "Invalid role", "enum holds an empty role name.")
						continue
					}
					id.roleStmt[r] = "SET LOCAL ROLE " + pgx.Identifier{r}.Sanitize()
				}
			}
		}
	}
	seen := map[string]hcl.Range{}
	for _, sb := range content.Blocks.OfType("setting") {
		name := sb.Labels[0]
		if !settingName.MatchString(name) {
			dec.Errorf(sb.LabelRanges[0], "Invalid setting name",
				"%q: a setting's name becomes app.%s (PostgreSQL) or @app_%s (MySQL), so it is written in lower-case letters, digits and underscores, starting with a letter or underscore, at most 63 characters.", name, name, name)
			continue
		}
		if first, dup := seen[name]; dup {
			dec.Errorf(sb.LabelRanges[0], "Duplicate setting", "setting %q is already declared at %s.", name, first)
			continue
		}
		seen[name] = sb.LabelRanges[0]
		if cv, ok := dec.DecodeCallerValue(sb.Body, fmt.Sprintf("setting %q", name)); ok {
			id.settings = append(id.settings, idSetting{name: name, value: cv})
		}
	}
	if id.role == nil && len(id.settings) == 0 && !dec.HasErrors() {
		dec.Warnf(blk.DefRange, "Empty identity block", "The identity block declares neither a role nor a setting, so it changes nothing.")
	}
	return id
}

// mergeIdentity is a database's identity with a tool's over it, as a new
// value (neither is changed): the tool's role replaces the database's, and
// its settings are added to the database's (one of the same name replaces
// it). Nil when both are.
func mergeIdentity(db, tool *identity) *identity {
	if db == nil && tool == nil {
		return nil
	}
	out := &identity{}
	if db != nil {
		out.role, out.roleStmt = db.role, db.roleStmt
		out.settings = slices.Clone(db.settings)
	}
	if tool != nil {
		if tool.role != nil {
			out.role, out.roleStmt = tool.role, tool.roleStmt
		}
		for _, s := range tool.settings {
			i := slices.IndexFunc(out.settings, func(o idSetting) bool { return o.name == s.name })
			if i >= 0 {
				out.settings[i] = s
			} else {
				out.settings = append(out.settings, s)
			}
		}
	}
	return out
}

// compile sorts the settings and builds the statements, once at load.
func (id *identity) compile(d dialect) *identity {
	if id == nil || (id.role == nil && len(id.settings) == 0) {
		return nil
	}
	slices.SortFunc(id.settings, func(a, b idSetting) int { return strings.Compare(a.name, b.name) })
	var set, reset []string
	id.names = nil
	for i, s := range id.settings {
		// The names were checked against settingName: they are safe in
		// SQL text. The values are bound.
		switch d {
		case postgres:
			set = append(set, fmt.Sprintf("set_config('app.%s', $%d, true)", s.name, i+1))
			id.names = append(id.names, "app."+s.name)
		case mysql:
			set = append(set, fmt.Sprintf("@app_%s = ?", s.name))
			reset = append(reset, fmt.Sprintf("@app_%s = NULL", s.name))
			id.names = append(id.names, "@app_"+s.name)
		}
	}
	id.setSQL, id.resetSQL = "", ""
	if len(set) > 0 {
		if d == postgres {
			id.setSQL = "SELECT " + strings.Join(set, ", ")
		} else {
			id.setSQL = "SET " + strings.Join(set, ", ")
			id.resetSQL = "SET " + strings.Join(reset, ", ")
		}
	}
	return id
}

// session is what one call sets: read from its caller, checked.
type session struct {
	id       *identity
	role     string // "" for none
	roleStmt string
	values   []any
}

// read reads the call's values from its caller; the error is the tool
// error.
func (id *identity) read(ctx context.Context, db string) (*session, error) {
	p := principal.FromContext(ctx)
	s := &session{id: id, values: make([]any, len(id.settings))}
	if id.role != nil {
		r, err := id.role.Read(p)
		if err != nil {
			return nil, fmt.Errorf("database %q runs each call as its caller's role: %v", db, err)
		}
		s.role, s.roleStmt = r, id.roleStmt[r]
	}
	for i, st := range id.settings {
		v, err := st.value.Read(p)
		if err != nil {
			return nil, fmt.Errorf("database %q runs each call with the caller's %s: %v", db, "app."+st.name, err)
		}
		s.values[i] = v
	}
	return s, nil
}

// apply runs the statements that set the session. On PostgreSQL q is the
// call's transaction.
func (s *session) apply(ctx context.Context, q querier) error {
	if s.roleStmt != "" {
		if _, err := q.ExecContext(ctx, s.roleStmt); err != nil {
			return &identityError{what: "switching to role " + s.role, err: err}
		}
	}
	if s.id.setSQL == "" {
		return nil
	}
	// Query, not Exec: the postgres statement is a SELECT, and pgx would
	// send an Exec without rows by the simple protocol only when it has no
	// arguments; with arguments both take the extended protocol.
	var err error
	if strings.HasPrefix(s.id.setSQL, "SELECT") {
		var rows *sql.Rows
		rows, err = q.QueryContext(ctx, s.id.setSQL, s.values...)
		if err == nil {
			err = rows.Close()
		}
	} else if conn, ok := q.(*sql.Conn); ok {
		// MySQL: through the connection's prepared statement.
		err = conn.Raw(func(dc any) error {
			c, ok := dc.(*mysqlConn)
			if !ok {
				return fmt.Errorf("unexpected MySQL driver connection %T", dc)
			}
			return c.execSet(ctx, s.id.setSQL, s.values)
		})
	} else {
		_, err = q.ExecContext(ctx, s.id.setSQL, s.values...)
	}
	if err != nil {
		return &identityError{what: "setting " + strings.Join(s.id.names, ", "), err: err}
	}
	return nil
}

// identityError is a failure to set the caller's identity in the session.
type identityError struct {
	what string
	err  error
}

func (e *identityError) Error() string { return e.what + ": " + e.err.Error() }
func (e *identityError) Unwrap() error { return e.err }

// mysqlReset clears the settings on conn before it goes back to the pool,
// with a context of its own: the call's may have ended (that is often why
// the call is over). If the reset fails, the connection is closed instead
// of pooled.
func (s *session) mysqlReset(ctx context.Context, conn *sql.Conn) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(rctx, s.id.resetSQL); err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
		return
	}
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*mysqlConn); ok {
			c.pendingReset = ""
		}
		return nil
	})
}

// mysqlArm records on conn the statement that clears what is about to be
// set, so that the connection runs it when next checked out should the
// call's own reset never run.
func (s *session) mysqlArm(conn *sql.Conn) {
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*mysqlConn); ok {
			c.pendingReset = s.id.resetSQL
		}
		return nil
	})
}

// pgIdle discards conn unless its PostgreSQL session is outside any
// transaction: a transaction left open would keep the caller's LOCAL role
// and settings for the next call.
func pgIdle(conn *sql.Conn) {
	conn.Raw(func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok && c.Conn().PgConn().TxStatus() != 'I' {
			return driver.ErrBadConn
		}
		return nil
	})
}

// attributes are the span attributes of the identity applied by a call:
// the role (a name from the config's list) and the names of the settings,
// never their values.
func (s *session) attributes() []adapter.Attribute {
	var attrs []adapter.Attribute
	if s.role != "" {
		attrs = append(attrs, adapter.Attribute{Key: "mcpd.db.role", Value: s.role})
	}
	if len(s.id.names) > 0 {
		attrs = append(attrs, adapter.Attribute{Key: "mcpd.db.session_settings", Value: strings.Join(s.id.names, ",")})
	}
	return attrs
}

// identityProblems refuses, in the query of a tool with an identity, what
// would change that identity: a SET, RESET or DISCARD statement (SET ROLE,
// SET @app_tenant = :x) or set_config(), which a tool that writes could
// otherwise run with a value from the model's arguments. On MySQL/MariaDB
// every assignment of a user variable is refused (mysqlAssignments). Like
// the read-only checks, it is a net for mistakes: the database role is the
// last word.
func identityProblems(q *compiledQuery, d dialect) []queryProblem {
	var problems []queryProblem
	refuse := func(t token, what string) {
		problems = append(problems, queryProblem{off: t.off, end: t.end, summary: "Identity changed by the query",
			detail: fmt.Sprintf("%s would change the caller's identity that the identity block sets for this call (its role or settings). "+
				"Declare the value in the identity block instead, where it comes from the verified caller.", what)})
	}
	toks := q.tokens
	if i := firstWord(toks); i >= 0 {
		switch v := strings.ToUpper(toks[i].text); v {
		case "SET", "RESET", "DISCARD":
			refuse(toks[i], v)
		}
	}
	for i, t := range toks {
		if (t.kind == tokWord || t.kind == tokQuoted) && strings.EqualFold(t.text, "set_config") && i+1 < len(toks) && toks[i+1].text == "(" {
			refuse(t, t.text+"()")
		}
	}
	if d == mysql && len(problems) == 0 {
		problems = mysqlAssignments(toks)
		for _, off := range q.escapedQuotes {
			problems = append(problems, queryProblem{off: off, end: off + 2, summary: "Ambiguous string in a tool with an identity",
				detail: "Where a string with a backslash before a quote ends depends on the server's sql_mode (NO_BACKSLASH_ESCAPES, ANSI_QUOTES), so what follows it may be SQL the checks did not see. " +
					"Double the quote instead ('it''s'), or bind the value with a :name placeholder."})
		}
	}
	return problems
}

// identityVerbsMySQL are the statements a MySQL/MariaDB tool with an
// identity may run: queries and changes of rows, which assign a user
// variable only in the ways mysqlAssignments refuses. Every other statement
// is refused, because several assign user variables in ways no token
// shows: SET, EXECUTE IMMEDIATE (SQL text in a string or a parameter), GET
// DIAGNOSTICS @v = ..., LOAD DATA ... (@v), compound statements.
var identityVerbsMySQL = map[string]bool{
	"SELECT": true, "WITH": true, "VALUES": true, "TABLE": true,
	"INSERT": true, "REPLACE": true, "UPDATE": true, "DELETE": true,
	"CALL": true, "DO": true, "SHOW": true, "DESCRIBE": true, "DESC": true, "EXPLAIN": true,
}

// mysqlAssignments refuses every assignment of a user variable in the
// query of a MySQL/MariaDB tool with an identity. The settings are user
// variables (@app_<name>), and MySQL accepts many spellings of one: @app_x,
// @APP_X (names ignore case), @'app_x', @"app_x", @`app_x`, @'ap\p_x' (a
// string's escapes apply), and others in other versions. Recognising each
// spelling as the server's lexer does would be a second lexer to keep in
// step with every server version; refusing every assignment, whatever the
// variable, needs none: the assignment is in the syntax (:=, INTO @...,
// the statement), not in the name. The cost is that such a tool cannot
// use a user variable of its own (the @n := @n + 1 row counter): use
// ROW_NUMBER() instead. A stored procedure or function the tool calls is
// the database's own code and is not looked into.
func mysqlAssignments(toks []token) []queryProblem {
	var problems []queryProblem
	refuse := func(off, end int, what string) {
		problems = append(problems, queryProblem{off: off, end: end, summary: "User variable assigned in a tool with an identity",
			detail: fmt.Sprintf("%s. This tool's database session holds the caller's identity in user variables (@app_<name>), which MySQL names in many spellings "+
				"(@app_x, @APP_X, @`app_x`, @'app_x', ...), so a tool with an identity may assign no user variable at all. "+
				"Declare caller values in the identity block, and bind the tool's own values with :name placeholders.", what)})
	}
	if i := firstWord(toks); i >= 0 {
		if v := strings.ToUpper(toks[i].text); !identityVerbsMySQL[v] {
			refuse(toks[i].off, toks[i].end, fmt.Sprintf("%s is not a query or a change of rows, and statements such as SET, EXECUTE IMMEDIATE, GET DIAGNOSTICS and LOAD DATA assign user variables", v))
		} else if v == "CALL" {
			// An OUT or INOUT parameter assigns the variable passed.
			for _, t := range toks[i+1:] {
				if t.text == "@" {
					refuse(t.off, t.end, "A user variable passed to CALL is assigned when the procedure's parameter is OUT or INOUT")
					break
				}
			}
		}
	}
	for i, t := range toks {
		switch {
		case t.text == ":=" && t.kind == tokPunct:
			off := t.off
			if i > 0 {
				off = toks[i-1].off
			}
			refuse(off, t.end, ":= assigns a variable")
		case t.kind == tokWord && strings.EqualFold(t.text, "INTO"):
			// SELECT ... INTO @a, @b: a list of targets, each @name (a
			// user variable, its name a word or a string the scanner
			// skipped) or a name (a local variable, in a stored program).
			for j := i + 1; j < len(toks); j++ {
				if toks[j].text == "@" {
					refuse(t.off, toks[j].end, "INTO @... assigns a user variable")
					break
				}
				if toks[j].kind != tokWord || j+1 >= len(toks) || toks[j+1].text != "," {
					break
				}
				j++ // the comma
			}
		}
	}
	return problems
}
