package lsp

import (
	"fmt"
	"strings"
)

// The reference text of blocks and attributes that hover shows. It is the
// one source of truth for the "Editor reference" section of
// docs/config.md, which is generated from it (see ReferenceMarkdown and
// TestDocsReferenceUpToDate), so the two cannot drift. A key is a block
// path ("tool", "tool.param") or a block path and an attribute
// ("tool.param.type"); an adapter's blocks are keyed by their own type
// ("sql.query", "database.dsn") since they are the same wherever they
// appear.
var reference = []struct{ key, text string }{
	{"server", "Describes the server to clients: its name, version, title and instructions. At most one per config."},
	{"server.name", "The server's name in the initialize result (default \"mcpd\")."},
	{"server.instructions", "Text sent to clients in the initialize result, telling the model how to use the server's tools."},
	{"auth", "Who may call the server over HTTP: API keys (`api_key` blocks) or OAuth bearer tokens (`oauth`). stdio is never authenticated."},
	{"tool", "One MCP tool: its name (the label), description, typed params (compiled to the tool's JSON Schema), one adapter block (`http`, `shell` or `sql`) or a `result` block alone, and how its result is shaped."},
	{"tool.description", "What the tool does, for the model. May call functions known at load time, e.g. `file(\"docs/tool.md\")`."},
	{"tool.timeout", "The longest one call may run, as a duration string (\"30s\"); the call is cancelled after it."},
	{"tool.title", "A display name for the tool, for people; the model reads name and description."},
	{"tool.scopes", "The scopes a caller needs to see and call the tool (docs/security.md, \"Authorization\")."},
	{"tool.cache", "Reuse the tool's results for `ttl`; read-only tools only (a load error otherwise). Keyed by the arguments and the caller unless `shared = true`; in Redis when the server has a `state` block."},
	{"tool.cache.ttl", "How long a result is reused, e.g. \"5m\" (default: the server's cache ttl, else 30s)."},
	{"tool.cache.shared", "true: one result serves every caller; false (default): each caller has entries of its own."},
	{"tool.cache.max_entry_bytes", "A result larger than this (its JSON) is not cached (default 1 MiB)."},
	{"tool.task", "Run the tool's calls as tasks (the 2026-07-28 tasks extension, and 2025-11-25's experimental tasks): a client that uses tasks gets a task id at once, polls it with tasks/get, answers its questions (tasks/update; in 2025-11-25, on tasks/result) and cancels it with tasks/cancel."},
	{"tool.task.mode", "\"optional\" (default: a client that uses tasks gets one, others a plain call), \"required\" (a client that does not use tasks is refused) or \"never\"."},
	{"tool.task.ttl", "How long a task and its result are kept once it has ended, e.g. \"1h\" (default 1h, 1s to 168h)."},
	{"tool.task.max_per_caller", "The tasks of one caller that have not ended (default 16); one more is a tool error."},
	{"tool.task.poll_interval", "The interval clients are told to poll a task at (default \"1s\")."},
	{"tool.task.asks", "When the tool's ask blocks are answered: \"inside\" the task (default: input_required on tasks/get, answered with tasks/update) or \"first\" (input_required rounds of tools/call; the task is created on the last round)."},
	{"server.cache", "Defaults of the tools' cache blocks, and max_bytes, the in-memory cache's bound. Caches nothing by itself."},
	{"server.cache.max_bytes", "The in-memory result cache's bound in bytes (default 64 MiB); least recently used entries are evicted past it."},
	{"tool.max_concurrency", "Calls of this tool running at once, 1 to 65536; more wait up to `queue_timeout`, then fail."},
	{"tool.input_schema", "A JSON Schema for the arguments, written out instead of `param` blocks."},
	{"tool.output_schema", "The JSON Schema of the tool's structured result; every result must then carry one that matches it."},
	{"tool.annotations", "Hints for clients: `read_only`, `destructive`, `idempotent`, `open_world` and a `title`."},
	{"tool.param", "One argument of the tool. Its type and constraints compile to a property of the tool's input schema; the value is `args.NAME` in expressions."},
	{"tool.param.type", "The JSON type of the argument: string, integer, number, boolean, array or object (default string)."},
	{"tool.param.description", "What the argument means, for the model; it becomes the property's description."},
	{"tool.param.required", "Whether a call must give the argument (default true unless it has a default)."},
	{"tool.param.default", "The value used when a call leaves the argument out; it must satisfy the param's own constraints."},
	{"tool.param.enum", "The only values the argument may take, as a list."},
	{"tool.param.pattern", "A regular expression a string argument must match (JSON Schema pattern)."},
	{"tool.param.minimum", "The least value of a number or integer argument."},
	{"tool.param.maximum", "The greatest value of a number or integer argument."},
	{"tool.param.sensitive", "Marks the argument as a secret: it is redacted from logs, traces and audit records."},
	{"tool.result", "Shapes the tool's result from the adapter's output with expr expressions: `text`, `structured`, `content` blocks and `error_when`."},
	{"tool.result.text", "An expr expression over the adapter's variables (and `args`) giving the result's text."},
	{"tool.result.structured", "An expr expression giving the result's structuredContent (a JSON object)."},
	{"tool.result.error_when", "An expr expression: when true, the result is a tool error (isError) with `error_message`."},
	{"tool.progress", "Reports progress to the client while the tool runs."},
	{"tool.log", "Sends a log message to the client when its condition holds."},
	{"resource", "A static MCP resource at a URI, its contents given as `text` or read from a `file`."},
	{"resource.uri", "The resource's URI, unique in the config."},
	{"resource.text", "The contents as text, evaluated on every read."},
	{"resource.file", "A file whose contents the resource is, read on every read."},
	{"resource.mime_type", "The contents' MIME type (default: from `file`'s extension)."},
	{"resource_template", "A family of resources whose URIs match an RFC 6570 template; template variables are the resource's params."},
	{"prompt", "An MCP prompt: typed params and the messages (`content` blocks) it expands to."},
	{"toolset", "A named subset of the config's tools, resources (and templates) and prompts, served on /mcp/NAME and on stdio with `mcpd serve --stdio --toolset NAME`. Entries are names or globs (`*`, `?`); `!glob` excludes."},
	{"toolset.tools", "The tools of the toolset: names or globs such as \"search_*\"; \"!glob\" excludes. An unknown exact name is an error, a glob that matches nothing a warning."},
	{"toolset.resources", "The resources and resource templates of the toolset, by name or URI (template): names or globs; \"!glob\" excludes."},
	{"toolset.prompts", "The prompts of the toolset: names or globs; \"!glob\" excludes."},
	{"toolset.scopes", "The scopes a caller needs to use the toolset at all (HTTP answers 403 without them), on top of each item's own scopes."},
	{"server.default_toolset", "The toolset that /mcp (and stdio without --toolset) serves; unset, /mcp serves everything."},
	{"test", "A test of the config, run by `mcpd test`: a call of a tool with arguments and what its result must be. Never served."},
	{"http", "Makes the tool an HTTP request: method, url (or a path on an `http_backend`), query, headers and body, each a template over `args`."},
	{"http.backend", "The name of an `http_backend` block whose base_url, headers and timeout the request uses."},
	{"http.method", "The HTTP method (default GET)."},
	{"http.url", "The request's full URL, a template over `args`. Use either url or backend and path."},
	{"http.path", "The path appended to the backend's base_url, a template over `args`. Only with backend."},
	{"http.headers", "Request headers, merged with the backend's; names are fixed, so a call can never replace the backend's Authorization."},
	{"http.body", "The request body, sent as JSON; attributes whose value is null are left out."},
	{"http.expect_status", "The statuses that count as success (default any 2xx); any other is a tool error."},
	{"http.timeout", "Time allowed for each attempt (default the backend's, else \"30s\")."},
	{"shell", "Makes the tool a program run with an argv list (never a shell command line): each element is a template over `args` and stays one argument."},
	{"shell.command", "The program and its arguments, as a list of strings; no shell parses them."},
	{"shell.dir", "The working directory (default the config file's directory)."},
	{"shell.env", "The program's environment, a map of strings."},
	{"shell.stdin", "Bytes written to the program's standard input (default none: it reads EOF)."},
	{"shell.timeout", "How long the program may run (default \"30s\")."},
	{"sql", "Makes the tool a SQL statement run on a `database`, with every `args` value bound as a parameter, never spliced into the text."},
	{"sql.database", "The name of the `database` block the statement runs on."},
	{"sql.query", "The statement. `:name` placeholders bind the param of that name."},
	{"sql.read_only", "Whether the database refuses the statement's writes (default true); set false for a tool that writes."},
	{"sql.max_rows", "The most rows returned (default 1000); more rows are not an error, the result says `truncated: true`."},
	{"sql.identity", "The caller's identity for this tool's calls, over the database's own `identity` (docs/security.md, \"Databases and shell\")."},
	{"database", "A database connection pool that sql tools name: its driver (postgres, mysql or sqlite) and DSN. Connections are made on first use."},
	{"database.driver", "The database driver: postgres, mysql or sqlite."},
	{"database.dsn", "The connection string; read secrets into it with env() or file(), never write them in the file."},
	{"database.max_open_conns", "The most connections open at once, per pool (default 10)."},
	{"database.query_timeout", "Time allowed for one call of a tool, connecting included, unless the tool sets `timeout` (default \"30s\")."},
	{"database.seed", "SQLite only: an SQL script that fills a new, empty database, usually `file(\"seed.sql\")`."},
	{"database.identity", "Runs every call as the verified caller: a `role` (PostgreSQL SET LOCAL ROLE, from an allow-list) and `setting` blocks (app.NAME on PostgreSQL, @app_NAME on MySQL), read from the caller's claims. Needs an auth block."},
	{"database.identity.role", "PostgreSQL: the role each call switches to (SET LOCAL ROLE), read with `from_caller`; it must be one of `enum`, the allow-list."},
	{"database.identity.setting", "A session value from the caller: set_config('app.NAME', value, true) on PostgreSQL, SET @app_NAME = value on MySQL (reset before the connection is pooled again)."},
	{"database.identity.setting.from_caller", "What to read from the verified caller: \"claims.<claim>\" or \"name\", as for a param's from_caller."},
	{"http_backend", "Shared settings of HTTP tools that name it: a base_url, headers (e.g. an Authorization from env()), query and timeout."},
	{"http_backend.base_url", "The URL every tool's path is appended to."},
	{"http_backend.headers", "Headers sent with every request; secrets go here, read with env() or file()."},
	{"http_backend.timeout", "Time allowed for each attempt (default \"30s\")."},
	{"http_backend.identity", "The OAuth token each request carries, obtained per call: mcpd's own (mode \"client_credentials\"), the caller's exchanged for this backend (\"token_exchange\"), or the caller's forwarded when its audience includes the backend (\"passthrough\"). docs/security.md, \"Identity\"."},
	{"http_backend.identity.mode", "\"client_credentials\", \"token_exchange\" or \"passthrough\"; the last two need an auth block with oauth."},
	{"http_backend.identity.audience", "The backend's identifier: asked for at the token endpoint, and for passthrough the value the caller's token's aud must contain."},
	{"http_backend.identity.client_secret", "mcpd's client secret at the authorization server; read it with env() or file()."},
	{"http.identity", "Replaces the backend's identity block for this tool (same attributes)."},
	{"mcp_server.identity", "HTTP upstreams only: the OAuth token every request to the upstream carries, with an http_backend identity's attributes and modes. With \"token_exchange\" or \"passthrough\" each caller's calls go on sessions made with that caller's token, and mcpd's own requests (listing, expose) carry none. docs/gateway.md, \"Identity to the upstream\"."},
	{"mcp_server.identity.mode", "\"client_credentials\" (mcpd's own token), \"token_exchange\" or \"passthrough\" (the caller's; they need an auth block with oauth)."},
	{"mcp_server.identity.audience", "The upstream's identifier: asked for at the token endpoint, and for passthrough the value the caller's token's aud must contain."},
}

// doc returns the reference text of key, or "".
func doc(key string) string {
	for _, e := range reference {
		if e.key == key {
			return e.text
		}
	}
	return ""
}

// ReferenceMarkdown is the generated "Editor reference" section of
// docs/config.md.
func ReferenceMarkdown() string {
	var b strings.Builder
	b.WriteString("<!-- Generated from authoring/lsp/docs.go by `MCPD_UPDATE_DOCS=1 go test ./authoring/lsp -run TestDocsReferenceUpToDate`; do not edit. -->\n\n")
	b.WriteString("What `mcpd lsp` shows on hover, by block path (an adapter's blocks by their own type).\n\n")
	b.WriteString("| Block or attribute | Meaning |\n|---|---|\n")
	for _, e := range reference {
		fmt.Fprintf(&b, "| `%s` | %s |\n", e.key, strings.ReplaceAll(e.text, "|", "\\|"))
	}
	return b.String()
}
