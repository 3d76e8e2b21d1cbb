// Package adapter is the contract between mcpd's engine and the packages that
// do a tool's work (HTTP, shell, SQL). The engine knows nothing of HTTP, shell
// or SQL; an adapter knows nothing of MCP. Adapters are registered by the name
// of the block that selects them inside a tool ("http", "shell", "sql") in a
// Registry that main builds and hands to the engine.
//
// Everything fallible happens at load time: CompileTool decodes and checks the
// block and returns a Handler that holds compiled expressions. At call time
// the engine validates the arguments, then calls Handler.Call with them.
//
// An adapter decodes its blocks with the load-time toolkit (decode.go): it
// declares each block's Schema once, and a Decoder reads the body and the
// load-time values (strings, bools, whole numbers, durations, the backend a
// tool names) with the diagnostics every adapter gives for the same
// mistake. What the engine needs from only some adapters (a readiness
// ping, pool statistics, span attributes, dry runs, mocks) it asks for as
// optional interfaces (capability.go), never by the adapter's name, so
// that a new adapter needs no edit outside its package and the one line
// that registers it.
package adapter

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/resultbuf"
)

// An Adapter turns the adapter block of one tool into a Handler.
type Adapter interface {
	// CompileTool decodes b.Body and checks everything that can be checked
	// before a call: attribute types, references to params (b.Scope.Check),
	// placeholders, backends. Diagnostics must carry source ranges.
	CompileTool(b *ToolBlock) (Handler, hcl.Diagnostics)
}

// A BackendAdapter is an Adapter that also owns a top-level block of shared
// connection settings, such as `database "main" { ... }` or
// `http_backend "github" { ... }`, which tools refer to by name.
type BackendAdapter interface {
	Adapter
	// BackendBlock is the top-level block type this adapter owns.
	BackendBlock() string
	// DecodeBackend decodes and checks one backend block. It must not touch
	// the network or the file system beyond reading declared files.
	DecodeBackend(b *BackendBlock) (BackendConfig, hcl.Diagnostics)
}

// A BackendConfig is the decoded, checked settings of one backend block: a
// plain value, separate from the live connection it describes.
type BackendConfig interface {
	// Fingerprint identifies the settings. When a reload yields a backend of
	// the same type and name with an equal fingerprint, the engine keeps the
	// live backend (and its connection pool) instead of opening a new one.
	Fingerprint() string
	// Open builds the live backend. It must not block on the network:
	// connections are made lazily, on the first call that needs one, so that
	// a backend that is down is a tool error and not a load failure. Nor
	// may it start or connect anything by itself: commands that only check
	// a config (validate, list, the editor's diagnostics) open every
	// backend too. Work that begins as soon as the config is served (an
	// upstream with start = "load") begins on the first Watch (Watcher),
	// which only a served config gets.
	Open() (Backend, error)
}

// A Backend is a live, shared connection resource (a pool, an HTTP client).
// Close is called once no call can use it any more.
type Backend interface {
	Close() error
}

// A Handler runs one tool's adapter at call time. It must be safe for
// concurrent use and must honour ctx: cancellation and deadlines end the work
// (kill the process, cancel the query, abort the request).
type Handler interface {
	// Call does the work. An error is a tool error the model sees (isError),
	// so its text must say what failed in terms the model can act on, and it
	// must never contain secrets.
	Call(ctx context.Context, req *Request) (*Output, error)
	// Vars names the variables this handler's Output.Vars provides, so that
	// result expressions can be checked at load time.
	Vars() []string
	// Traits are what the engine needs to know of the compiled handler
	// (see Traits); it reads them once, at load time.
	Traits() Traits
}

// Traits are what a compiled Handler reports of itself. The engine reads
// them once, when it compiles the tool, and keeps them beside the handler:
// they are values of the compiled block, not behaviours, so that the
// engine asks for them in one place rather than by one optional interface
// each.
type Traits struct {
	// ReadsEval reports that Call evaluates expressions with Request.Eval.
	// Building that context (every argument as an HCL value) costs each
	// call of a tool whose handler reads it; for a handler that reports it
	// does not, Request.Eval may be nil.
	ReadsEval bool
	// RelaysClientRequests reports that the handler may put requests to
	// the client of a call while it runs: the engine then sets
	// Request.Client for it, or, for a client that is asked by
	// input_required rounds, Request.Rounds, and honours
	// Output.InputRequired. Others get neither.
	RelaysClientRequests bool
	// ReadOnly reports whether the handler's calls can change anything (a
	// sql block's read_only, enforced by the database); nil when the
	// handler cannot tell. The engine caches only the results of tools
	// that only read: for a nil ReadOnly, the tool's annotations must say
	// read_only.
	ReadOnly *bool
	// ActsAsCaller reports that the handler's calls reach the backend as
	// the caller (a token exchanged or passed through, a database role or
	// session settings from the caller's claims): the backend then answers
	// each caller after its own permissions, so one caller's result must
	// never be served to another. The result cache refuses `shared` for
	// such a tool.
	ActsAsCaller bool
	// MaxOutputBytes is the most output one call can hold in memory: the
	// handler's output caps (a program's two streams, a response body, a
	// result's bytes); 0 when it does not say. The engine counts the calls
	// in flight against a server-wide budget with it, so that raising one
	// tool's cap cannot make concurrent calls hold more than the server
	// can afford.
	MaxOutputBytes int64
	// DryRuns reports that the handler honours WithDryRun: under it, the
	// handler records what it would run and runs nothing. `mcpd test`'s
	// expect_argv and expect_stdin are for the tools whose handler does.
	DryRuns bool
}

// TraitsOf is h's Traits, or none for a nil h (a declarative tool).
func TraitsOf(h Handler) Traits {
	if h == nil {
		return Traits{}
	}
	return h.Traits()
}

// ToolBlock is the adapter block of one tool, handed to CompileTool.
type ToolBlock struct {
	Tool  string    // the tool's name, for messages
	Type  string    // the block type ("http", "shell", "sql")
	Body  hcl.Body  // the block's body; the adapter decodes its own schema
	Range hcl.Range // the block's definition range, for diagnostics
	Scope *Scope    // what the block's expressions may use
	// Structured reports that the tool declares an output_schema: its
	// results must carry a structured result (Output.Structured), which an
	// adapter may otherwise leave out when its text holds the same data.
	Structured bool
	// ReadsVars reports that the tool has a result or log block, whose
	// expressions may read Output.Vars. When it is false the engine never
	// reads them, and an adapter whose Vars cost work per call (a copy of
	// a proxied result) may leave them nil.
	ReadsVars bool
	// Backend returns the live backend declared by a top-level block of the
	// given type and name (e.g. "database", "main").
	Backend func(blockType, name string) (Backend, bool)
	// BackendNames, when not nil, lists the names declared by top-level
	// blocks of a type, so that an unknown name can be answered with the
	// closest one (see DidYouMean).
	BackendNames func(blockType string) []string
}

// BackendBlock is one top-level backend block, handed to DecodeBackend.
type BackendBlock struct {
	Name  string
	Body  hcl.Body
	Range hcl.Range
	Scope *Scope // backends have no args: Scope.Params is empty
}

// Request is one call of a tool, with arguments already validated against the
// tool's schema and defaults applied.
type Request struct {
	Tool string
	// Args are the validated arguments as decoded from JSON (string, float64,
	// bool, []any, map[string]any, nil).
	Args map[string]any
	// Eval is the evaluation context for the block's expressions: the
	// functions of the file the tool is declared in and the variable `args`.
	// Nil when the handler reports that it does not read it (Traits.ReadsEval).
	Eval *hcl.EvalContext
	// Progress reports progress to the client when it asked for it (the
	// request carried a progress token); otherwise it does nothing. Never nil.
	Progress func(progress, total float64, message string)
	// Log sends a log record (notifications/message) to the client, with
	// the tool's name as the logger; level is one of LogLevels. Records
	// below the level the client asked for, or all of them when it asked
	// for none, are dropped. Never nil.
	Log func(level, message string)
	// ProgressWanted reports that the client asked for progress, and
	// LogWanted that it may receive log records (it set a level): an
	// adapter whose backend reports them only when asked (an MCP
	// upstream) asks only then.
	ProgressWanted, LogWanted bool
	// Client asks the client that made the call while the call waits
	// (elicitation/create, sampling/createMessage, roots/list), for an
	// adapter that relays such requests (adapters/mcpadapter). Nil when the
	// client cannot be asked within a call: a 2026-07-28 client (it is
	// asked by input_required rounds: see Rounds), resource reads.
	Client ClientAsker
	// Rounds, when not nil, is how a handler that relays client requests
	// (Traits.RelaysClientRequests) asks a client that
	// cannot be asked while a call runs (a 2026-07-28 client): the
	// handler ends the call with Output.InputRequired, the engine answers
	// the client with input_required, and the client's retry brings the
	// answers and the handler's state back here. Nil when Client is set,
	// and when the call cannot be asked at all (resource reads).
	Rounds *Rounds
	// Tasks reports that the engine takes a task of the backend's as the
	// call's answer (Output.Task; see BackendTask): the client uses
	// tasks, and the call is not one already.
	Tasks bool
	// Buffers lends the buffers a large output's text may be built in
	// (Buffer, Grow), given back once the answer is written
	// (engine/resultbuf). Nil for most calls, and always for a tool whose
	// result something may keep (a cache, a result block): then, as for
	// a nil lease's methods, buffers are plain allocations. A handler
	// that takes them must keep no reference to them once Call returns
	// but the Output it returns.
	Buffers *resultbuf.Lease
}

// Rounds is what a call brings for a handler's input_required rounds.
type Rounds struct {
	// Caps are the client's capabilities, as declared with this request;
	// nil: it can answer nothing. A question it did not declare must not
	// be put to it (the handler refuses the call instead).
	Caps *mcp.ClientCapabilities
	// Responses are the client's answers, by the keys of the questions
	// the handler asked last; on a first call (State ""), what the client
	// sent unasked, if the tool has no ask blocks of its own; nil when the
	// retry answers the tool's own ask blocks rather than the handler.
	Responses mcp.InputResponseMap
	// State is the InputRequired.State of the handler's last round, as
	// the handler gave it; "" on the first call.
	State string
}

// MissingCapabilityError ends a call whose adapter must ask its client
// (by Rounds) something the client did not declare it can answer, e.g. an
// upstream's sampling question for a client without sampling. The engine
// answers the protocol's error for it (-32021, naming the capabilities),
// as for the tool's own ask blocks. The message is the adapter's.
type MissingCapabilityError struct {
	Message string
	// Asks are the methods of the questions ("sampling/createMessage"),
	// and Capabilities the missing capabilities, as keys of
	// ClientCapabilities ("sampling", "elicitation", "roots").
	Asks, Capabilities []string
}

func (e *MissingCapabilityError) Error() string { return e.Message }

// UnavailableError is a call's failure to reach its backend at all (an MCP
// upstream whose handshake has not completed, or whose last connection
// failed): the engine reports its message as the call's error even when
// the tool's timeout ended the wait, since the timeout's advice (narrow the
// request) would send the model after the wrong cause.
type UnavailableError struct{ Err error }

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// InputRequired ends a call with questions for its client (see Rounds).
type InputRequired struct {
	// Requests are the questions (*mcp.ElicitParams,
	// *mcp.CreateMessageParams, *mcp.ListRootsParams), by keys the client
	// answers with.
	Requests mcp.InputRequestMap
	// State is what the handler needs on the retry. The engine carries it
	// inside its own requestState, signed, bound to the tool, its
	// arguments and the caller, and expiring: it comes back unaltered
	// (Rounds.State) or the retry is refused. It is signed, not
	// encrypted: the client can read it.
	State string
}

// A ClientAsker puts one request to the client of a call while the call
// waits, and returns its answer.
type ClientAsker interface {
	// Capabilities are what the client declared; a request it did not
	// declare must not be sent (the caller refuses it).
	Capabilities() *mcp.ClientCapabilities
	// Ask sends req (*mcp.ElicitParams, *mcp.CreateMessageParams or
	// *mcp.ListRootsParams) and returns the client's answer (the matching
	// *mcp.ElicitResult, *mcp.CreateMessageResult or *mcp.ListRootsResult).
	Ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error)
}

// Output is what a Handler produced. The engine turns it into a tool result:
// when the tool has a `result` block, its expressions are evaluated over Vars
// (and `args`); otherwise Text, Media and Structured are used as they are.
type Output struct {
	// Vars are the values result expressions see, e.g. body, status and
	// headers for HTTP; stdout, stderr and exit_code for shell; rows,
	// columns and row_count for SQL. Keys must match Handler.Vars.
	Vars map[string]any
	// Structured is the default structuredContent (a JSON object, as
	// map[string]any), or nil.
	Structured map[string]any
	// Text is the default text content. When empty and Structured is set, the
	// engine uses Structured's JSON.
	Text string
	// Media are binary contents (images, audio) returned as they are.
	Media []Media
	// Result, when not nil, is a whole MCP tool result from an MCP server
	// the adapter proxies (adapters/mcpadapter). A tool without a result block
	// passes it on as it is (its content blocks, structuredContent and
	// isError), after the same redaction and checks as any other result;
	// Text, Media and Structured are then ignored.
	Result *mcp.CallToolResult
	// InputRequired, when not nil, ends the call with questions for the
	// client instead of a result (only for a Request with Rounds); the
	// rest of the Output is ignored.
	InputRequired *InputRequired
	// Task, when not nil, says the backend answered with a task of its
	// own, which the engine follows as an mcpd task (only for a Request
	// with Tasks); the rest of the Output is ignored.
	Task *BackendTask
}

// Media is one binary content block.
type Media struct {
	MIMEType string
	Data     []byte
}

// Registry maps block names to adapters. It is built in main and passed in;
// there is no global registry.
type Registry struct {
	tools    map[string]Adapter
	backends map[string]BackendAdapter
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]Adapter{}, backends: map[string]BackendAdapter{}}
}

// Register adds an adapter under the tool-level block name that selects it.
// A BackendAdapter's backend block is registered too. Registering a name
// twice is a programming error and panics.
func (r *Registry) Register(block string, a Adapter) {
	if _, dup := r.tools[block]; dup {
		panic(fmt.Sprintf("adapter: block %q registered twice", block))
	}
	r.tools[block] = a
	if ba, ok := a.(BackendAdapter); ok {
		name := ba.BackendBlock()
		if _, dup := r.backends[name]; dup {
			panic(fmt.Sprintf("adapter: backend block %q registered twice", name))
		}
		r.backends[name] = ba
	}
}

// Adapter returns the adapter registered for a tool-level block name.
func (r *Registry) Adapter(block string) (Adapter, bool) {
	a, ok := r.tools[block]
	return a, ok
}

// BackendAdapter returns the adapter owning a top-level backend block type.
func (r *Registry) BackendAdapter(block string) (BackendAdapter, bool) {
	a, ok := r.backends[block]
	return a, ok
}

// ToolBlocks lists the registered tool-level block names, sorted.
func (r *Registry) ToolBlocks() []string { return sortedKeys(r.tools) }

// BackendBlocks lists the registered backend block types, sorted.
func (r *Registry) BackendBlocks() []string { return sortedKeys(r.backends) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
