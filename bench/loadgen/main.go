// Command loadgen drives an MCP server with concurrent clients and reports
// throughput, latency and the server's own CPU time and memory, read from
// /proc. It starts the server itself (pinned to a CPU with taskset), so that
// it knows the PID to read, and can interleave two servers (A B A B ...) to
// compare them on a noisy machine. See docs/performance.md.
//
//	loadgen -mode call -transport http -c 16 -server 'mcpd serve -c bench/configs/static.hcl --http {addr}'
//	loadgen -mode call -pairs 5 -a 'baseline --http {addr}' -b 'mcpd serve ... --http {addr}'
//
// {addr} in a server command is replaced by a free 127.0.0.1 port, {config}
// by the config file the reload mode rewrites.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type options struct {
	mode      string
	transport string
	clients   int
	duration  time.Duration
	warmup    time.Duration
	tool      string
	args      string
	method    string
	cpu       string
	env       []string
	n         int
	template  string
	label     string
	jsonOut   string
	quiet     bool
	client    string
	seqMax    int
}

type envList []string

func (e *envList) String() string     { return strings.Join(*e, " ") }
func (e *envList) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	var o options
	var env envList
	var server, a, b, labelA, labelB string
	var pairs, gen int
	flag.StringVar(&o.mode, "mode", "call", "call | list | setup | reload | startup")
	flag.StringVar(&o.transport, "transport", "http", "http (legacy sessions) | http-modern (stateless 2026-07-28) | stdio")
	flag.IntVar(&o.clients, "c", 16, "concurrent clients")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "measured duration (call, list, setup)")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before the measurement")
	flag.StringVar(&o.tool, "tool", "static", "tool to call")
	flag.StringVar(&o.args, "args", `{"name":"bench"}`, "tool arguments (JSON object); {seq} is replaced by numbers from 1 to -seq-max, a different one on each call")
	flag.IntVar(&o.seqMax, "seq-max", 10000, "the largest {seq} in -args")
	flag.StringVar(&o.cpu, "cpu", "", "pin the server to this CPU list with taskset (e.g. 0)")
	flag.Var(&env, "env", "KEY=VALUE for the server's environment (repeatable)")
	flag.IntVar(&o.n, "n", 20, "iterations (reload, startup)")
	flag.StringVar(&o.template, "config-template", "", "reload: config template; {rev} is replaced by a revision number and the result written to {config}")
	flag.StringVar(&o.jsonOut, "json", "", "append each run's result as a JSON line to this file")
	flag.BoolVar(&o.quiet, "q", false, "print only the summary")
	flag.StringVar(&o.client, "client", "raw", "HTTP client: raw (hand-written HTTP/1.1, cheap) or std (net/http)")
	flag.StringVar(&server, "server", "", "server command ({addr}: the HTTP address to listen on)")
	flag.StringVar(&a, "a", "", "compare: server A (the reference)")
	flag.StringVar(&b, "b", "", "compare: server B")
	flag.StringVar(&labelA, "label-a", "A", "compare: name of server A")
	flag.StringVar(&labelB, "label-b", "B", "compare: name of server B")
	flag.StringVar(&o.label, "label", "", "name of the server in the output")
	flag.IntVar(&pairs, "pairs", 0, "compare: number of A B pairs, run interleaved")
	runs := flag.Int("runs", 1, "with -server: run this many times and summarize the medians")
	slicePairs := flag.Int("slices", 0, "compare (call and list modes): run A and B side by side, alternating the load between them, for this many pairs of slices")
	slice := flag.Duration("slice", time.Second, "compare with -slices: the length of one slice")
	flag.BoolVar(&withDescendants, "tree", false, "count the CPU time of the server's live descendants too (a gateway in front of the upstream it starts)")
	flag.IntVar(&gen, "gen-tools", 0, "print a config with this many tools and exit")
	null := flag.Bool("null-server", false, "be a minimal MCP server on stdio (the floor for -mode startup and stdio calls) and exit at EOF")
	flag.Parse()
	o.env = env

	if *null {
		nullServer()
		return
	}
	if gen > 0 {
		fmt.Print(manyTools(gen))
		return
	}
	switch o.mode {
	case "call":
		o.method = "tools/call"
	case "list":
		o.method, o.tool = "tools/list", ""
	case "setup", "reload", "startup":
	default:
		fatalf("unknown -mode %q", o.mode)
	}
	switch o.transport {
	case "http", "http-modern", "stdio":
	default:
		fatalf("unknown -transport %q", o.transport)
	}
	if o.client != "raw" && o.client != "std" {
		fatalf("unknown -client %q", o.client)
	}
	if !json.Valid([]byte(strings.ReplaceAll(o.args, "{seq}", "1"))) {
		fatalf("-args is not JSON: %s", o.args)
	}
	if o.cpu != "" {
		if _, err := lookPath("taskset"); err != nil {
			fatalf("-cpu needs taskset (util-linux): %v", err)
		}
	}

	if *slicePairs > 0 {
		if a == "" || b == "" {
			fatalf("-slices needs -a and -b")
		}
		if o.mode != "call" && o.mode != "list" {
			fatalf("-slices works in the call and list modes; use -pairs")
		}
		if err := compareSlices(o, *slicePairs, *slice, labelA, a, labelB, b); err != nil {
			fatalf("%v", err)
		}
		return
	}
	if pairs > 0 {
		if a == "" || b == "" {
			fatalf("-pairs needs -a and -b")
		}
		if err := compare(o, pairs, labelA, a, labelB, b); err != nil {
			fatalf("%v", err)
		}
		return
	}
	if server == "" {
		fatalf("give -server COMMAND (or -a, -b and -pairs)")
	}
	if o.label == "" {
		o.label = filepath.Base(strings.Fields(server)[0])
	}
	printHeader(o.mode)
	var all []*result
	for i := 0; i < *runs; i++ {
		r, err := runOnce(o, server)
		if r != nil {
			printResult(r)
			writeJSON(o.jsonOut, r)
			all = append(all, r)
		}
		if err != nil {
			fatalf("%v", err)
		}
	}
	if *runs > 1 {
		summarizeRuns(o.mode, o.label, all)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
	os.Exit(1)
}

// runOnce starts the server, runs one measurement and stops the server.
// A result with errors comes back with an error too.
func runOnce(o options, command string) (*result, error) {
	switch o.mode {
	case "startup":
		return runStartup(o, command)
	case "reload":
		return runReload(o, command)
	}
	srv, err := startServer(command, o.cpu, o.transport == "stdio", o.env)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	var r *result
	switch o.mode {
	case "call", "list":
		r, err = runCalls(o, srv)
	case "setup":
		r, err = runSetup(o, srv)
	}
	if err != nil {
		return r, err
	}
	if r.Errors > 0 {
		return r, fmt.Errorf("%d errors; the first: %s", r.Errors, r.FirstError)
	}
	return r, nil
}

// compare runs A and B alternately, pairs times each, and reports the
// median of the per-pair ratios B/A: on a shared machine, neighbouring runs
// see similar noise, so their ratio is steadier than either figure.
func compare(o options, pairs int, labelA, a, labelB, b string) error {
	var ra, rb []*result
	if !o.quiet {
		printHeader(o.mode)
	}
	for i := 0; i < pairs; i++ {
		for _, s := range []struct {
			label, cmd string
			out        *[]*result
		}{{labelA, a, &ra}, {labelB, b, &rb}} {
			oo := o
			oo.label = s.label
			r, err := runOnce(oo, s.cmd)
			if err != nil {
				return fmt.Errorf("%s, pair %d: %w", s.label, i+1, err)
			}
			writeJSON(o.jsonOut, r)
			if !o.quiet {
				printResult(r)
			}
			*s.out = append(*s.out, r)
		}
	}
	summarize(o.mode, labelA, ra, labelB, rb)
	return nil
}

func writeJSON(path string, r *result) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadgen: %v\n", err)
		return
	}
	defer f.Close()
	b, _ := json.Marshal(r)
	f.Write(append(b, '\n'))
}

func lookPath(name string) (string, error) {
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH", name)
}

// manyTools is a config of n tools shaped like engine/reload's benchmark:
// two params with constraints and an expr result each.
func manyTools(n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, `tool "tool_%05d" {
  description = "Tool number %d"
  param "id" {
    type    = "integer"
    minimum = 1
  }
  param "name" {
    type     = "string"
    pattern  = "^[a-z]+$"
    required = false
  }
  result {
    structured = "{id: args.id}"
  }
}
`, i, i)
	}
	return sb.String()
}

// nullServer answers MCP requests on stdin with canned results: initialize
// with a minimal result, tools/list with no tools, tools/call with a text,
// anything else with an empty result. It is the floor of what a stdio
// server can cost: process start, pipe round trips, no MCP work.
func nullServer() {
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriter(os.Stdout)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue
		}
		result := `{}`
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"` + legacyVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"null","version":"0"}}`
		case "tools/list":
			result = `{"tools":[]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"This is a static response."}]}`
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
		w.Flush()
	}
}
