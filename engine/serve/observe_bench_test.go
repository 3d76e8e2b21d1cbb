package serve_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpd/mcpd/engine/audit"
	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// BenchmarkObserveCost is one tools/call of a declarative tool through the
// SDK over an in-memory transport: the whole per-call path except the
// wire. "bare" is the server without the observe middleware (the code
// before metrics, tracing and draining); "metrics" is the default (metrics
// on, tracing off); "tracing" records spans (no exporter) for comparison.
// Run with -count to interleave them.
func BenchmarkObserveCost(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(testConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	f := newFake()
	l := loader.Load([]string{dir}, f.registry(), nil, "test")
	if l.Snapshot == nil {
		b.Fatalf("config does not load: %v", l.Diagnostics)
	}
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	defer cur.Load().Close()
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())

	for _, bc := range []struct {
		name string
		opts serve.Options
	}{
		{"bare", serve.Bare(serve.Options{Logger: quiet})},
		{"metrics", serve.Options{Logger: quiet, Metrics: telemetry.NewMetricsFor(buildinfo.Read("bench", ""))}},
		{"tracing", serve.Options{Logger: quiet, Metrics: telemetry.NewMetricsFor(buildinfo.Read("bench", "")), Tracer: tp.Tracer("bench")}},
		// The audit log's cost in the call's goroutine: building, redacting
		// and encoding the line; the writing is another goroutine's.
		{"audit", serve.Options{Logger: quiet, Metrics: telemetry.NewMetricsFor(buildinfo.Read("bench", "")), Audit: audit.New(io.Discard, audit.Options{Logger: quiet})}},
		// mcpd serve --ui: the call record built for the console (whose
		// own share is BenchmarkRecord in authoring/console).
		{"oncall", serve.Options{Logger: quiet, Metrics: telemetry.NewMetricsFor(buildinfo.Read("bench", "")), OnCall: func(*event.Call) {}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := serve.New(cur, bc.opts)
			ct, st := mcp.NewInMemoryTransports()
			ctx := context.Background()
			ss, err := srv.SDK().Connect(ctx, st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			params := &mcp.CallToolParams{Name: "zeta_greet", Arguments: map[string]any{"name": "bench"}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := cs.CallTool(ctx, params)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkObserveMiddleware is the observe middleware alone around a
// handler that does nothing, for one tools/call: what metrics, draining and
// tracing add to every call, without the noise of the rest of the path.
func BenchmarkObserveMiddleware(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(testConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	l := loader.Load([]string{dir}, newFake().registry(), nil, "test")
	cur := &snapshot.Current{}
	cur.Swap(l.Snapshot)
	defer cur.Load().Close()
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	noop := func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil }
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "zeta_greet"}}
	for _, bc := range []struct {
		name string
		opts serve.Options
	}{
		{"bare", serve.Options{Logger: quiet}},
		{"drain-only", serve.Options{Logger: quiet}},
		{"metrics", serve.Options{Logger: quiet, Metrics: telemetry.NewMetricsFor(buildinfo.Read("bench", ""))}},
		{"metrics+tracing", serve.Options{Logger: quiet, Metrics: telemetry.NewMetricsFor(buildinfo.Read("bench", "")), Tracer: tp.Tracer("bench")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := mcp.MethodHandler(noop)
			if bc.name != "bare" {
				h = serve.New(cur, bc.opts).Observe(noop)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, "tools/call", req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
