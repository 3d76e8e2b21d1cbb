package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/mcpd/mcpd/authoring/console"
	"github.com/mcpd/mcpd/engine/auth"
	"github.com/mcpd/mcpd/engine/event"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// uiPrefix is where `mcpd serve --ui` serves the console. It shares the
// MCP listener (even with --admin-http) because the page calls /mcp: same
// origin, so the Origin check needs no widening, and the same auth.
const uiPrefix = "/ui/"

// newConsole returns the console for --ui, or nil.
//
// toolsets names the toolsets of the config being served, for the page's
// toolset picker.
// current and reload let the console show the drifts from the lock file
// and approve them (see console.Options).
func newConsole(on bool, logger *slog.Logger, toolsets func() []string, current func() *snapshot.Snapshot, reload func()) *console.Console {
	if !on {
		return nil
	}
	return console.New(console.Options{Logger: logger, Toolsets: toolsets, Current: current, Reload: reload})
}

// onCall is serve.Options.OnCall for con: nil without a console, so that
// no call pays anything for the console.
func onCall(con *console.Console) func(*event.Call) {
	if con == nil {
		return nil
	}
	return con.Record
}

// mountConsole serves the console under /ui/ on mux: the page and its
// assets behind the Host/Origin guard (they hold no data, and the page must
// load to ask for a token), the event stream behind the same guard and
// authentication as /mcp, and counted with the other long-lived streams
// (--max-streams-per-caller, --max-streams).
func mountConsole(mux *http.ServeMux, con *console.Console, srv *serve.Server, current *snapshot.Current, required bool, httpOpts serve.HTTPOptions, logger *slog.Logger) {
	mw := &auth.Middleware{Current: func() *auth.Config { return current.Load().Auth }, Required: required, Logger: logger}
	h := con.Handler(uiPrefix)
	mux.Handle(uiPrefix, serve.HostGuard(httpOpts, h))
	mux.Handle(uiPrefix+"events", serve.HostGuard(httpOpts, mw.Wrap(srv.LimitStreams(serve.StreamConsole, h))))
	mux.Handle(uiPrefix+"lock/approve", serve.HostGuard(httpOpts, mw.Wrap(h)))
	// The caller's own tasks (authoring/console/tasks.go), behind the same
	// authentication: the page cancels them through /mcp.
	con.SetTasks(srv.TasksOf)
	mux.Handle(uiPrefix+"tasks", serve.HostGuard(httpOpts, mw.Wrap(h)))
}

func consoleURL(scheme string, addr net.Addr) string {
	return fmt.Sprintf("%s://%s%s", scheme, addr, uiPrefix)
}
