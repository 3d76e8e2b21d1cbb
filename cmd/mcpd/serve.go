package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpd/mcpd/engine/proc"
	"github.com/mcpd/mcpd/engine/reload"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// stringList is a repeatable flag of strings; commas also separate.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

func serveCmd(args []string, stderr io.Writer) error {
	fs, c := newFlagSet("serve", stderr)
	stdio := fs.Bool("stdio", false, "serve one client on stdin/stdout (for desktop hosts)")
	toolset := fs.String("toolset", "", "with --stdio: serve only this toolset's tools, resources and prompts (over HTTP, each toolset is served on /mcp/NAME)")
	addr := fs.String("http", "127.0.0.1:8080", "address for Streamable HTTP; the endpoint is /mcp")
	var hosts, origins stringList
	fs.Var(&hosts, "allowed-host", "Host header accepted besides loopback names (repeatable; * for any)")
	fs.Var(&origins, "allowed-origin", "Origin accepted besides loopback origins (repeatable; * for any)")
	noFastPath := fs.Bool("no-fast-path", false, "serve every 2026-07-28 request through the SDK's handler, without the stateless fast path for tools/call, tools/list, server/discover, prompts/get and resources/read (same answers, more CPU; see docs/performance.md)")
	noLegacyFastPath := fs.Bool("no-legacy-fast-path", false, "serve every request of a 2025-11-25 session through the SDK's handler, without the fast path for tools/call and tools/list (same answers, more CPU; see docs/performance.md)")
	jsonResp := fs.Bool("json-response", false, "answer HTTP requests with application/json instead of SSE where possible; a JSON answer carries no notifications, so progress of a 2026-07-28 call is dropped")
	listTTL := fs.Duration("list-ttl", 10*time.Second, "how long clients of the 2026 protocol may cache lists (ttlMs)")
	sessionTimeout := fs.Duration("session-timeout", 10*time.Minute, "close legacy HTTP sessions idle this long (0: never)")
	limits := addHTTPLimitFlags(fs)
	noWatch := fs.Bool("no-watch", false, "do not reload when config files change (SIGHUP still reloads)")
	poll := fs.Duration("poll", 0, "also check config files this often, for file systems without inotify (e.g. 2s)")
	ops := addOpsFlags(fs)
	auditFlags := addAuditFlags(fs)
	authf := addAuthFlags(fs)
	ui := fs.Bool("ui", false, "serve a browser console under /ui/ on the HTTP listener (default: on for a loopback --http address, off otherwise; --ui=false turns it off; see docs/cli.md)")
	if err := parse(fs, args); err != nil {
		return err
	}
	uiSet := false
	fs.Visit(func(f *flag.Flag) { uiSet = uiSet || f.Name == "ui" })
	if c.logFormat != "text" && c.logFormat != "json" {
		return fmt.Errorf("unknown --log-format %q (text or json)", c.logFormat)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := limits.check(); err != nil {
		return err
	}
	if *toolset != "" && !*stdio {
		return fmt.Errorf("--toolset selects what stdio serves; over HTTP every toolset is served on its own path, /mcp/%s (and server.default_toolset chooses what /mcp serves)", *toolset)
	}
	if *ui && uiSet && *stdio {
		return fmt.Errorf("--ui needs the HTTP listener: the console calls /mcp; drop --stdio")
	}
	logger := c.logger(stderr)
	var current snapshot.Current
	var reloader *reload.Reloader // set below, before any request is served
	con := newConsole(consoleOn(*ui, uiSet, *stdio, *addr), logger, func() []string {
		if s := current.Load(); s != nil {
			return s.ToolsetNames()
		}
		return nil
	}, current.Load, func() { reloader.Trigger() })
	// Every program mcpd started (shell tools, stdio upstreams) dies with
	// it, with whatever it started, whichever way mcpd exits (see
	// engine/proc): on return here, which every shutdown and the end of
	// stdio's input reach, and in shutdownSignals on a forced exit; on
	// SIGKILL, by the supervisor's helper process.
	procs := proc.NewSupervisor()
	defer endPrograms(procs, logger)
	conn := newConnect(logger, &current)
	reg := registryServing(procs, conn)
	l, err := load(c, reg, stderr)
	if err != nil {
		return err
	}
	current.Swap(l.Snapshot)
	if err := conn.Check(); err != nil {
		return err
	}
	defer func() { current.Load().Close() }()
	metrics, tracer, flushTraces, err := telemetrySetup(ops, logger)
	if err != nil {
		return err
	}
	defer flushTraces()
	auditLog, err := openAudit(auditFlags, logger, metrics)
	if err != nil {
		return err
	}
	defer closeAudit(auditLog, logger)
	srv := serve.New(&current, serve.Options{ListTTL: *listTTL, Logger: logger, MaxInflight: limits.maxInflight, OutputBudget: int64(limits.maxOutputBudget), Streams: limits.streams(),
		Metrics: metrics, Tracer: tracer, ShutdownDelay: ops.shutdownDelay, ShutdownGrace: ops.shutdownGrace, AnswerWait: answerWait,
		Audit: auditLog, Generation: func() int { return reloader.Status().Generation() }, OnCall: onCall(con)})

	ctx, cancel := shutdownSignals(logger, func() { killPrograms(procs, logger) })
	defer cancel()
	s := l.Snapshot
	if *toolset != "" {
		if _, ok := s.Toolset(*toolset); !ok {
			return unknownToolset(s, *toolset)
		}
	}
	logger.Info("config loaded", "files", strings.Join(l.Files, ","), "tools", len(s.Tools), "resources", len(s.Resources)+len(s.Templates), "prompts", len(s.Prompts))

	reloader = &reload.Reloader{
		Paths: c.paths(), Registry: reg, Current: &current, Notifier: srv,
		Version: mcpdVersion(), Logger: logger, Poll: *poll,
	}
	if con != nil {
		reloader.OnStatus = con.SetReloadStatus
	}
	reloader.Init(l)
	watchState(metrics, reloader, srv, &current)
	watchDrift(&current, auditLog, metrics, func() int { return reloader.Status().Generation() })
	admin := opsMux(health(ops, reloader, srv, &current), metrics)
	if ops.adminAddr != "" {
		stop, err := startAdmin(ops.adminAddr, admin, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	go func() {
		if err := reloader.Run(ctx, !*noWatch); err != nil {
			logger.Error("config watching stopped", "err", err)
		}
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			logger.Info("SIGHUP: reloading config")
			reloader.Trigger()
			auditLog.Reopen()
		}
	}()

	if *stdio {
		logger.Info("serving MCP on stdio", "toolset", *toolset)
		if err := runStdio(ctx, srv, *toolset, logger); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	ln, err := limits.listen(*addr)
	if err != nil {
		return listenError(*addr, err)
	}
	if mayHaveReplicas(current.Load(), ln) && current.Load().NeedsSharedStateKey() {
		// Checked at start only: a reload that adds the first ask block
		// is rarer than a deployment that never set the key.
		logger.Warn("tools or prompts ask their client for input and server.request_state_key is not set: each process signs requestState with a random key, so with more than one replica an answer that reaches another replica is refused; set request_state_key = env(\"MCPD_REQUEST_STATE_KEY\") to the same value on every replica (docs/operations.md, \"Scale-out\")")
	}
	ln, scheme, authRequired, err := authf.listener(ln, &current, logger)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	httpOpts := limits.httpOptions(serve.HTTPOptions{
		AllowedHosts: hosts, AllowedOrigins: origins, JSONResponse: *jsonResp, NoFastPath: *noFastPath, NoLegacyFastPath: *noLegacyFastPath, SessionTimeout: *sessionTimeout,
	})
	mountMCP(mux, srv.HTTPHandler(httpOpts), &current, authRequired, httpOpts, logger)
	mountConnect(mux, conn, scheme, ln, httpOpts)
	if ops.adminAddr == "" {
		mux.Handle("/", serve.HostGuard(httpOpts, admin))
	}
	hs := limits.httpServer(metrics.HTTPMiddleware(mux))
	if con != nil && !uiSet && !loopbackListener(ln) {
		// On by default only where the address said loopback and the
		// listener is (a "localhost" that resolved elsewhere is not).
		con.Close()
		con = nil
	}
	if con != nil {
		mountConsole(mux, con, srv, &current, authRequired, httpOpts, logger)
		hs.RegisterOnShutdown(con.Close)
	}
	endpoint := fmt.Sprintf("%s://%s/mcp", scheme, ln.Addr())
	logger.Info("serving MCP over Streamable HTTP", "url", endpoint, "auth", current.Load().Auth != nil)
	if con != nil {
		logger.Info("serving the console", "url", consoleURL(scheme, ln.Addr()))
	}
	if loopbackListener(ln) {
		logger.Info(nextSteps(con != nil, scheme, ln.Addr(), endpoint))
	}
	return runHTTP(ctx, hs, ln, srv, logger)
}

// consoleOn decides whether serve runs the console: as --ui (or MCPD_UI)
// says when given; otherwise on for an HTTP address on loopback, where
// only this machine can reach it and it sits behind the same Host/Origin
// checks and authentication as /mcp (docs/security.md, "The console"),
// and off for any other address or stdio.
func consoleOn(ui, uiSet, stdio bool, addr string) bool {
	if uiSet {
		return ui
	}
	return !stdio && loopbackAddr(addr)
}

// loopbackAddr reports whether the --http address names a loopback host:
// localhost or a loopback IP. An empty host (all interfaces) is not.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// mayHaveReplicas reports whether other processes may serve the same
// clients: the config shares state through Redis (a state block), or the
// listener takes connections from other machines (a load balancer). A
// single process on loopback has no replica to disagree with, so the
// request_state_key warning would only look like a misconfiguration there.
func mayHaveReplicas(s *snapshot.Snapshot, ln net.Listener) bool {
	return s.State() != nil || !loopbackListener(ln)
}

// nextSteps is the line a local serve ends its start-up with: where the
// console is, and how to point a host at the server.
func nextSteps(console bool, scheme string, addr net.Addr, endpoint string) string {
	host := fmt.Sprintf("point an MCP host at this server with the snippet `mcpd client-config --host HOST --http %s` prints (HOST: claude-code, claude-desktop, cursor, vscode or codex)", endpoint)
	if !console {
		return "next: " + host
	}
	return fmt.Sprintf("next: open %s in a browser to see and call the tools; %s", consoleURL(scheme, addr), host)
}

// listenError says which flag picks another address when the port is
// taken: "bind: address already in use" alone leaves a newcomer guessing.
func listenError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s is already in use (another mcpd serve?): pick another address with --http, e.g. --http 127.0.0.1:8081, or stop what listens there: %w", addr, err)
	}
	return fmt.Errorf("--http %s: %w", addr, err)
}
