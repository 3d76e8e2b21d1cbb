// Command profserve serves a config over Streamable HTTP as `mcpd serve
// --http` does (the same engine, snapshot and serve packages, the HTTP
// and SQL adapters) and writes CPU and allocation profiles when it is stopped. It
// does not apply mcpd's GC policy: run it with GOGC=400 GOMEMLIMIT=512MiB
// to profile what mcpd runs, as bench/run.sh does. Use mcpd itself for
// measurements.
//
//	profserve -c bench/configs/static.hcl --http 127.0.0.1:8080 -cpuprofile cpu.pprof -allocprofile allocs.pprof
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/mcpd/mcpd/adapters/httpadapter"
	"github.com/mcpd/mcpd/adapters/mcpadapter"
	"github.com/mcpd/mcpd/adapters/sqladapter"
	"github.com/mcpd/mcpd/bench/internal/profile"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

func main() {
	cfg := flag.String("c", "tools.hcl", "config file or directory")
	addr := flag.String("http", "127.0.0.1:8080", "address for Streamable HTTP")
	jsonResp := flag.Bool("json-response", false, "answer with application/json instead of SSE")
	cpu := flag.String("cpuprofile", "", "write a CPU profile here on SIGTERM")
	allocs := flag.String("allocprofile", "", "write an allocation profile here on SIGTERM")
	flag.Parse()
	profile.Start(*cpu, *allocs)

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slog.SetDefault(logger)
	reg := adapter.NewRegistry()
	reg.Register("http", httpadapter.New())
	reg.Register("sql", sqladapter.New())
	reg.Register("mcp", mcpadapter.New(nil))
	l := loader.Load([]string{*cfg}, reg, nil, "profserve")
	if l.Snapshot == nil {
		config.WriteDiagnostics(os.Stderr, l.Diagnostics, l.Sources)
		os.Exit(1)
	}
	var current snapshot.Current
	current.Swap(l.Snapshot)
	srv := serve.New(&current, serve.Options{ListTTL: 10 * time.Second, Logger: logger})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler(serve.HTTPOptions{JSONResponse: *jsonResp, SessionTimeout: 30 * time.Minute}))
	hs := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := hs.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "profserve:", err)
		os.Exit(1)
	}
}
