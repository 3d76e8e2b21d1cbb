package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/buildinfo"
	"github.com/mcpd/mcpd/engine/proc"
	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/snapshot"
	"github.com/mcpd/mcpd/engine/telemetry"
)

// opsFlags are serve's flags for running in production: health, metrics,
// traces and shutdown.
type opsFlags struct {
	adminAddr     string
	shutdownDelay time.Duration
	shutdownGrace time.Duration
	otlpEndpoint  string
	readyBackends bool
}

func addOpsFlags(fs *flag.FlagSet) *opsFlags {
	o := &opsFlags{}
	fs.StringVar(&o.adminAddr, "admin-http", "", "serve /healthz, /readyz and /metrics on this address instead of the MCP listener (HTTP mode) or at all (stdio mode)")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 0, "on SIGTERM, keep accepting connections this long while /readyz answers 503, so load balancers stop sending (Kubernetes: 5s)")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 25*time.Second, "on SIGTERM, how long calls in flight may run before they are cancelled and answered with a tool error")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "export traces over OTLP/HTTP to this collector base URL, e.g. http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT; none: no tracing)")
	fs.BoolVar(&o.readyBackends, "ready-check-backends", false, "/readyz also pings the SQL databases and MCP upstreams (2s timeout) and fails while one does not answer")
	return o
}

// answerWait is how long a shutdown waits, after the grace period, for the
// cancelled calls' answers to be written.
const answerWait = 5 * time.Second

// shutdownSignals returns a context cancelled by the first SIGINT or
// SIGTERM. A second one runs beforeExit and exits at once with 128+signal,
// for an operator who does not want to wait for the grace period.
func shutdownSignals(logger *slog.Logger, beforeExit func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			logger.Info("shutting down", "signal", sig.String())
			cancel()
		case <-stopped:
			return
		}
		select {
		case sig := <-ch:
			logger.Warn("second signal: exiting at once", "signal", sig.String())
			code := 1
			if s, ok := sig.(syscall.Signal); ok {
				code = 128 + int(s)
			}
			beforeExit()
			os.Exit(code)
		case <-stopped:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(stopped)
		cancel()
	}
}

// killPrograms kills the programs still running (shell tools, stdio
// upstreams) and everything they started. It does not wait for them to be
// gone (see waitPrograms): on a forced exit mcpd exits right after, and
// the supervisor finishes on its own.
func killPrograms(procs *proc.Supervisor, logger *slog.Logger) {
	if n := procs.KillAll(); n > 0 {
		logger.Warn("killing the programs still running and what they started", "programs", n)
	}
}

// programsWait bounds how long mcpd's exit waits for its supervisor to
// report everything it started dead.
const programsWait = 5 * time.Second

// endPrograms kills the programs still running and waits (a few seconds
// at most) until they and everything they started are dead, so that none
// outlives a normal exit even briefly.
func endPrograms(procs *proc.Supervisor, logger *slog.Logger) {
	killPrograms(procs, logger)
	ctx, cancel := context.WithTimeout(context.Background(), programsWait)
	defer cancel()
	if err := procs.Wait(ctx); err != nil {
		logger.Warn("the process supervisor did not finish in time", "err", err)
	}
}

// telemetrySetup builds the metrics (always) and, when an OTLP endpoint is
// configured, the tracer. shutdown flushes the last spans.
func telemetrySetup(o *opsFlags, logger *slog.Logger) (m *telemetry.Metrics, tracer trace.Tracer, shutdown func(), err error) {
	m = telemetry.NewMetricsFor(buildinfo.Read(version, revision))
	shutdown = func() {}
	if o.otlpEndpoint == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return m, nil, shutdown, nil
	}
	tp, err := telemetry.NewTracerProvider(context.Background(), o.otlpEndpoint, mcpdVersion())
	if err != nil {
		return nil, nil, nil, err
	}
	logger.Info("exporting traces over OTLP/HTTP")
	shutdown = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			logger.Warn("flushing traces", "err", err)
		}
	}
	return m, tp.Tracer("github.com/mcpd/mcpd"), shutdown, nil
}

// watchState exports what the reloader, the server and the backends know
// to the metrics.
func watchState(m *telemetry.Metrics, r *reload.Reloader, srv *serve.Server, current *snapshot.Current) {
	m.WatchConfig(func() telemetry.ConfigState {
		st := r.Status()
		return telemetry.ConfigState{Generation: st.Generation(), Successes: st.Reloads, Failures: st.Failures, LastSuccess: st.LastOK}
	})
	m.WatchSessions(srv.SessionCount)
	m.WatchCache(func() (telemetry.CacheStats, bool) {
		mc := current.Load().MemoryCache()
		if mc == nil {
			return telemetry.CacheStats{}, false
		}
		st := mc.Stats()
		return telemetry.CacheStats{Entries: st.Entries, Bytes: st.Bytes, MaxBytes: mc.MaxBytes(), Evictions: st.Evictions}, true
	})
	m.WatchSharedState(func() *sharedstate.Status { return sharedStatus(current) })
	watchReplays(m, current)
	m.WatchPools(func() []adapter.PoolStats {
		var out []adapter.PoolStats
		current.Load().Backends(func(_, _ string, b adapter.Backend) {
			if p, ok := b.(adapter.PoolReporter); ok {
				out = append(out, p.PoolStats()...)
			}
		})
		return out
	})
	m.WatchServices(func() []adapter.ServiceStatus {
		var out []adapter.ServiceStatus
		current.Load().Backends(func(_, _ string, b adapter.Backend) {
			if s, ok := b.(adapter.ServiceReporter); ok {
				out = append(out, s.ServiceStatus())
			}
		})
		return out
	})
}

// health builds the /healthz and /readyz handlers.
func health(o *opsFlags, r *reload.Reloader, srv *serve.Server, current *snapshot.Current) *telemetry.Health {
	h := &telemetry.Health{
		Ready: srv.Ready,
		Config: func() telemetry.ConfigReport {
			st := r.Status()
			var rep telemetry.ConfigReport
			rep.Generation, rep.LoadedAt = st.Generation(), st.LastOK
			at, result := st.LastReload()
			rep.LastReload.Result = result
			if !at.IsZero() {
				rep.LastReload.Time = &at
			}
			if result == reload.ResultFailure {
				rep.LastReload.Diagnostics = st.Err
			}
			return rep
		},
	}
	h.State = func() *sharedstate.Status { return sharedStatus(current) }
	if o.readyBackends {
		h.CheckBackends = func(ctx context.Context) map[string]string { return pingBackends(ctx, current) }
	}
	return h
}

// sharedStatus is the status of the running config's shared state; nil
// without a state block.
func sharedStatus(current *snapshot.Current) *sharedstate.Status {
	st := current.Load().State()
	if st == nil {
		return nil
	}
	s := st.Status()
	return &s
}

// pingBackends pings, in parallel, every backend that can be pinged.
func pingBackends(ctx context.Context, current *snapshot.Current) map[string]string {
	snap := current.Acquire()
	defer snap.Release()
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := map[string]string{}
	snap.Backends(func(typ, name string, b adapter.Backend) {
		p, ok := b.(adapter.Pinger)
		if !ok {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Ping(ctx); err != nil {
				mu.Lock()
				failed[typ+" "+name] = err.Error()
				mu.Unlock()
			}
		}()
	})
	wg.Wait()
	return failed
}

// opsMux serves health and metrics.
func opsMux(h *telemetry.Health, m *telemetry.Metrics) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", h.Healthz)
	mux.HandleFunc("/readyz", h.Readyz)
	mux.Handle("/metrics", m.Handler())
	return mux
}

// startAdmin serves mux on addr in the background; the returned func stops
// it.
func startAdmin(addr string, mux http.Handler, logger *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin-http: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("serving health and metrics", "url", fmt.Sprintf("http://%s/metrics", ln.Addr()))
	go func() { _ = hs.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}

// runStdio serves stdio until the client closes stdin or a signal comes.
// Either way every request already read is answered, within the grace
// period, before it returns (see serve.Server.Shutdown).
// toolset, when not "", is the toolset the client sees (--toolset).
func runStdio(ctx context.Context, srv *serve.Server, toolset string, logger *slog.Logger) error {
	done := make(chan error, 1)
	// The session's own context is not the signal's: cancelling it would
	// end the session without the answers.
	go func() { done <- srv.RunStdioToolset(context.Background(), toolset) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	return <-done
}

// runHTTP serves hs on ln until a signal, then shuts down (see
// serve.Server.Shutdown): /readyz turns 503 at once; after --shutdown-delay
// the listener closes; calls in flight run for up to --shutdown-grace, then
// are cancelled and answered with a tool error; then every session closes,
// which ends notification streams, so that an open stream does not hold the
// exit back.
func runHTTP(ctx context.Context, hs *http.Server, ln net.Listener, srv *serve.Server, logger *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeHTTPServer(hs, ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		logger.Warn("shutdown", "err", err)
	}
	logger.Info("stopped")
	return nil
}

// watchReplays exports the requestStates refused as replays, counted by
// the served snapshot's Used set (carried over reloads).
func watchReplays(m *telemetry.Metrics, current *snapshot.Current) {
	m.WatchReplays(func() uint64 { return current.Load().ReplaysRefused() })
}
