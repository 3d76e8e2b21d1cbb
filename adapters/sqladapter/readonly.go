package sqladapter

import (
	"fmt"
	"strings"
)

// The load-time checks of read-only tools. The database refuses their
// writes (see backend.go), but a statement can do harm without writing a
// row: change the state of the pooled connection that the next call
// inherits (SET, PRAGMA query_only = 0, ATTACH), or act outside the
// database (COPY ... TO PROGRAM, SELECT ... INTO OUTFILE, VACUUM INTO a new
// file, pg_read_file()). Those are refused when the configuration loads,
// at the words that do it. The checks read the tokens the scanner found,
// so text in strings, quoted identifiers and comments never trips them;
// MySQL's /*! ... */ comments, which the server runs, are read as SQL.
//
// The checks are a net for mistakes, not a parser of every dialect: where
// the database can enforce the same rule it does (SQLite's authorizer, the
// read-only mode re-asserted on every MySQL checkout, PostgreSQL's
// rolled-back READ ONLY transaction), and the database role is the last
// word (docs/adapter-sql.md).

// tokKind is the kind of one token of a query.
type tokKind uint8

const (
	tokWord   tokKind = iota + 1 // a keyword or unquoted identifier
	tokQuoted                    // a quoted identifier, text unquoted
	tokPunct                     // one of ( ) = . , @ ; and :=
)

// token is one token of a query, at byte offsets of the source.
type token struct {
	kind     tokKind
	text     string
	off, end int
}

// sessionVerbs start statements that change the connection, not the data:
// the next call on the pooled connection would run under what they set.
var sessionVerbs = map[string]string{
	"SET": "changes a setting of the connection", "RESET": "changes settings of the connection",
	"DISCARD": "resets the connection", "USE": "changes the connection's current database",
	"LOCK": "takes locks", "UNLOCK": "releases locks",
	"BEGIN": "controls the transaction", "START": "controls the transaction", "COMMIT": "controls the transaction",
	"END": "controls the transaction", "ROLLBACK": "controls the transaction", "ABORT": "controls the transaction",
	"SAVEPOINT": "controls the transaction", "RELEASE": "controls the transaction", "XA": "controls the transaction",
	"PREPARE": "keeps a prepared statement on the connection", "EXECUTE": "runs a prepared statement the check cannot see",
	"DEALLOCATE": "drops prepared statements of the connection",
	"LISTEN":     "subscribes the connection to notifications", "UNLISTEN": "changes the connection's subscriptions",
	"DO": "runs code the check cannot see", "HANDLER": "opens a table handler on the connection",
	"FLUSH": "flushes server state", "KILL": "ends another session", "INSTALL": "installs a server plugin",
	"UNINSTALL": "removes a server plugin", "CHECKPOINT": "forces a server checkpoint",
}

// outsideVerbs start statements that act outside the database.
var outsideVerbs = map[string]string{
	"ATTACH": "opens (and creates) another database file",
	"DETACH": "changes the databases the connection has attached",
	"LOAD":   "loads a file or library into the server",
	"COPY":   "reads or writes files or programs on the database server (COPY ... TO PROGRAM, TO 'file')",
	"VACUUM": "rewrites the database (VACUUM INTO creates a new file)",
}

// forbiddenFuncs are functions a read-only tool may not call, per dialect,
// with what they do. A name is matched when a word or quoted identifier is
// followed by "(", whatever its case and schema.
var forbiddenFuncs = map[dialect]map[string]string{
	sqlite: {"load_extension": "loads a native library into the database process"},
	postgres: {
		"pg_read_file": "reads files on the database server", "pg_read_binary_file": "reads files on the database server",
		"pg_ls_dir": "lists directories on the database server", "pg_stat_file": "reads file metadata on the database server",
		"lo_export": "writes a file on the database server", "lo_import": "reads a file on the database server",
		"pg_file_write": "writes a file on the database server", "pg_file_rename": "renames a file on the database server",
		"pg_file_unlink": "deletes a file on the database server", "pg_file_sync": "syncs a file on the database server",
		"set_config":       "changes a setting of the connection",
		"pg_advisory_lock": "takes a lock the connection keeps after the call", "pg_advisory_lock_shared": "takes a lock the connection keeps after the call",
		"pg_try_advisory_lock": "takes a lock the connection keeps after the call", "pg_try_advisory_lock_shared": "takes a lock the connection keeps after the call",
		"pg_terminate_backend": "ends another session", "pg_cancel_backend": "cancels another session's query",
		"pg_reload_conf": "reloads the server configuration", "pg_rotate_logfile": "rotates the server log",
	},
	mysql: {
		"load_file": "reads a file on the database server",
		"get_lock":  "takes a lock the connection keeps after the call",
		"sys_exec":  "runs a program on the database server", "sys_eval": "runs a program on the database server",
	},
}

// SQLite pragmas that a read-only tool may call with an argument: they
// read the schema, and the argument names what to read. Every other
// pragma with a value (`= x` or `(x)`) changes a setting.
var pragmaArgReads = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_info": true, "index_xinfo": true,
	"index_list": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true, "quick_check": true,
}

// SQLite pragmas that act even without a value.
var pragmaActions = map[string]bool{
	"optimize": true, "wal_checkpoint": true, "shrink_memory": true, "incremental_vacuum": true,
}

// readOnlyProblems finds what a read-only tool's query may not do.
func readOnlyProblems(q *compiledQuery, d dialect) []queryProblem {
	var problems []queryProblem
	session := func(off, end int, what, does string) {
		problems = append(problems, queryProblem{off: off, end: end, summary: "Session change in a read-only tool",
			detail: fmt.Sprintf("%s %s, and the pooled connection would keep it for the next call, so read-only tools may not use it. "+
				"Remove it, or set read_only = false if the tool is meant to do this.", what, does)})
	}
	outside := func(off, end int, what, does string) {
		problems = append(problems, queryProblem{off: off, end: end, summary: "Side effect in a read-only tool",
			detail: fmt.Sprintf("%s %s, which a read-only tool may not do. Remove it, or set read_only = false if the tool is meant to do this.", what, does)})
	}
	toks := q.tokens
	if i := firstWord(toks); i >= 0 {
		verb := toks[i]
		v := strings.ToUpper(verb.text)
		if does, ok := sessionVerbs[v]; ok {
			session(verb.off, verb.end, v, does)
		} else if does, ok := outsideVerbs[v]; ok {
			outside(verb.off, verb.end, v, does)
		} else if v == "PRAGMA" && d == sqlite {
			if p := pragmaProblem(toks[i:]); p != nil {
				problems = append(problems, *p)
			}
		}
	}
	funcs := forbiddenFuncs[d]
	for i, t := range toks {
		if t.kind != tokWord && t.kind != tokQuoted {
			continue
		}
		name := strings.ToLower(t.text)
		if i+1 < len(toks) && toks[i+1].text == "(" {
			does, ok := funcs[name]
			if !ok && d == postgres && strings.HasPrefix(name, "dblink") {
				does, ok = "connects to a database outside this transaction (and can write there)", true
			}
			if ok {
				what := t.text + "()"
				if strings.HasSuffix(does, "after the call") || strings.HasPrefix(does, "changes a setting") {
					session(t.off, t.end, what, does)
				} else {
					outside(t.off, t.end, what, does)
				}
			}
		}
		// MySQL: SELECT ... INTO OUTFILE / INTO DUMPFILE write a file on
		// the server.
		if d == mysql && t.kind == tokWord && strings.EqualFold(t.text, "INTO") && i+1 < len(toks) && toks[i+1].kind == tokWord {
			if next := strings.ToUpper(toks[i+1].text); next == "OUTFILE" || next == "DUMPFILE" {
				outside(t.off, toks[i+1].end, "INTO "+next, "writes a file on the database server")
			}
		}
	}
	return problems
}

// firstWord is the index of the statement's first word, or -1.
func firstWord(toks []token) int {
	for i, t := range toks {
		if t.kind == tokWord {
			return i
		}
	}
	return -1
}

// pragmaProblem checks `PRAGMA [schema.]name [= value | (value)]`; toks
// starts at PRAGMA.
func pragmaProblem(toks []token) *queryProblem {
	i := 1
	if i+1 < len(toks) && toks[i+1].text == "." {
		i += 2 // schema.
	}
	if i >= len(toks) || (toks[i].kind != tokWord && toks[i].kind != tokQuoted) {
		return nil // the database will refuse it
	}
	name := strings.ToLower(toks[i].text)
	valued := i+1 < len(toks) && (toks[i+1].text == "=" || toks[i+1].text == "(")
	switch {
	case valued && !pragmaArgReads[name]:
		return &queryProblem{off: toks[0].off, end: toks[i+1].end, summary: "Session change in a read-only tool",
			detail: fmt.Sprintf("PRAGMA %s with a value changes a setting of the connection or the database (PRAGMA query_only = 0 would let the next call write), "+
				"so read-only tools may only read pragmas. Remove the value, or set read_only = false.", name)}
	case !valued && pragmaActions[name]:
		return &queryProblem{off: toks[0].off, end: toks[i].end, summary: "Side effect in a read-only tool",
			detail: fmt.Sprintf("PRAGMA %s changes the database, which a read-only tool may not do. Set read_only = false if the tool is meant to do this.", name)}
	}
	return nil
}
