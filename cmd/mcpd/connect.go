package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/proc"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// newConnect is the service of the per-user connect flow (engine/connect):
// its grants go to the Redis of the config's state block when it has one,
// read at each use so that a reload that adds or changes it is followed.
func newConnect(logger *slog.Logger, current *snapshot.Current) *connect.Service {
	return connect.NewService(connect.Options{Logger: logger, Shared: func() grants.Backend {
		if s := current.Load(); s != nil {
			return connect.SharedState(s.State())
		}
		return nil
	}})
}

// mountConnect serves the authorization callback on the listener, behind
// the Host check and without mcpd's authentication: a browser comes back
// from the authorization server with no bearer token, and the single-use
// state is what proves the request (docs/security.md). On a loopback
// listener the callback's default address is the listener's; elsewhere
// the address users' browsers reach is configured (callback_url).
func mountConnect(mux *http.ServeMux, conn *connect.Service, scheme string, ln net.Listener, httpOpts serve.HTTPOptions) {
	mux.Handle(connect.CallbackPath, serve.HostGuard(httpOpts, conn.CallbackHandler()))
	if loopbackListener(ln) {
		conn.SetListener(fmt.Sprintf("%s://%s", scheme, ln.Addr()))
	}
}

// grantsCmd lists and revokes the grants users gave mcpd (an admin's
// view): those in the shared state (Redis) of the config's state block.
// Grants of a server without one live in its memory only; they end with
// the process.
func grantsCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("grants", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 || (rest[0] != "list" && rest[0] != "revoke") {
		fs.Usage()
		return exitError(2)
	}
	logger := c.logger(stderr)
	procs := proc.NewSupervisor()
	defer endPrograms(procs, logger)
	var current snapshot.Current
	conn := newConnect(logger, &current)
	l, err := load(c, registryServing(procs, conn), stderr)
	if err != nil {
		return err
	}
	current.Swap(l.Snapshot)
	defer l.Snapshot.Close()
	if !conn.Shared() {
		return fmt.Errorf("the config has no state block: grants live in the memory of each `mcpd serve` and end with it (restart it to revoke them all); see docs/gateway.md, \"Per-user authorization\"")
	}
	if err := conn.Check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch rest[0] {
	case "list":
		upstream := ""
		if len(rest) > 1 {
			upstream = rest[1]
		}
		list, err := conn.List(ctx, upstream)
		if err != nil {
			return err
		}
		if *asJSON {
			b, _ := json.MarshalIndent(list, "", "  ")
			fmt.Fprintln(stdout, string(b))
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UPSTREAM\tPRINCIPAL\tSCOPE\tEXPIRES\tREFRESHABLE")
		for _, g := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", g.Upstream, g.Principal, g.Scope, g.Expiry.UTC().Format(time.RFC3339), g.Refreshable)
		}
		return tw.Flush()
	default:
		if len(rest) != 3 {
			return fmt.Errorf("usage: mcpd grants revoke UPSTREAM PRINCIPAL (as `mcpd grants list` shows them)")
		}
		ok, err := conn.Revoke(ctx, rest[1], rest[2])
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no grant of %s for upstream %s", rest[2], rest[1])
		}
		fmt.Fprintf(stdout, "revoked the grant of %s for upstream %s\n", rest[2], rest[1])
		return nil
	}
}
