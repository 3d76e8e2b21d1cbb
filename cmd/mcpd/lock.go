package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/engine/proc"
)

const lockUsage = `usage: mcpd lock [-c PATH]... [--check | --approve NAME...] [--timeout 60s]

Records a digest of every definition mcpd serves in mcpd.lock beside the
config: the config's own tools, prompts, resources and templates, and the
tools, prompts, resources and templates each mcp_server block with an
expose block lists (the upstreams are started and listed, then stopped).

With --check, writes nothing and exits 1 when what would be served differs
from the lock, printing each definition that differs and what changed (its
description's lines, each schema value). With --approve NAME (repeatable),
updates the lock for those definitions only: NAME is a definition's name
as its upstream lists it or as mcpd serves it, a resource's URI, or an
upstream (mcp_server.NAME) for all of its definitions. Without either, the
lock is written anew from what is served now. See docs/gateway.md.
`

func lockCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("lock", stderr)
	check := fs.Bool("check", false, "write nothing; exit 1 when what would be served differs from the lock file")
	var approve stringList
	fs.Var(&approve, "approve", "update the lock for this definition only (repeatable): a name, a resource URI, or mcp_server.NAME for all of an upstream's")
	timeout := fs.Duration("timeout", 60*time.Second, "how long to wait for the upstreams to start and list what they declare")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *check && len(approve) > 0 {
		return fmt.Errorf("--check and --approve: choose one")
	}
	logger := c.logger(stderr)
	procs := proc.NewSupervisor()
	defer endPrograms(procs, logger)
	reg := registryWith(procs)
	paths := c.paths()
	path := lock.PathFor(paths)
	locked, err := lock.Read(path)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	defs, upstreams, err := servedDefs(ctx, paths, reg, *timeout, stderr)
	if err != nil {
		return err
	}
	changes := lock.Compare(locked, defs)
	switch {
	case *check:
		if locked == nil {
			if upstreams == 0 {
				fmt.Fprintf(stdout, "no lock file, and no upstream's definitions to pin (%d definitions of the config's own)\n", len(defs))
				return nil
			}
			fmt.Fprintf(stderr, "mcpd lock --check: no lock file at %s; write one with mcpd lock and commit it\n", path)
			return exitError(1)
		}
		if len(changes) == 0 {
			fmt.Fprintf(stdout, "%s: up to date (%d definitions)\n", path, len(locked.Defs))
			return nil
		}
		for _, ch := range changes {
			fmt.Fprint(stdout, ch.String())
		}
		fmt.Fprintf(stderr, "mcpd lock --check: %s differs from what would be served: %d definitions (review them, then run mcpd lock, or mcpd lock --approve NAME)\n", path, len(changes))
		return exitError(1)
	case len(approve) > 0:
		var chosen []lock.Change
		matched := map[string]bool{}
		for _, ch := range changes {
			for _, name := range approve {
				if approves(name, ch, defs) {
					chosen = append(chosen, ch)
					matched[name] = true
				}
			}
		}
		for _, name := range approve {
			if !matched[name] {
				return fmt.Errorf("--approve %s: no definition of that name differs from the lock (mcpd lock --check lists those that do)", name)
			}
		}
		for _, ch := range chosen {
			fmt.Fprint(stdout, ch.String())
		}
		if err := lock.Write(path, lock.Approve(locked, chosen)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "approved %d definitions in %s\n", len(chosen), path)
		return nil
	}
	for _, ch := range changes {
		fmt.Fprintf(stdout, "%s: %s\n", ch.Key, ch.Status)
	}
	if err := lock.Write(path, lock.New(defs)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d definitions (%d changed since the last lock)\n", path, len(defs), len(changes))
	return nil
}

// approves reports whether --approve name names the change.
func approves(name string, ch lock.Change, _ []lock.Def) bool {
	return name == ch.Key.Name || name == ch.Key.Source || name == ch.Key.Source+"/"+ch.Key.Name
}

// servedDefs is loader.Served with the diagnostics printed.
func servedDefs(ctx context.Context, paths []string, reg *adapter.Registry, timeout time.Duration, stderr io.Writer) ([]lock.Def, int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defs, n, l, err := loader.Served(ctx, paths, reg, mcpdVersion())
	config.WriteDiagnostics(stderr, l.Diagnostics, l.Sources)
	if err == nil && defs == nil && l.Snapshot == nil {
		if l.Config != nil && len(l.Config.UnsetEnv) > 0 {
			fmt.Fprintf(stderr, "mcpd lock: the config does not compile without the variables above; set them to list what it serves\n")
		}
		return nil, 0, exitError(1)
	}
	return defs, n, err
}
