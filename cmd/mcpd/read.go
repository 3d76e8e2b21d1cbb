package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// parseInterleaved parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	rest := args
	for {
		if err := parse(fs, rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
}

// readCmd reads one resource (or template instance) in-process, through the
// same path as a client's resources/read.
func readCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("read", stderr)
	asJSON := fs.Bool("json", false, "print the whole result as JSON (binary contents base64)")
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		fs.Usage()
		return exitError(2)
	}
	uri := positional[0]
	reg := registry()
	l, err := loadWithoutSecrets("read", c, reg, stderr, false)
	if err != nil {
		return err
	}
	s := l.Snapshot
	defer s.Close()
	// The snapshot was built without the unset variables: a resource that
	// needs one would be read with an unknown value in its place.
	if err := resourceNeedsUnset(l, reg, s, uri); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, found, err := s.ReadResource(ctx, &snapshot.ReadRequest{URI: uri})
	if !found {
		var known []string
		for _, r := range s.Resources {
			known = append(known, r.Def.URI)
		}
		for _, t := range s.Templates {
			known = append(known, t.Def.URITemplate)
		}
		if len(known) == 0 {
			return fmt.Errorf("no resource %q: the config declares no resources", uri)
		}
		return fmt.Errorf("no resource %q; the config declares: %s", uri, strings.Join(known, ", "))
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", uri, err)
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	for _, c := range res.Contents {
		if c.Blob != nil {
			fmt.Fprintf(stdout, "[blob %s %s, %d bytes; --json prints it as base64]\n", c.URI, c.MIMEType, len(c.Blob))
			continue
		}
		io.WriteString(stdout, c.Text)
		if !strings.HasSuffix(c.Text, "\n") {
			fmt.Fprintln(stdout)
		}
	}
	return nil
}

// promptCmd renders one prompt in-process, through the same path as a
// client's prompts/get.
func promptCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("prompt", stderr)
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	positional, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(positional) == 0 {
		fs.Usage()
		return exitError(2)
	}
	pargs := map[string]string{}
	for _, p := range positional[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("argument %q is not name=value", p)
		}
		pargs[k] = v
	}
	reg := registry()
	l, err := loadWithoutSecrets("prompt", c, reg, stderr, false)
	if err != nil {
		return err
	}
	s := l.Snapshot
	defer s.Close()
	name := positional[0]
	p, ok := s.Prompt(name)
	if !ok {
		var names []string
		for _, p := range s.Prompts {
			names = append(names, p.Def.Name)
		}
		sort.Strings(names)
		if len(names) == 0 {
			return fmt.Errorf("no prompt %q: the config declares no prompts", name)
		}
		return fmt.Errorf("no prompt %q; the config declares: %s", name, strings.Join(names, ", "))
	}
	// A prompt uses no backend: only its own block and the server's count.
	if err := needsUnset(l, reg, "prompt", name, nil); err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	// No one to ask: a prompt that asks does not render (fail closed).
	res, err := p.Get(ctx, &snapshot.GetRequest{Args: pargs})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	if res.Description != "" {
		fmt.Fprintf(stdout, "# %s\n", res.Description)
	}
	for i, m := range res.Messages {
		if i > 0 || res.Description != "" {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "[%s]\n", m.Role)
		printResult(stdout, &mcp.CallToolResult{Content: []mcp.Content{m.Content}})
	}
	return nil
}

// resourceNeedsUnset is needsUnset for what ReadResource reads uri from:
// the static resource of that URI, else the first template it matches (an
// unknown URI needs nothing; ReadResource says it is not found).
func resourceNeedsUnset(l *loader.Loaded, reg *adapter.Registry, s *snapshot.Snapshot, uri string) error {
	for _, r := range s.Resources {
		if r.Def.URI == uri {
			return needsUnset(l, reg, "resource", r.Def.Name, r.Backends())
		}
	}
	for _, t := range s.Templates {
		if _, ok, _ := t.Bind(uri); ok {
			return needsUnset(l, reg, "resource_template", t.Def.Name, t.Backends())
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
