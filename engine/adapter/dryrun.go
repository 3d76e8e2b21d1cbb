package adapter

import "context"

// Invocation is what an adapter that starts processes would have run: the
// record a dry run makes instead of running it.
type Invocation struct {
	Argv []string
	// Stdin is the standard input, nil for none.
	Stdin *string
	// Dir is the working directory, "" for mcpd's own.
	Dir string
}

type dryRunKey struct{}

// WithDryRun returns a context under which an adapter that starts processes
// (shell) hands what it would run to record and returns an empty, successful
// output instead of running it. `mcpd test` uses it for a test's
// expect_argv; nothing else sets it.
func WithDryRun(ctx context.Context, record func(Invocation)) context.Context {
	return context.WithValue(ctx, dryRunKey{}, record)
}

// DryRun returns the recorder of a dry run, or nil when ctx is not one.
func DryRun(ctx context.Context) func(Invocation) {
	f, _ := ctx.Value(dryRunKey{}).(func(Invocation))
	return f
}
