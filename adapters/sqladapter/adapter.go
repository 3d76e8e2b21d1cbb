// Package sqladapter is mcpd's SQL adapter: the top-level `database` block
// (a connection pool to SQLite, PostgreSQL or MySQL/MariaDB) and the tool
// block `sql`, which runs one parameterised statement per call.
//
// The safety model, in short: the query text is fixed at load time; values
// are bound by the driver through :name placeholders checked against the
// tool's params; identifiers come only from a list declared in the tool;
// tools are read-only unless they say otherwise, and read-only is enforced
// by the database itself. See docs/adapter-sql.md.
package sqladapter

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/jackc/pgx/v5"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/redact"
)

// Adapter owns the `database` block and compiles `sql` blocks.
type Adapter struct{}

// New returns the SQL adapter, registered in main as
// reg.Register("sql", sqladapter.New()).
func New() *Adapter { return &Adapter{} }

var _ adapter.BackendAdapter = (*Adapter)(nil)

// BackendBlock is the top-level block this adapter owns.
func (*Adapter) BackendBlock() string { return "database" }

var databaseSchema = &adapter.Schema{Attributes: []hcl.AttributeSchema{
	{Name: "driver", Required: true},
	{Name: "dsn", Required: true},
	{Name: "max_open_conns"},
	{Name: "max_idle_conns"},
	{Name: "conn_max_lifetime"},
	{Name: "conn_max_idle_time"},
	{Name: "query_timeout"},
	{Name: "max_bytes"},
	{Name: "seed"},
}, Blocks: []adapter.BlockSchema{identityBlockSchema}}

// BackendSchema is the database block's schema (adapter.BackendSchemaer).
func (*Adapter) BackendSchema() *adapter.Schema { return databaseSchema }

// ToolSchema is the sql block's schema (adapter.Schemaer).
func (*Adapter) ToolSchema() *adapter.Schema { return sqlSchema }

// DecodeBackend decodes one `database "name" { ... }` block. It reads no
// file but those the block's own file() calls name, and opens nothing.
func (*Adapter) DecodeBackend(b *adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	dec := adapter.NewDecoder(b.Scope)
	content, ok := dec.Content(b.Body, databaseSchema)
	if !ok {
		return nil, dec.Diags
	}
	cfg := &dbConfig{
		name:         b.Name,
		maxOpen:      defaultMaxOpenConns,
		maxIdle:      -1, // default: min(defaultMaxIdleConns, maxOpen)
		maxLifetime:  defaultConnMaxLifetime,
		maxIdleTime:  defaultConnMaxIdleTime,
		queryTimeout: defaultQueryTimeout,
		maxBytes:     defaultMaxBytes,
	}
	attrs := content.Attributes

	driverAttr := attrs["driver"]
	if driverName, ok := dec.String(driverAttr, ""); ok {
		if cfg.dialect, ok = dialects[driverName]; !ok {
			dec.Errorf(driverAttr.Expr.Range(), "Unknown database driver",
				"driver %q is not supported; use \"sqlite\", \"postgres\" or \"mysql\" (which also serves MariaDB).", driverName)
		}
	}

	ints := []struct {
		name  string
		least int
		dst   *int
	}{{"max_open_conns", 1, &cfg.maxOpen}, {"max_idle_conns", 0, &cfg.maxIdle}, {"max_bytes", 1, &cfg.maxBytes}}
	for _, a := range ints {
		if attr := attrs[a.name]; attr != nil {
			if n, ok := dec.Int(attr, "", int64(a.least), math.MaxInt64); ok {
				*a.dst = int(n)
			}
		}
	}
	if cfg.maxIdle < 0 {
		cfg.maxIdle = min(defaultMaxIdleConns, cfg.maxOpen)
	}
	durations := []struct {
		name  string
		least time.Duration
		dst   *time.Duration
	}{
		{"conn_max_lifetime", 0, &cfg.maxLifetime},
		{"conn_max_idle_time", 0, &cfg.maxIdleTime},
		{"query_timeout", time.Nanosecond, &cfg.queryTimeout},
	}
	for _, a := range durations {
		if attr := attrs[a.name]; attr != nil {
			if dur, ok := dec.Duration(attr, "", a.least, 0); ok {
				*a.dst = dur
			}
		}
	}
	if attr := attrs["seed"]; attr != nil {
		cfg.seed, _ = dec.String(attr, "")
		if cfg.dialect != sqlite && cfg.dialect != 0 {
			dec.Errorf(attr.Expr.Range(), "Seed is for SQLite only",
				"A seed script fills a new, empty SQLite database (the demo, a local cache). For PostgreSQL and MySQL, create the schema with your migration tool.")
		}
	}

	cfg.identity = decodeIdentity(dec, content.Blocks, cfg.dialect).compile(cfg.dialect)

	dsnAttr := attrs["dsn"]
	if cfg.dsnUnknown = unknownAtLoad(dsnAttr, b.Scope); cfg.dsnUnknown {
		return cfg, dec.Diags // nothing to check without the value
	}
	if dsn, ok := dec.String(dsnAttr, ""); ok && cfg.dialect != 0 {
		cfg.dsn = dsn
		dec.Add(checkDSN(cfg, dsnAttr, b.Scope.Dir))
	}
	if dec.HasErrors() {
		return nil, dec.Diags
	}
	return cfg, dec.Diags
}

// unknownAtLoad reports whether attr is a valid load-time expression whose
// value is unknown: it reads an unset environment variable in a load that
// allows that (funcs.Options.UnsetEnvUnknown).
func unknownAtLoad(attr *hcl.Attribute, scope *adapter.Scope) bool {
	if len(attr.Expr.Variables()) > 0 {
		return false
	}
	v, d := attr.Expr.Value(scope.EvalContext())
	return !d.HasErrors() && !v.IsWhollyKnown()
}

// checkDSN validates the DSN for its driver, notes its password for
// redaction, and for SQLite resolves the file against the config's
// directory. The value never appears in a diagnostic.
func checkDSN(cfg *dbConfig, attr *hcl.Attribute, dir string) hcl.Diagnostics {
	invalid := func(detail string) hcl.Diagnostics {
		return hcl.Diagnostics{adapter.AttrError(attr, "Invalid dsn", detail+" (The value is not shown: it may hold a password.)")}
	}
	var password string
	switch cfg.dialect {
	case postgres:
		pc, err := pgx.ParseConfig(cfg.dsn)
		if err != nil {
			return invalid("The dsn is not a PostgreSQL connection string: expected a URL such as postgres://user:password@host:5432/dbname?sslmode=disable, or key=value pairs such as \"host=localhost dbname=app\".")
		}
		password = pc.Password
		cfg.remote = remoteAttributes("postgresql", pc.Database, pc.Host, int(pc.Port))
	case mysql:
		mc, err := mysqlConfig(cfg.dsn)
		if err != nil {
			return invalid("The dsn is not a MySQL data source name: expected user:password@tcp(host:3306)/dbname (see github.com/go-sql-driver/mysql).")
		}
		password = mc.Passwd
		host, port := "", 0
		if mc.Net == "tcp" {
			h, p, err := net.SplitHostPort(mc.Addr)
			if err == nil {
				host, port = h, atoiOrZero(p)
			}
		} else {
			host = mc.Addr // a unix socket's path
		}
		cfg.remote = remoteAttributes("mysql", mc.DBName, host, port)
	case sqlite:
		if _, query, _ := strings.Cut(cfg.dsn, "?"); query != "" {
			if _, err := url.ParseQuery(query); err != nil {
				return invalid("The parameters after '?' in the SQLite dsn are not a valid query string.")
			}
		}
		if _, memory := sqliteTarget(cfg.dsn); memory {
			return invalid("The dsn names an in-memory SQLite database. Each pooled connection would get its own empty database, so use a file, e.g. \"file:data/app.db\" (relative to this config file).")
		}
		cfg.dsn, cfg.sqliteFile = resolveSQLite(cfg.dsn, dir)
		cfg.remote = remoteAttributes("sqlite", "", "", 0)
	}
	cfg.redact = redact.New([]string{cfg.dsn, password})
	return nil
}

var sqlSchema = &adapter.Schema{Attributes: []hcl.AttributeSchema{
	{Name: "database", Required: true},
	{Name: "query", Required: true},
	{Name: "read_only"},
	{Name: "max_rows"},
	{Name: "max_bytes"},
	{Name: "timeout"},
	{Name: "identifiers"},
	{Name: "params"},
}, Blocks: []adapter.BlockSchema{identityBlockSchema}}

// defaultMaxRows is max_rows when the block does not set it.
const defaultMaxRows = 1000

// Statements that run with Exec and report rows_affected, unless they have
// a RETURNING clause. Anything else runs with Query.
var execVerbs = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "MERGE": true, "UPSERT": true,
	"CREATE": true, "DROP": true, "ALTER": true, "TRUNCATE": true, "RENAME": true,
	"GRANT": true, "REVOKE": true, "COMMENT": true, "VACUUM": true, "REINDEX": true,
	"SET": true, "RESET": true, "LOCK": true, "DO": true, "REFRESH": true,
}

// writeVerbs start statements that a read-only tool would always have
// refused: worth a warning at load time.
var writeVerbs = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "REPLACE": true, "MERGE": true, "UPSERT": true,
	"CREATE": true, "DROP": true, "ALTER": true, "TRUNCATE": true, "RENAME": true, "GRANT": true, "REVOKE": true,
}

// CompileTool decodes and checks one `sql { ... }` block.
func (*Adapter) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	dec := adapter.NewDecoder(b.Scope)
	content, ok := dec.Content(b.Body, sqlSchema)
	if !ok {
		return nil, dec.Diags
	}
	attrs := content.Attributes
	h := &handler{readOnly: true, maxRows: defaultMaxRows, structured: b.Structured, readsVars: b.ReadsVars}

	be, _ := adapter.LookupBackend[*backend](dec, b, attrs["database"], "database", `database %q { driver = "sqlite", dsn = "..." }`)
	if be != nil {
		h.be, h.dialect, h.timeout, h.maxBytes = be, be.cfg.dialect, be.cfg.queryTimeout, be.cfg.maxBytes
	}
	if attr := attrs["read_only"]; attr != nil {
		if v, ok := dec.Bool(attr, ""); ok {
			h.readOnly = v
		}
	}
	for _, a := range []struct {
		name string
		dst  *int
	}{{"max_rows", &h.maxRows}, {"max_bytes", &h.maxBytes}} {
		if attr := attrs[a.name]; attr != nil {
			if n, ok := dec.Int(attr, "", 1, math.MaxInt64); ok {
				*a.dst = int(n)
			}
		}
	}
	if attr := attrs["timeout"]; attr != nil {
		if dur, ok := dec.Duration(attr, "", time.Nanosecond, 0); ok {
			h.timeout = dur
		}
	}
	if be != nil {
		tid := decodeIdentity(dec, content.Blocks, be.cfg.dialect)
		h.identity = mergeIdentity(be.cfg.identity, tid).compile(be.cfg.dialect)
	}
	var allowed map[string][]string
	identAttr := attrs["identifiers"]
	if identAttr != nil {
		allowed = decodeIdentifiers(dec, identAttr)
	}

	queryAttr := attrs["query"]
	text, ok := queryText(dec, queryAttr)
	diags := dec.Diags
	if !ok || h.be == nil { // translating the query needs the database's driver
		return nil, diags
	}
	q, problems := parseQuery(text, h.dialect)
	if h.readOnly && len(problems) == 0 {
		problems = readOnlyProblems(q, h.dialect)
	}
	if h.identity != nil && len(problems) == 0 {
		problems = identityProblems(q, h.dialect)
	}
	q.tokens, q.escapedQuotes = nil, nil // only the load-time checks need them
	for _, p := range problems {
		rng := textRange(queryAttr.Expr, p.off, p.end)
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: p.summary, Detail: p.detail, Subject: &rng})
	}
	h.query, h.text = q, text
	names := b.Scope.Params
	if attr := attrs["params"]; attr != nil {
		var d hcl.Diagnostics
		h.extra, d = decodeExtraParams(attr, b.Scope)
		diags = append(diags, d...)
		names = make(map[string]string, len(b.Scope.Params)+len(h.extra))
		for k, v := range b.Scope.Params {
			names[k] = v
		}
		for k := range h.extra {
			names[k] = ""
		}
	}
	diags = append(diags, checkNames(q, allowed, queryAttr, identAttr, names)...)
	for _, name := range sortedKeys(allowed) {
		if slicesContainsRef(q.idents, name) {
			h.slots = append(h.slots, slot{param: name, allowed: allowed[name]})
		}
	}
	for _, name := range q.binds {
		h.binds = append(h.binds, bind{name: name, typ: b.Scope.Params[name], expr: h.extra[name]})
	}
	h.exec = execVerbs[q.verb] && !q.returning
	h.insert = q.verb == "INSERT" || q.verb == "REPLACE"
	if h.readOnly && writeVerbs[q.verb] {
		rng := queryAttr.Expr.Range()
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Write in a read-only tool",
			Detail:   fmt.Sprintf("Tools are read-only unless they set read_only = false, and this query starts with %s: the database will refuse it on every call. Add read_only = false if the tool is meant to write.", q.verb),
			Subject:  &rng,
		})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return h, diags
}

// queryText evaluates the query, which must be fixed text: a literal, a
// heredoc, or file("query.sql").
func queryText(dec *adapter.Decoder, attr *hcl.Attribute) (string, bool) {
	if vars := attr.Expr.Variables(); len(vars) > 0 {
		rng := vars[0].SourceRange()
		name := "x"
		if len(vars[0]) > 1 {
			if a, ok := vars[0][1].(hcl.TraverseAttr); ok {
				name = a.Name
			}
		}
		dec.Add(hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Query must be fixed text",
			Detail: fmt.Sprintf("The query cannot interpolate arguments: pasting a value into SQL lets the caller write SQL. "+
				"Write :%s where the value goes and the driver binds it; to choose a column or table by argument, write {{%s}} and list the allowed names in `identifiers`.", name, name),
			Subject: &rng,
		}})
		return "", false
	}
	text, ok := dec.String(attr, "")
	if ok && strings.TrimSpace(text) == "" {
		dec.Errorf(attr.Expr.Range(), "Empty query", "The query has no SQL.")
		return "", false
	}
	return text, ok
}

// decodeIdentifiers decodes identifiers = { param = ["name", ...] }.
func decodeIdentifiers(dec *adapter.Decoder, attr *hcl.Attribute) map[string][]string {
	v, ok := dec.Static(attr, "", cty.Map(cty.List(cty.String)))
	if !ok {
		return nil
	}
	out := map[string][]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, list := it.Element()
		name := k.AsString()
		if list.IsNull() || list.LengthInt() == 0 {
			dec.Errorf(attr.Expr.Range(), "No allowed identifiers", "identifiers.%s must list at least one name.", name)
			continue
		}
		for li := list.ElementIterator(); li.Next(); {
			_, ev := li.Element()
			if ev.IsNull() || ev.AsString() == "" || strings.ContainsRune(ev.AsString(), 0) {
				dec.Errorf(attr.Expr.Range(), "Invalid identifier", "identifiers.%s holds an empty or null name, or one with a NUL character.", name)
				continue
			}
			out[name] = append(out[name], ev.AsString())
		}
	}
	return out
}

// checkNames checks the query's :name and {{name}} against the tool's params
// and identifiers: an unknown name is an error, a param the query does not
// use is a warning (a result block or description may use it).
func checkNames(q *compiledQuery, allowed map[string][]string, queryAttr, identAttr *hcl.Attribute, params map[string]string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	used := map[string]bool{}
	declared := declaredList(params)
	for _, ref := range q.params {
		used[ref.name] = true
		if _, ok := params[ref.name]; !ok {
			rng := textRange(queryAttr.Expr, ref.off, ref.end)
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unknown placeholder",
				Detail:   fmt.Sprintf(":%s names no param of this tool; declared params: %s. Declare param %q, or fix the name.", ref.name, declared, ref.name),
				Subject:  &rng,
			})
		}
	}
	for _, ref := range q.idents {
		used[ref.name] = true
		rng := textRange(queryAttr.Expr, ref.off, ref.end)
		if _, ok := params[ref.name]; !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Unknown identifier slot",
				Detail:  fmt.Sprintf("{{%s}} names no param of this tool; declared params: %s.", ref.name, declared),
				Subject: &rng,
			})
		} else if _, ok := allowed[ref.name]; !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: "Identifier slot without allowed names",
				Detail:  fmt.Sprintf("{{%s}} puts a column or table name in the SQL, so its values must be listed: add identifiers = { %s = [\"name\", ...] } to the sql block (and the same enum to the param, so the model sees the choices).", ref.name, ref.name),
				Subject: &rng,
			})
		}
	}
	for _, name := range sortedKeys(allowed) {
		typ, declared := params[name]
		switch {
		case !declared:
			diags = append(diags, adapter.AttrError(identAttr, "Unknown identifier param", fmt.Sprintf("identifiers.%s names no param of this tool.", name)))
		case typ != "string" && typ != "":
			diags = append(diags, adapter.AttrError(identAttr, "Identifier param must be a string", fmt.Sprintf("param %q chooses an identifier, so it must have type = \"string\" (it is %q).", name, typ)))
		case !slicesContainsRef(q.idents, name):
			rng := identAttr.Expr.Range()
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning, Summary: "Unused identifiers entry",
				Detail: fmt.Sprintf("identifiers.%s is declared but the query has no {{%s}}.", name, name), Subject: &rng,
			})
		}
	}
	for _, name := range sortedKeys(params) {
		if !used[name] {
			rng := queryAttr.Expr.Range()
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning, Summary: "Param not used in the query",
				Detail:  fmt.Sprintf("param %q appears in the query neither as :%s nor as {{%s}}. That is fine if the result block uses it; otherwise the argument is ignored.", name, name, name),
				Subject: &rng,
			})
		}
	}
	return diags
}

func slicesContainsRef(refs []nameRef, name string) bool {
	for _, r := range refs {
		if r.name == name {
			return true
		}
	}
	return false
}

func declaredList(params map[string]string) string {
	if len(params) == 0 {
		return "none"
	}
	return strings.Join(sortedKeys(params), ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeExtraParams decodes params = { name = expression, ... }: values
// bound to :name that do not come from the model's arguments, such as the
// answers the user gave to the tool's ask blocks (inputs.<ask>.<field>).
// They are bound by the driver, never pasted into the SQL.
func decodeExtraParams(attr *hcl.Attribute, scope *adapter.Scope) (map[string]hcl.Expression, hcl.Diagnostics) {
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		return nil, diags
	}
	out := make(map[string]hcl.Expression, len(pairs))
	for _, kv := range pairs {
		name := hcl.ExprAsKeyword(kv.Key)
		if name == "" {
			v, d := kv.Key.Value(nil)
			if d.HasErrors() || v.IsNull() || v.Type() != cty.String {
				rng := kv.Key.Range()
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid params key", Detail: "params keys are the :names of the query, written as plain names.", Subject: &rng})
				continue
			}
			name = v.AsString()
		}
		if _, ok := scope.Params[name]; ok {
			rng := kv.Key.Range()
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "params shadows a param", Detail: fmt.Sprintf(":%s is already bound to the tool's param %q; give this value another name.", name, name), Subject: &rng})
			continue
		}
		diags = append(diags, scope.Check(kv.Value)...)
		out[name] = kv.Value
	}
	return out, diags
}
