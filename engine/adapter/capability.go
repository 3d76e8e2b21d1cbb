package adapter

import (
	"context"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Capabilities. The engine and cmd/mcpd never ask an adapter for its name
// ("http", "sql"): when they need something only some adapters can give,
// they ask for one of these optional interfaces, as they do for
// EvalReporter and OutputBounder. A new adapter gets each of these
// features by implementing the interface, with no edit outside its package.

// A Pinger is a Backend that can check that its service answers, for the
// readiness probe (/readyz with --ready-backends). Its error must not
// contain secrets.
type Pinger interface {
	Ping(ctx context.Context) error
}

// A ReadOnlyReporter is a Handler that knows whether its calls can change
// anything (a sql block's read_only, enforced by the database). The
// engine caches only the results of tools that only read: for a Handler
// that does not implement it, the tool's annotations must say read_only.
type ReadOnlyReporter interface {
	ReadOnly() bool
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

// A DryRunner is a Handler that honours WithDryRun: under it, the handler
// records what it would run and runs nothing. `mcpd test`'s expect_argv
// and expect_stdin are for the tools whose handler reports true.
type DryRunner interface {
	DryRuns() bool
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
