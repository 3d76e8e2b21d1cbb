package adapter

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capabilities. The engine and cmd/mcpd never ask an adapter for its name
// ("http", "sql"): when they need something only some adapters can give,
// they ask for one of these optional interfaces (what a handler only
// reports, it reports in its Traits). A new adapter gets each of these
// features by implementing the interface, with no edit outside its package.

// A Pinger is a Backend that can check that its service answers, for the
// readiness probe (/readyz with --ready-backends). Its error must not
// contain secrets.
type Pinger interface {
	Ping(ctx context.Context) error
}

// A PoolReporter is a Backend that holds connection pools, whose
// statistics the metrics export (mcpd_db_client_connections and friends).
type PoolReporter interface {
	PoolStats() []PoolStats
}

// PoolStats are the statistics of one connection pool.
type PoolStats struct {
	Name string // the pool's name: the backend block's name
	Mode string // which of the backend's pools, e.g. "rw" or "ro"

	Idle, InUse, MaxOpen int // MaxOpen 0: no limit
	WaitCount            int64
	WaitDuration         time.Duration
}

// A Remote is a Handler whose calls reach a service over the network (a
// database, an HTTP API). Its calls' spans are CLIENT spans, and carry
// RemoteAttributes: what is known at load time of the service, in the
// terms of OpenTelemetry's semantic conventions (server.address,
// db.system.name, ...). What only a call knows it adds with Annotate.
type Remote interface {
	RemoteAttributes() []Attribute
}

// An Attribute is one key and value of a span: the value is a string, an
// int64 (or int) or a bool. It never holds a secret or an argument's value
// that the tool marks sensitive.
type Attribute struct {
	Key   string
	Value any
}

type annotateKey struct{}

// WithAnnotate returns a context under which Annotate hands attributes to
// f: the engine sets it on the context of a call whose span is recorded.
func WithAnnotate(ctx context.Context, f func(...Attribute)) context.Context {
	return context.WithValue(ctx, annotateKey{}, f)
}

// Annotate adds attributes to the span of the call ctx belongs to (such
// as http.response.status_code); it does nothing when the call is not
// traced. Adapters call Annotating first when building the attributes
// costs anything.
func Annotate(ctx context.Context, attrs ...Attribute) {
	if f, ok := ctx.Value(annotateKey{}).(func(...Attribute)); ok {
		f(attrs...)
	}
}

// Annotating reports whether Annotate would record anything under ctx.
func Annotating(ctx context.Context) bool {
	_, ok := ctx.Value(annotateKey{}).(func(...Attribute))
	return ok
}

// A Mocker is a BackendAdapter whose backends send HTTP requests, so that
// `mcpd test` can answer them with a mock server: a test's mock blocks
// name such backends.
type Mocker interface {
	// MockBackend returns a copy of the backend block's body whose
	// requests go to serverURL instead (an http://127.0.0.1:PORT URL),
	// keeping what the adapter keeps of the original address (the base
	// path) and the rest of the block as it is. b.Body is not modified.
	MockBackend(b *BackendBlock, serverURL string) (hcl.Body, error)
}

// A Delegation is the identity a call presented to its backend, when the
// adapter sent one of its own making rather than the config's fixed
// credentials: the audit log and the call's span record it beside the
// caller. It never holds a token.
type Delegation struct {
	// Mode is how the identity was obtained: "client_credentials" (the
	// service's own), "token_exchange" (the caller's, exchanged for this
	// backend) or "passthrough" (the caller's token, forwarded).
	Mode string
	// Subject is whom the backend's token names (the sub claim): the
	// caller for an exchange or a passthrough, the client for client
	// credentials.
	Subject string
	// Actor is who acts for the subject (the act claim's sub of an
	// exchanged token, RFC 8693 §4.1); "" when there is none.
	Actor string
}

// A DelegationRecorder receives the Delegation of a call. The engine puts
// one in the context of each call, under DelegationKey.
type DelegationRecorder interface {
	RecordDelegation(Delegation)
}

// DelegationKey is the context key of the call's DelegationRecorder.
type DelegationKey struct{}

// RecordDelegation tells the engine which identity the call presented to
// its backend; it does nothing when nobody records calls.
func RecordDelegation(ctx context.Context, d Delegation) {
	if r, ok := ctx.Value(DelegationKey{}).(DelegationRecorder); ok {
		r.RecordDelegation(d)
	}
}

// A ToolContributor is a BackendConfig whose backend declares tools of its
// own at run time, such as an MCP server's tools/list (adapters/mcpadapter's
// expose block). Every snapshot build asks it what the live backend
// contributes now, and serves those tools beside the config's: a tool the
// config declares wins over a contributed one of the same name. Together
// with Watcher this is how tools discovered at run time reach clients:
// the backend signals a change, the server rebuilds its snapshot through
// the reload path, and the snapshot diff sends one list_changed.
type ToolContributor interface {
	// ContributedTools returns the tools b (the live backend opened from
	// this config's settings, or kept from an earlier config with the same
	// fingerprint) contributes. It must not block: it reads what the
	// backend last learned, and returns none before it learned anything.
	ContributedTools(b Backend) []ContributedTool
}

// ContributedTool is one tool a backend contributes.
type ContributedTool struct {
	Name, Title, Description string
	// InputSchema and OutputSchema (nil: none) are JSON Schema objects as
	// decoded from JSON.
	InputSchema, OutputSchema map[string]any
	// Annotations are the tool's hints as the backend gives them (nil:
	// none).
	Annotations *mcp.ToolAnnotations
	// Scopes are required to list and call the tool.
	Scopes []string
	// Handler runs a call; its Request.Args are the arguments validated
	// against InputSchema.
	Handler Handler
	// Declared is the tool as the backend itself declared it (an
	// upstream's tools/list entry, before any prefix, rename or
	// description of the config's): what the lock file pins
	// (engine/lock). Nil: the tool is pinned as it is served.
	Declared *mcp.Tool
}

// A DriftPolicy is a ToolContributor (or Resource-, PromptContributor)
// whose block declares what happens to a contributed definition that
// differs from the lock file, or that the lock does not hold (see
// engine/lock): OnDrift returns "quarantine", "allow" or "refuse", and
// whether the block set it (a block that did not is pinned only when a
// lock file exists).
type DriftPolicy interface {
	OnDrift() (policy string, declared bool)
}

// A Syncer is a Backend that learns its contributions at run time and can
// be asked to learn them now: Sync starts it if needed and returns once it
// has listed what it contributes, or failed to (`mcpd lock`).
type Syncer interface {
	Sync(ctx context.Context) error
}

// A Watcher is a Backend whose contributions (ToolContributor) change at
// run time. The server watches the backends of the snapshot it serves:
// Watch registers changed, which the backend calls (from any goroutine,
// without holding its locks) when what it contributes may have changed,
// and returns the function that unregisters it. A backend may begin its
// work (connect, list) on the first Watch: commands that only load a
// config (validate, lint) never call it.
type Watcher interface {
	Watch(changed func()) (stop func())
}

// A ResourceContributor is a BackendConfig whose backend declares
// resources and resource templates at run time (an MCP server's
// resources/list), served like ToolContributor's tools: the config's own
// resources win over contributed ones with the same URI (or template).
type ResourceContributor interface {
	ContributedResources(b Backend) ([]ContributedResource, []ContributedTemplate)
}

// ContributedResource is one static resource a backend contributes.
type ContributedResource struct {
	Def    *mcp.Resource
	Scopes []string
	// Read reads it (uri is Def.URI) under the server's default timeout.
	Read func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
}

// ContributedTemplate is one resource template a backend contributes.
type ContributedTemplate struct {
	Def    *mcp.ResourceTemplate
	Scopes []string
	// Read reads one instance of the template.
	Read func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
}

// A PromptContributor is a BackendConfig whose backend declares prompts at
// run time (an MCP server's prompts/list); the config's own prompts win.
type PromptContributor interface {
	ContributedPrompts(b Backend) []ContributedPrompt
}

// ContributedPrompt is one prompt a backend contributes.
type ContributedPrompt struct {
	Def    *mcp.Prompt
	Scopes []string
	// Declared is the prompt as the backend declared it (before the
	// config's prefix), for the lock file; nil: Def.
	Declared *mcp.Prompt
	// Get gets the prompt. Like the call of a handler that relays client
	// requests (Traits.RelaysClientRequests), it may ask the
	// request's client: through req.Client while it waits, or, for a client
	// asked by input_required rounds (req.Rounds), by answering with
	// PromptOutput.InputRequired, whose state the engine seals and binds
	// to the prompt, its arguments and the caller, as for a tool.
	Get func(ctx context.Context, req *PromptRequest) (*PromptOutput, error)
}

// PromptRequest is one get of a contributed prompt: for prompts what
// Request is for tools. The caller is the context's principal, as for a
// call.
type PromptRequest struct {
	Prompt string            // mcpd's name of the prompt, for messages
	Args   map[string]string // as the client sent them: the backend checks them
	// Client and Rounds are as in Request: at most one is set, neither
	// when the client cannot be asked (a get from the CLI).
	Client ClientAsker
	Rounds *Rounds
}

// PromptOutput is what a contributed prompt's Get produced: the prompt,
// or questions for the client instead (only for a PromptRequest with
// Rounds).
type PromptOutput struct {
	Result        *mcp.GetPromptResult
	InputRequired *InputRequired
}

// A Completer is a PromptContributor or ResourceContributor whose backend
// completes the arguments of the prompts and template variables it
// contributes (an MCP server's completion/complete). The engine asks it
// only for a reference the caller may see through its endpoint, as it
// would get the prompt or read the template.
type Completer interface {
	// Complete completes req.Argument of req.Ref, a prompt or template as
	// the engine serves it (the config maps it to the backend's own
	// naming). It returns nil, nil when the backend offers no completion
	// for it (it declared none, say). ctx carries the server's timeout.
	Complete(ctx context.Context, b Backend, req *CompleteRequest) (*mcp.CompletionResultDetails, error)
}

// CompleteRequest is one completion/complete of a contributed prompt or
// template.
type CompleteRequest struct {
	Ref      *mcp.CompleteReference // ref/prompt by mcpd's name, ref/resource by mcpd's URI template
	Argument string                 // the argument (template variable) to complete
	Value    string                 // what the user typed of it so far
	// Context are the arguments already resolved (nil: none), by the
	// names the prompt or template lists.
	Context map[string]string
}

// A ResourceSubscriber is a ResourceContributor whose backend can tell
// when a resource it contributes changes (an MCP server's
// resources/subscribe). The engine counts its own clients' subscriptions
// and holds one subscription per URI here while any of them wants it, so
// a backend is asked once however many clients subscribe.
type ResourceSubscriber interface {
	// SubscribeResource subscribes to uri (as the engine serves it: a
	// contributed resource or an instance of a contributed template) and
	// calls updated with that URI, from any goroutine and without holding
	// its locks, whenever the backend reports a change, until release is
	// called. A backend that cannot tell returns ErrNotSubscribable; one
	// that is not reachable now may record the subscription and make it
	// once it is. release must be safe to call once from any goroutine
	// after ctx has ended.
	SubscribeResource(ctx context.Context, b Backend, uri string, updated func(uri string)) (release func(), err error)
}

// ErrNotSubscribable is what a ResourceSubscriber returns for a resource
// whose backend cannot report its changes.
var ErrNotSubscribable = errors.New("the backend does not report changes of this resource")

// A ServiceReporter is a Backend that supervises a service of its own (an
// MCP upstream's process or session), whose state the metrics export
// (mcpd_upstream_up and friends).
type ServiceReporter interface {
	ServiceStatus() ServiceStatus
}

// ServiceStatus is the state of one supervised service.
type ServiceStatus struct {
	Name      string // the backend block's name
	Transport string // "stdio", "http"
	// State is "idle" (not started yet), "connecting", "up", "down" or
	// "closed".
	State    string
	Restarts int   // connections lost and made again
	Calls    int64 // calls sent to it
	Failures int64 // calls that failed to reach it or were refused
	Tools    int   // tools it listed last (0 when it is not listed)
	// IdleSessions and BusySessions are the sessions of its pool, for
	// calls that have a session to themselves (an HTTP MCP upstream's),
	// and SessionConnects the sessions the pool connected so far.
	IdleSessions, BusySessions int
	SessionConnects            int64
	// UnattributedRequests, UnattributedRecords and UnattributedProgress
	// count what an MCP upstream sent (requests to its client, log
	// records, progress) that could not be attributed to a live call of
	// its caller, and was dropped.
	UnattributedRequests, UnattributedRecords, UnattributedProgress int64
	// StderrDropped counts the lines of a stdio upstream's stderr left out
	// of the log (over its rate), StrayLines the lines of its stdout that
	// were skipped because they were not messages.
	StderrDropped, StrayLines int64
	// Dropped counts the definitions (tools, prompts, resources) left out
	// of its listings, and messages left out, by reason: "schema" (a
	// schema validating against which could be unbounded, see
	// schema.CheckBounds), "depth" (nested deeper than the SDK decodes),
	// "identifier" (an identifier that cannot be passed on: control
	// characters, escapes; entries of its listings at every listing,
	// completion values, resource links and contents of its results).
	Dropped map[string]int64
}
