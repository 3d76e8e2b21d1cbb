package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/snapshot"
)

func callCmd(args []string, stdout, stderr io.Writer) error {
	fs, c := newFlagSet("call", stderr)
	argsJSON := fs.String("args", "", "the arguments as one JSON object")
	asJSON := fs.Bool("json", false, "print the whole result as JSON")
	asTask := fs.Bool("task", false, "run the call as a task, as `mcpd serve` runs it for a client that uses tasks: its id, status and progress go to stderr; Ctrl-C cancels it")
	yes := fs.Bool("yes", false, "accept the tool's confirmations (there is no user to ask); without it, a tool that asks for confirmation does not run")
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
	reg := registry()
	l, err := loadWithoutSecrets("call", c, reg, stderr, false)
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
	// The snapshot was built without the unset variables: a tool that
	// needs one would run with an unknown value in its place.
	if err := needsUnset(l, reg, "tool", name, tool.Backends()); err != nil {
		return err
	}
	raw, err := callArgs(*argsJSON, positional[1:], tool.InputSchema)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	var res *mcp.CallToolResult
	if *asTask {
		res = callAsTask(ctx, tool, raw, *yes, stderr)
	} else {
		res = callConfirming(ctx, tool, raw, *yes, func(p, total float64, msg string) {
			fmt.Fprintf(stderr, "progress: %g/%g %s\n", p, total, msg)
		})
	}
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

// callConfirming calls tool from the command line, where no client can
// answer questions: with yes, every confirmation is accepted; anything else
// a tool asks (a form, sampling, roots) cannot be answered, and the tool
// does not run.
func callConfirming(ctx context.Context, tool *snapshot.Tool, raw json.RawMessage, yes bool, progress snapshot.ProgressFunc) *mcp.CallToolResult {
	req := &snapshot.CallRequest{Args: raw, Progress: progress}
	if yes {
		req.Answers = ask.Answers{Caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, Answerer: confirmer{}}
	}
	res, err := tool.Call(ctx, req)
	if err != nil {
		msg := err.Error()
		if !yes {
			msg += " (mcpd call cannot ask; run it with --yes to accept its confirmation)"
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
	}
	return res
}

// confirmer is --yes: it accepts every confirmation (an elicitation with
// an empty form) and cannot answer any other question.
type confirmer struct{}

func (confirmer) Answer(_ context.Context, questions mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	answers := mcp.InputResponseMap{}
	for id, ir := range questions {
		var props map[string]any
		p, ok := ir.(*mcp.ElicitParams)
		if ok {
			form, _ := p.RequestedSchema.(map[string]any)
			props, _ = form["properties"].(map[string]any)
		}
		if !ok || len(props) > 0 {
			return nil, fmt.Errorf("question %q needs input, which mcpd call cannot give; call the tool from an MCP client", id)
		}
		answers[id] = &mcp.ElicitResult{Action: "accept"}
	}
	return answers, nil
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
