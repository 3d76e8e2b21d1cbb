// Package config is mcpd's configuration language: it loads HCL files into
// plain structs that keep the source range of everything a later check may
// need to blame. Loading checks the syntax, the structure (unknown
// attributes, wrong types, duplicate names, invalid names); compiling the
// result into something callable (schemas, adapters, expressions) is the
// snapshot package's job.
package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/funcs"
)

// Config is one whole configuration, merged from every file it was loaded from.
type Config struct {
	Server            *Server
	Tools             []*Tool
	Resources         []*Resource
	ResourceTemplates []*ResourceTemplate
	Prompts           []*Prompt
	Backends          []*Backend
	// Toolsets are the toolset blocks, in load order (see toolset.go).
	Toolsets []*Toolset
	// Files are the config files read, in load order.
	Files []string
	// Referenced are the files the config reads through file(),
	// filebase64() or a resource's `file` attribute with a literal path:
	// a reload watches them too.
	Referenced []string
	// Sources maps each file to its text, for printing diagnostics.
	Sources map[string][]byte
	// Auth is the auth block, if any.
	Auth *Auth
	// Tests are the test blocks declared in the config files (see
	// LoadTests for those of *_test.hcl files). They are never served.
	Tests []*Test
	// UnsetEnvUnknown is Options.UnsetEnvUnknown of the load: function
	// tables built from this config must use it too.
	UnsetEnvUnknown bool
	// UnsetEnv are the env() calls without a default whose variable is not
	// set, in load order, whatever the options: the caller reports them.
	UnsetEnv []funcs.UnsetEnvCall
	// Env are all the env() calls with a constant name, set or not, in
	// load order: what a host must pass to the mcpd it starts.
	Env []funcs.EnvCall
}

// Options change how a config is loaded.
type Options struct {
	// UnsetEnvUnknown makes env() of an unset variable an unknown value
	// instead of an error (funcs.Options.UnsetEnvUnknown), for validating a
	// config without its secrets.
	UnsetEnvUnknown bool
	// Overlay, when not nil, holds the contents of config files by name
	// (as the paths name them) that replace what is on disk: an editor's
	// unsaved buffers (`mcpd lsp`). A file of a directory must still exist
	// on disk to be found; only its contents come from here.
	Overlay map[string][]byte
}

// Server describes the server itself to clients.
type Server struct {
	Name         string    `hcl:"name,optional"`
	Version      string    `hcl:"version,optional"`
	Title        string    `hcl:"title,optional"`
	Instructions string    `hcl:"instructions,optional"`
	WebsiteURL   string    `hcl:"website_url,optional"`
	DeclRange    hcl.Range `hcl:",def_range"`

	// Description, Icons and the ranges of name, version and website_url
	// describe the server to hosts, its Server Card and the MCP Registry's
	// server.json (icon.go, docs/config.md "server").
	Description      string    `hcl:"description,optional"`
	DescriptionRange hcl.Range `hcl:"description,attr_value_range"`
	NameRange        hcl.Range `hcl:"name,attr_value_range"`
	VersionRange     hcl.Range `hcl:"version,attr_value_range"`
	WebsiteURLRange  hcl.Range `hcl:"website_url,attr_value_range"`
	Icons            []*Icon   `hcl:"icon,block"`

	// ConfirmDestructive makes confirmation the default for tools
	// annotated destructive = true (see Tool.Confirm).
	ConfirmDestructive bool `hcl:"confirm_destructive,optional"`
	// RequestStateKey signs the requestState of tools that ask their
	// client for input; empty: a random key per process.
	RequestStateKey string `hcl:"request_state_key,optional"`

	// DefaultTimeout is the timeout of a tool that sets none; MaxTimeout
	// caps every tool's timeout (docs/security.md, "Limits").
	DefaultTimeout *hcl.Attribute `hcl:"default_timeout,optional"`
	MaxTimeout     *hcl.Attribute `hcl:"max_timeout,optional"`

	// DefaultToolset, when set, names the toolset that /mcp and stdio
	// without --toolset serve; unset, they serve everything.
	DefaultToolset *hcl.Attribute `hcl:"default_toolset,optional"`
	// Cache holds the defaults of the tools' cache blocks and the bound
	// of the whole result cache (docs/config.md, "cache"). It caches
	// nothing by itself: a tool opts in with its own cache block.
	Cache *Cache `hcl:"cache,block"`

	// State is the shared-state block: the Redis that the replicas of one
	// deployment share their limits (and cache) through. nil: all state is
	// in this process.
	State *State `hcl:"state,block"`
}

// Cache is a `cache { ... }` block: on a read-only tool, how long its
// results are reused; in the server block, the defaults of the tools'
// blocks and, with max_bytes, the bound of the in-memory cache.
type Cache struct {
	// TTL is how long a result is reused ("30s").
	TTL *hcl.Attribute `hcl:"ttl,optional"`
	// Shared makes one result serve every caller; by default each
	// principal has its own entries.
	Shared *hcl.Attribute `hcl:"shared,optional"`
	// MaxEntryBytes bounds one result; larger ones are not cached.
	MaxEntryBytes *hcl.Attribute `hcl:"max_entry_bytes,optional"`
	// MaxBytes bounds the whole in-memory cache (server block only).
	MaxBytes  *hcl.Attribute `hcl:"max_bytes,optional"`
	DeclRange hcl.Range      `hcl:",def_range"`
}

// State is the server's `state { ... }` block. Its attributes are kept as
// attributes, evaluated (with env() and file()) and checked by package
// sharedstate, which can then blame their ranges.
type State struct {
	// Redis is the URL, redis://[user:password@]host:port[/db] or
	// rediss:// for TLS.
	Redis    *hcl.Attribute `hcl:"redis,optional"`
	Username *hcl.Attribute `hcl:"username,optional"`
	Password *hcl.Attribute `hcl:"password,optional"`
	// KeyPrefix namespaces every key (default "mcpd:<server name>").
	KeyPrefix *hcl.Attribute `hcl:"key_prefix,optional"`
	// OnFailure is what limits do while Redis does not answer, "open" or
	// "closed": the default of the tools' on_state_failure.
	OnFailure *hcl.Attribute `hcl:"on_failure,optional"`
	// Timeout bounds one Redis operation (and a connection's dial).
	Timeout *hcl.Attribute `hcl:"timeout,optional"`
	// LocalReserve is the most rate-limit tokens a replica reserves per
	// bucket, to admit calls without a round trip (0: none).
	LocalReserve *hcl.Attribute `hcl:"local_reserve,optional"`
	TLS          *StateTLS      `hcl:"tls,block"`
	DeclRange    hcl.Range      `hcl:",def_range"`

	// Dir is the directory of the file the block is declared in, for
	// file() and the TLS files.
	Dir string
}

// StateTLS is the `tls { ... }` block of a state block (with a rediss://
// URL).
type StateTLS struct {
	CAFile     *hcl.Attribute `hcl:"ca_file,optional"`
	CertFile   *hcl.Attribute `hcl:"cert_file,optional"`
	KeyFile    *hcl.Attribute `hcl:"key_file,optional"`
	ServerName *hcl.Attribute `hcl:"server_name,optional"`
	DeclRange  hcl.Range      `hcl:",def_range"`
}

// Tool is one `tool "name" { ... }` block.
type Tool struct {
	Name         string         `hcl:"name,label"`
	NameRange    hcl.Range      `hcl:"name,label_range"`
	Title        string         `hcl:"title,optional"`
	Description  string         `hcl:"description,optional"`
	Annotations  *Annotations   `hcl:"annotations,block"`
	Params       []*Param       `hcl:"param,block"`
	InputSchema  *hcl.Attribute `hcl:"input_schema,optional"`
	OutputSchema *hcl.Attribute `hcl:"output_schema,optional"`
	Result       *Result        `hcl:"result,block"`
	Progress     *Progress      `hcl:"progress,block"`
	Logs         []*Log         `hcl:"log,block"`
	// Asks are what the tool asks its client before it runs.
	Asks []*Ask `hcl:"ask,block"`
	// Confirm is true, false or a message: whether the tool asks the
	// user to confirm each call (overriding server.confirm_destructive).
	Confirm   *hcl.Attribute `hcl:"confirm,optional"`
	Icons     []*Icon        `hcl:"icon,block"`
	Remain    hcl.Body       `hcl:",remain"`
	DeclRange hcl.Range      `hcl:",def_range"`

	// Adapter is the tool's adapter block, if any (taken from Remain).
	Adapter *AdapterBlock
	// Dir is the directory of the file the tool is declared in.
	Dir string

	// Scopes are the scopes a caller needs to see and call the tool.
	Scopes []string `hcl:"scopes,optional"`
	// Timeout, MaxConcurrency, QueueTimeout and RateLimit limit the tool's
	// calls (docs/security.md, "Limits").
	Timeout        *hcl.Attribute `hcl:"timeout,optional"`
	MaxConcurrency *hcl.Attribute `hcl:"max_concurrency,optional"`
	QueueTimeout   *hcl.Attribute `hcl:"queue_timeout,optional"`
	RateLimit      *RateLimit     `hcl:"rate_limit,block"`
	// ConcurrencyScope is "replica" (the default: max_concurrency counts
	// this process's calls) or "global" (leases in the shared state count
	// every replica's).
	ConcurrencyScope *hcl.Attribute `hcl:"concurrency_scope,optional"`
	// OnStateFailure is "open" or "closed": what the tool's shared limits
	// do while the shared state does not answer (default: the state
	// block's on_failure).
	OnStateFailure *hcl.Attribute `hcl:"on_state_failure,optional"`
	// Cache reuses the tool's results for a time; read-only tools only.
	Cache *Cache `hcl:"cache,block"`
	// Task lets the tool's calls run as tasks that a client polls and
	// cancels (docs/config.md, "task").
	Task *Task `hcl:"task,block"`
}

// Task is a tool's `task { ... }` block: whether its calls run as tasks
// (the 2026-07-28 tasks extension), how long a finished task is kept and
// how many tasks one caller may hold.
type Task struct {
	// Mode is "never", "optional" (a client that uses tasks gets one, any
	// other a plain call; the default) or "required" (a client that does
	// not use tasks is refused).
	Mode *hcl.Attribute `hcl:"mode,optional"`
	// TTL is how long a task is kept once it has ended ("1h").
	TTL *hcl.Attribute `hcl:"ttl,optional"`
	// MaxPerCaller bounds the tasks of one caller that have not ended.
	MaxPerCaller *hcl.Attribute `hcl:"max_per_caller,optional"`
	// PollInterval is the interval clients are told to poll at ("1s").
	PollInterval *hcl.Attribute `hcl:"poll_interval,optional"`
	// Asks is when the tool's ask blocks are answered: "inside" the task
	// (the default) or "first", through input_required rounds of
	// tools/call before the task is created.
	Asks      *hcl.Attribute `hcl:"asks,optional"`
	DeclRange hcl.Range      `hcl:",def_range"`
}

// RateLimit is a tool's `rate_limit { ... }` block: token buckets for the
// tool as a whole and for each caller. Rates are written "N/s", "N/m",
// "N/h" or "N/<duration>".
type RateLimit struct {
	PerTool   *hcl.Attribute `hcl:"per_tool,optional"`
	PerCaller *hcl.Attribute `hcl:"per_caller,optional"`
	Burst     *hcl.Attribute `hcl:"burst,optional"`
	// Scope is "global" (the default with a state block: the rates hold
	// across every replica) or "replica" (each process counts alone).
	Scope     *hcl.Attribute `hcl:"scope,optional"`
	DeclRange hcl.Range      `hcl:",def_range"`
}

// Annotations are the tool's behaviour hints for clients.
type Annotations struct {
	Title       string `hcl:"title,optional"`
	ReadOnly    *bool  `hcl:"read_only,optional"`
	Destructive *bool  `hcl:"destructive,optional"`
	Idempotent  *bool  `hcl:"idempotent,optional"`
	OpenWorld   *bool  `hcl:"open_world,optional"`
}

// Param is one `param "name" { ... }` block: one property of the tool's
// input schema. Constraint attributes are kept as attributes so that the
// schema compiler can check their values and blame their ranges.
type Param struct {
	Name string `hcl:"name,label"`
	Type string `hcl:"type,optional"`
	// TypeRange is the range of type's value, for a diagnostic about it
	// (zero when type is not set).
	TypeRange        hcl.Range      `hcl:"type,attr_value_range"`
	Title            string         `hcl:"title,optional"`
	Description      string         `hcl:"description,optional"`
	Required         *bool          `hcl:"required,optional"`
	Nullable         bool           `hcl:"nullable,optional"`
	Default          *hcl.Attribute `hcl:"default,optional"`
	Enum             *hcl.Attribute `hcl:"enum,optional"`
	Minimum          *hcl.Attribute `hcl:"minimum,optional"`
	Maximum          *hcl.Attribute `hcl:"maximum,optional"`
	ExclusiveMinimum *hcl.Attribute `hcl:"exclusive_minimum,optional"`
	ExclusiveMaximum *hcl.Attribute `hcl:"exclusive_maximum,optional"`
	MinLength        *hcl.Attribute `hcl:"min_length,optional"`
	MaxLength        *hcl.Attribute `hcl:"max_length,optional"`
	Pattern          *hcl.Attribute `hcl:"pattern,optional"`
	Format           string         `hcl:"format,optional"`
	MinItems         *hcl.Attribute `hcl:"min_items,optional"`
	MaxItems         *hcl.Attribute `hcl:"max_items,optional"`
	UniqueItems      bool           `hcl:"unique_items,optional"`
	Items            *hcl.Attribute `hcl:"items,optional"`
	Properties       *hcl.Attribute `hcl:"properties,optional"`
	Examples         *hcl.Attribute `hcl:"examples,optional"`
	// AllowSlash and AllowDotSegments relax the path rules of a
	// resource_template variable (see docs/config.md); a tool's params
	// cannot set them.
	AllowSlash       *hcl.Attribute `hcl:"allow_slash,optional"`
	AllowDotSegments *hcl.Attribute `hcl:"allow_dot_segments,optional"`
	// EnumTitles are display names for Enum's values, in the same order
	// (a oneOf of const/title, or anyOf in the items of an array).
	EnumTitles *hcl.Attribute `hcl:"enum_titles,optional"`
	// EnumNames are the legacy (pre-2025-11-25) enumNames of an
	// elicitation field.
	EnumNames *hcl.Attribute `hcl:"enum_names,optional"`
	DeclRange hcl.Range      `hcl:",def_range"`
	// Sensitive keeps the argument's value out of the audit log, mcpd's
	// logs and error texts; its schema says "writeOnly": true.
	Sensitive *hcl.Attribute `hcl:"sensitive,optional"`

	// FromCaller binds the param to the verified caller ("claims.org_id"
	// or "name"): the model neither sees nor sets it.
	FromCaller *hcl.Attribute `hcl:"from_caller,optional"`
}

// Result is a tool's `result { ... }` block: how the output becomes content.
// Structured, Text, ErrorWhen and ErrorMessage are expr-lang expressions
// (strings in HCL) over the adapter's output variables and `args`; Contents
// are literal content blocks whose attributes are HCL expressions over `args`.
type Result struct {
	Structured   *hcl.Attribute `hcl:"structured,optional"`
	Text         *hcl.Attribute `hcl:"text,optional"`
	ErrorWhen    *hcl.Attribute `hcl:"error_when,optional"`
	ErrorMessage *hcl.Attribute `hcl:"error_message,optional"`
	Contents     []*Content     `hcl:"content,block"`
	DeclRange    hcl.Range      `hcl:",def_range"`
}

// Content is one `content "type" { ... }` block: text, image, audio,
// resource (embedded) or resource_link. Its attributes are HCL expressions
// evaluated per call with `args` in scope.
type Content struct {
	Type        string         `hcl:"type,label"`
	TypeRange   hcl.Range      `hcl:"type,label_range"`
	Text        *hcl.Attribute `hcl:"text,optional"`
	Data        *hcl.Attribute `hcl:"data,optional"`
	Blob        *hcl.Attribute `hcl:"blob,optional"`
	URI         *hcl.Attribute `hcl:"uri,optional"`
	MIMEType    *hcl.Attribute `hcl:"mime_type,optional"`
	Name        *hcl.Attribute `hcl:"name,optional"`
	Title       *hcl.Attribute `hcl:"title,optional"`
	Description *hcl.Attribute `hcl:"description,optional"`
	DeclRange   hcl.Range      `hcl:",def_range"`
}

// Progress declares progress notifications a tool sends while it runs, at
// fixed steps (for long declarative tools and for testing clients).
type Progress struct {
	Steps     *hcl.Attribute `hcl:"steps"`
	Total     *hcl.Attribute `hcl:"total,optional"`
	Interval  *hcl.Attribute `hcl:"interval,optional"`
	Message   *hcl.Attribute `hcl:"message,optional"`
	DeclRange hcl.Range      `hcl:",def_range"`
}

// Log declares a log record (notifications/message) a tool sends to the
// client on each call, before or after its adapter runs.
type Log struct {
	Level     *hcl.Attribute `hcl:"level,optional"`
	Message   *hcl.Attribute `hcl:"message"`
	When      *hcl.Attribute `hcl:"when,optional"`
	DeclRange hcl.Range      `hcl:",def_range"`
}

// AdapterBlock is the block inside a tool (or resource) that selects the
// adapter doing the work, such as `http { ... }`. Its body belongs to the
// adapter.
type AdapterBlock struct {
	Type      string
	Body      hcl.Body
	DeclRange hcl.Range
}

// Backend is a top-level block owned by an adapter, such as
// `database "main" { ... }`.
type Backend struct {
	Type      string
	Name      string
	Body      hcl.Body
	DeclRange hcl.Range
	Dir       string
}

// Resource is one `resource "name" { ... }` block.
type Resource struct {
	Name        string         `hcl:"name,label"`
	URI         string         `hcl:"uri"`
	Title       string         `hcl:"title,optional"`
	Description string         `hcl:"description,optional"`
	MIMEType    string         `hcl:"mime_type,optional"`
	Text        *hcl.Attribute `hcl:"text,optional"`
	Blob        *hcl.Attribute `hcl:"blob,optional"`
	File        *hcl.Attribute `hcl:"file,optional"`
	Icons       []*Icon        `hcl:"icon,block"`
	Remain      hcl.Body       `hcl:",remain"`
	DeclRange   hcl.Range      `hcl:",def_range"`

	Adapter *AdapterBlock
	Dir     string
	// URIRange is the range of the uri attribute's value, for diagnostics
	// about the URI (a zero range when unknown: use DeclRange).
	URIRange hcl.Range

	// Scopes are the scopes a caller needs to see and read the resource.
	Scopes []string `hcl:"scopes,optional"`
}

// ResourceTemplate is one `resource_template "name" { ... }` block. The
// variables of its URI template are its arguments, as `args.<var>`; param
// blocks may declare their types and constraints, as a tool's do.
type ResourceTemplate struct {
	Name        string         `hcl:"name,label"`
	URITemplate string         `hcl:"uri_template"`
	Params      []*Param       `hcl:"param,block"`
	Title       string         `hcl:"title,optional"`
	Description string         `hcl:"description,optional"`
	MIMEType    string         `hcl:"mime_type,optional"`
	Text        *hcl.Attribute `hcl:"text,optional"`
	Blob        *hcl.Attribute `hcl:"blob,optional"`
	Completions *hcl.Attribute `hcl:"completions,optional"`
	Icons       []*Icon        `hcl:"icon,block"`
	Remain      hcl.Body       `hcl:",remain"`
	DeclRange   hcl.Range      `hcl:",def_range"`

	Adapter *AdapterBlock
	Dir     string
	// URIRange is the range of the uri_template attribute's value, for
	// diagnostics about the template (zero when unknown: use DeclRange).
	URIRange hcl.Range

	// Scopes are the scopes a caller needs to see and read the template.
	Scopes []string `hcl:"scopes,optional"`
}

// Prompt is one `prompt "name" { ... }` block.
type Prompt struct {
	Name        string      `hcl:"name,label"`
	Title       string      `hcl:"title,optional"`
	Description string      `hcl:"description,optional"`
	Arguments   []*Argument `hcl:"argument,block"`
	Messages    []*Message  `hcl:"message,block"`
	Asks        []*Ask      `hcl:"ask,block"`
	Icons       []*Icon     `hcl:"icon,block"`
	DeclRange   hcl.Range   `hcl:",def_range"`

	Dir string

	// Scopes are the scopes a caller needs to see and get the prompt.
	Scopes []string `hcl:"scopes,optional"`
}

// Argument is one argument of a prompt.
type Argument struct {
	Name        string         `hcl:"name,label"`
	Title       string         `hcl:"title,optional"`
	Description string         `hcl:"description,optional"`
	Required    bool           `hcl:"required,optional"`
	Completions *hcl.Attribute `hcl:"completions,optional"`
	DeclRange   hcl.Range      `hcl:",def_range"`
}

// Message is one message of a prompt: a role and either `text` or exactly one
// content block.
type Message struct {
	Role      string         `hcl:"role,optional"`
	Text      *hcl.Attribute `hcl:"text,optional"`
	Contents  []*Content     `hcl:"content,block"`
	DeclRange hcl.Range      `hcl:",def_range"`
}

// Auth is the top-level `auth { ... }` block: how HTTP callers prove who
// they are. Attributes are kept as attributes so that engine/auth can
// evaluate them (env(), file()) and blame their ranges when it compiles
// them; see docs/security.md.
type Auth struct {
	// Header is an extra header that carries an API key, besides
	// Authorization: Bearer.
	Header *hcl.Attribute `hcl:"header,optional"`
	// Resource is this server's resource URI (RFC 9728), e.g.
	// https://mcp.example.com/mcp: the audience tokens must carry and the
	// subject of the Protected Resource Metadata.
	Resource *hcl.Attribute `hcl:"resource,optional"`
	// Scopes are required of every caller to reach the server at all.
	Scopes    *hcl.Attribute `hcl:"scopes,optional"`
	APIKeys   []*APIKey      `hcl:"api_key,block"`
	OAuth     *OAuth         `hcl:"oauth,block"`
	DeclRange hcl.Range      `hcl:",def_range"`

	// Dir is the directory of the file the block is declared in.
	Dir string
}

// APIKey is one `api_key "name" { ... }` block: a static bearer token whose
// name is the principal it authenticates.
type APIKey struct {
	Name       string         `hcl:"name,label"`
	NameRange  hcl.Range      `hcl:"name,label_range"`
	Value      *hcl.Attribute `hcl:"value,optional"`
	SHA256     *hcl.Attribute `hcl:"sha256,optional"`
	Scopes     *hcl.Attribute `hcl:"scopes,optional"`
	Attributes *hcl.Attribute `hcl:"attributes,optional"`
	DeclRange  hcl.Range      `hcl:",def_range"`
}

// OAuth is the `oauth { ... }` block of auth: mcpd as an OAuth 2.1
// resource server that accepts JWT access tokens from one issuer.
type OAuth struct {
	Issuer           *hcl.Attribute `hcl:"issuer"`
	Audience         *hcl.Attribute `hcl:"audience,optional"`
	JWKSURL          *hcl.Attribute `hcl:"jwks_url,optional"`
	Algorithms       *hcl.Attribute `hcl:"algorithms,optional"`
	Leeway           *hcl.Attribute `hcl:"leeway,optional"`
	ScopesClaim      *hcl.Attribute `hcl:"scopes_claim,optional"`
	IntrospectionURL *hcl.Attribute `hcl:"introspection_url,optional"`
	ClientID         *hcl.Attribute `hcl:"client_id,optional"`
	ClientSecret     *hcl.Attribute `hcl:"client_secret,optional"`
	DeclRange        hcl.Range      `hcl:",def_range"`
}

// Ask is one `ask "name" { ... }` block of a tool or prompt: one question
// for the client, of exactly one kind (confirm, elicit, sample or roots).
// Its answer is `inputs.<name>` in the expressions that run after it.
type Ask struct {
	Name      string    `hcl:"name,label"`
	NameRange hcl.Range `hcl:"name,label_range"`
	// Round orders questions that depend on earlier answers; 0 means 1.
	Round *hcl.Attribute `hcl:"round,optional"`
	// Confirm, Elicit and Sample are message templates; Roots is a bool.
	Confirm *hcl.Attribute `hcl:"confirm,optional"`
	Elicit  *hcl.Attribute `hcl:"elicit,optional"`
	Sample  *hcl.Attribute `hcl:"sample,optional"`
	Roots   *hcl.Attribute `hcl:"roots,optional"`
	// Fields are the elicitation form, compiled as param blocks are.
	Fields       []*Param       `hcl:"field,block"`
	MaxTokens    *hcl.Attribute `hcl:"max_tokens,optional"`
	SystemPrompt *hcl.Attribute `hcl:"system_prompt,optional"`
	// Optional skips the question (its input is null) when the client
	// cannot answer it, instead of refusing the call.
	Optional  bool      `hcl:"optional,optional"`
	DeclRange hcl.Range `hcl:",def_range"`
}
