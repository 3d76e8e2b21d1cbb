package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

func callCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("call", stderr)
	argsJSON := fs.String("args", "", "the arguments as one JSON object")
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	// Flags may come before or after the tool name.
	var positional []string
	rest := args
	for {
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) == 0 {
		fs.Usage()
		return exitError(2)
	}
	l, err := load(c, registry(), stderr)
	if err != nil {
		return err
	}
	s := l.Snapshot
	defer s.Close()
	name := positional[0]
	tool, ok := s.Tool(name)
	if !ok {
		var names []string
		for _, t := range s.Tools {
			names = append(names, t.Def.Name)
		}
		return fmt.Errorf("no tool %q; the config declares: %s", name, strings.Join(names, ", "))
	}
	raw, err := callArgs(*argsJSON, positional[1:], tool.InputSchema)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res := tool.Call(ctx, raw, func(p, total float64, msg string) {
		fmt.Fprintf(stderr, "progress: %g/%g %s\n", p, total, msg)
	})
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	if res.IsError {
		return exitError(1)
	}
	return nil
}

// callArgs builds the arguments object from --args or name=value pairs. A
// value is taken as JSON (numbers, booleans, arrays) unless the param is a
// string, so that `id=007` or `name=true` stay strings where strings are
// expected.
func callArgs(argsJSON string, pairs []string, schema any) (json.RawMessage, error) {
	if argsJSON != "" {
		if len(pairs) > 0 {
			return nil, fmt.Errorf("give arguments either with --args or as name=value, not both")
		}
		if !json.Valid([]byte(argsJSON)) {
			return nil, fmt.Errorf("--args is not valid JSON")
		}
		return json.RawMessage(argsJSON), nil
	}
	props := map[string]any{}
	if m, ok := schema.(map[string]any); ok {
		props, _ = m["properties"].(map[string]any)
	}
	args := map[string]any{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("argument %q is not name=value", p)
		}
		isString := false
		if ps, ok := props[k].(map[string]any); ok {
			isString = ps["type"] == "string"
		}
		var x any = v
		if !isString {
			// Exact numbers: limit=9007199254740993 is sent as written.
			if d, err := adapter.DecodeJSON([]byte(v)); err == nil {
				x = d
			}
		}
		args[k] = x
	}
	return json.Marshal(args)
}

func printResult(w io.Writer, res *mcp.CallToolResult) {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s %s]\n", c.Resource.URI, c.Resource.MIMEType)
				if c.Resource.Text != "" {
					fmt.Fprintln(w, c.Resource.Text)
				}
			}
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[link %s %s]\n", c.URI, c.Name)
		}
	}
}
