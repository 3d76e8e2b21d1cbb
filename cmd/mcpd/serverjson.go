package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcpd/mcpd/engine/discovery"
)

const serverJSONHelp = `usage: mcpd server-json [-c PATH]... --url URL [--url URL]... [--name NAMESPACE/NAME] [--repository URL]

Prints the MCP Registry's server.json of the config's server: its name,
title, version, description, website and icons from the server block, a
streamable-http remote for each --url, and the Authorization header the
remotes need when the config has an auth block. The registry name is
server.name when it is one (such as "com.example/tickets"), else --name.
The secrets the config reads need not be set. What the registry does not
take (data: icons) is left out, with a note on stderr. Each HTTP endpoint
also serves its Server Card at <endpoint>/server-card (docs/hosts.md).
`

// urlList is a repeatable URL flag (MCPD_URL: several separated by commas
// or spaces; a URL has colons, so pathList's separator will not do).
type urlList []string

func (u *urlList) String() string { return strings.Join(*u, ",") }
func (u *urlList) Set(v string) error {
	for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		*u = append(*u, s)
	}
	return nil
}

func serverJSONCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("server-json", stderr)
	var urls urlList
	fs.Var(&urls, "url", "the server's public streamable-HTTP `URL`, e.g. https://mcp.example.com/mcp (repeatable: one remote each)")
	name := fs.String("name", "", "the registry `name`, NAMESPACE/NAME in reverse DNS (default: server.name when it is one)")
	repo := fs.String("repository", "", "the https `URL` of the server's source repository, if public")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: give the server's URL with --url", fs.Arg(0))
	}
	l, err := loadWithoutSecrets("server-json", c, registry(), stderr, true)
	if err != nil {
		return err
	}
	defer l.Snapshot.Close()
	sj, notes, err := discovery.ServerJSONFor(l.Snapshot, discovery.ServerJSONOptions{Name: *name, URLs: urls, Repository: *repo, DefaultVersion: mcpdVersion()})
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(stderr, "mcpd server-json: %s\n", n)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(sj)
}
