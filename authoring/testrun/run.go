package testrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/serve"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Timeout bounds one test, so that a hanging tool fails its test instead
// of the run.
const Timeout = 60 * time.Second

// Result is the outcome of one test.
type Result struct {
	Name      string        `json:"name"`
	Pos       string        `json:"pos"`
	Passed    bool          `json:"passed"`
	Elapsed   time.Duration `json:"-"`
	ElapsedMS int64         `json:"elapsed_ms"`
	// Failures say what differed, one line (or short block) each.
	Failures []string `json:"failures,omitempty"`
	// Text is the result's text, the error message of a failed read or
	// prompt, as the checks saw it.
	Text string `json:"text"`
}

// Suite runs compiled tests against one config.
type Suite struct {
	cfg     *config.Config
	reg     *adapter.Registry
	base    *snapshot.Snapshot
	version string
	logger  *slog.Logger
}

// NewSuite returns a suite for cfg, whose compiled snapshot is base (still
// owned by the caller). Tests that mock backends build their own snapshot
// from cfg, taking the unmocked backends over from base.
func NewSuite(cfg *config.Config, reg *adapter.Registry, base *snapshot.Snapshot, version string) *Suite {
	return &Suite{cfg: cfg, reg: reg, base: base, version: version, logger: slog.New(slog.DiscardHandler)}
}

// Run runs the cases whose names match filter (all when nil), in order,
// calling report after each.
func (s *Suite) Run(ctx context.Context, cases []*Case, filter *regexp.Regexp, report func(*Result)) {
	var base *session
	defer func() {
		if base != nil {
			base.close()
		}
	}()
	for _, c := range cases {
		if filter != nil && !filter.MatchString(c.Name) {
			continue
		}
		if ctx.Err() != nil {
			return // interrupted: the tests left would all fail the same way
		}
		start := time.Now()
		var res *Result
		if c.Mocked() {
			res = s.runMocked(ctx, c)
		} else if c.dryRun {
			res = s.runDry(ctx, c)
		} else {
			if base == nil {
				var err error
				if base, err = connect(ctx, s.base, s.logger); err != nil {
					res = &Result{Failures: []string{err.Error()}}
				}
			}
			if res == nil {
				res = run(ctx, base, c, nil)
			}
		}
		res.Name, res.Pos = c.Name, c.Pos
		res.Elapsed = time.Since(start)
		res.ElapsedMS = res.Elapsed.Milliseconds()
		res.Passed = len(res.Failures) == 0
		report(res)
	}
}

// runMocked runs a test against a snapshot whose mocked backends point at
// in-process servers serving the test's mocks.
func (s *Suite) runMocked(ctx context.Context, c *Case) *Result {
	mocks := startMocks(c.mocks)
	defer mocks.close()
	cfg, err := mockedConfig(s.cfg, s.reg, mocks.servers)
	if err != nil {
		return &Result{Failures: []string{err.Error()}}
	}
	snap, diags := snapshot.Build(cfg, s.reg, s.base, s.version)
	if diags.HasErrors() {
		if snap != nil {
			snap.Discard(s.base)
		}
		return &Result{Failures: []string{"cannot build the config with mocked backends: " + diags.Error()}}
	}
	// Closes only the backends this snapshot opened itself (the mocked
	// ones), not those taken over from the base snapshot.
	defer snap.Discard(s.base)
	sess, err := connect(ctx, snap, s.logger)
	if err != nil {
		return &Result{Failures: []string{err.Error()}}
	}
	defer sess.close()
	return run(ctx, sess, c, mocks)
}

// runDry runs a shell tool's test with expect_argv or expect_stdin: the
// call takes the whole path a real one does, except that the adapter
// records the process it would start instead of starting it. The dry run is
// a value of the server connection's context, which every request handled
// on it inherits.
func (s *Suite) runDry(ctx context.Context, c *Case) *Result {
	var mu sync.Mutex
	var runs []adapter.Invocation
	record := func(inv adapter.Invocation) {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, inv)
	}
	sess, err := connect(adapter.WithDryRun(ctx, record), s.base, s.logger)
	if err != nil {
		return &Result{Failures: []string{err.Error()}}
	}
	defer sess.close()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	out, err := call(ctx, sess.client, c)
	if err != nil {
		return &Result{Failures: []string{err.Error()}}
	}
	res := &Result{Text: out.env.Text}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) == 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("the tool would not start a process; it answered:\n%s", indent(out.env.Text)))
		return res
	}
	inv := runs[0]
	if c.argv != nil && !slices.Equal(inv.Argv, c.argv) {
		res.Failures = append(res.Failures, fmt.Sprintf("argv = %s\n    want %s", short(inv.Argv), short(c.argv)))
	}
	if c.checkStdin {
		switch {
		case inv.Stdin == nil:
			res.Failures = append(res.Failures, fmt.Sprintf("no stdin, want %q", c.stdin))
		case *inv.Stdin != c.stdin:
			res.Failures = append(res.Failures, fmt.Sprintf("stdin = %q, want %q", *inv.Stdin, c.stdin))
		}
	}
	// What the model would have seen is the argv, not an empty output.
	res.Text = strings.Join(inv.Argv, " ")
	return res
}

// session is an MCP client connected in memory to a server for one
// snapshot: the path a real client's calls take.
type session struct {
	client *mcp.ClientSession
	server *mcp.ServerSession
}

func connect(ctx context.Context, snap *snapshot.Snapshot, logger *slog.Logger) (*session, error) {
	current := &snapshot.Current{}
	current.Swap(snap)
	srv := serve.New(current, serve.Options{Logger: logger})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.SDK().Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot start the in-memory server: %w", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpd-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		ss.Close()
		return nil, fmt.Errorf("cannot connect the in-memory client: %w", err)
	}
	return &session{client: cs, server: ss}, nil
}

func (s *session) close() {
	s.client.Close()
	s.server.Close()
}

// outcome is what a call returned, as the checks see it.
type outcome struct {
	env assertEnv
}

func run(ctx context.Context, sess *session, c *Case, mocks *mockSet) *Result {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	out, err := call(ctx, sess.client, c)
	res := &Result{}
	if err != nil {
		res.Failures = append(res.Failures, err.Error())
		return res
	}
	res.Text = out.env.Text
	res.Failures = append(res.Failures, check(c, out)...)
	if mocks != nil {
		res.Failures = append(res.Failures, checkRequests(c, mocks.recorded())...)
	}
	return res
}

// call makes the test's request. A failed resource read or prompt get (a
// JSON-RPC error) is an outcome with is_error set and the message as its
// text, so that tests can expect it; a failed tool call (unknown tool, a
// broken connection) is a failure.
func call(ctx context.Context, cs *mcp.ClientSession, c *Case) (*outcome, error) {
	var env assertEnv
	switch c.kind {
	case kindTool:
		args := c.args
		if args == nil {
			args = map[string]any{}
		}
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.target, Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("tools/call %s failed: %w", c.target, err)
		}
		env.IsError = r.IsError
		env.Structured = jsonValue(r.StructuredContent)
		env.Content = jsonList(r.Content)
		env.Text = contentText(r.Content)
	case kindResource:
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: c.target})
		if err != nil {
			env.IsError, env.Text = true, err.Error()
			break
		}
		env.Content = jsonList(r.Contents)
		var parts []string
		for _, rc := range r.Contents {
			if rc.Text != "" {
				parts = append(parts, rc.Text)
			}
		}
		env.Text = strings.Join(parts, "\n")
	case kindPrompt:
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: c.target, Arguments: c.promptArgs})
		if err != nil {
			env.IsError, env.Text = true, err.Error()
			break
		}
		env.Content = jsonList(r.Messages)
		var parts []string
		for _, m := range r.Messages {
			parts = append(parts, contentText([]mcp.Content{m.Content}))
		}
		env.Text = strings.Join(parts, "\n")
	}
	return &outcome{env: env}, nil
}

func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			}
		}
	}
	return strings.Join(parts, "\n")
}

// jsonValue turns v into the plain values JSON decoding gives, which is
// what assert expressions see.
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func jsonList[T any](xs []T) []any {
	out := make([]any, 0, len(xs))
	for _, x := range xs {
		out = append(out, jsonValue(x))
	}
	return out
}

// check compares the outcome with the test's expectations.
func check(c *Case, out *outcome) []string {
	var fails []string
	env := out.env
	if env.IsError != c.isError {
		fails = append(fails, fmt.Sprintf("is_error = %t, want %t; text:\n%s", env.IsError, c.isError, indent(env.Text)))
		// The other checks were written for the other kind of outcome:
		// their failures would only repeat this one.
		return fails
	}
	for _, s := range c.contains {
		if !strings.Contains(env.Text, s) {
			fails = append(fails, fmt.Sprintf("text does not contain %q; text:\n%s", s, indent(env.Text)))
		}
	}
	if c.matches != nil && !c.matches.MatchString(env.Text) {
		fails = append(fails, fmt.Sprintf("text does not match /%s/; text:\n%s", c.matches, indent(env.Text)))
	}
	for _, a := range c.asserts {
		v, err := expr.Run(a.prog, env)
		if err == nil && v == true {
			continue
		}
		msg := fmt.Sprintf("assert %s", a.src)
		if err != nil {
			msg += fmt.Sprintf(" failed: %v", err)
		} else {
			msg += " is false"
		}
		for _, r := range a.refs {
			if x, err := expr.Run(r.prog, env); err == nil {
				msg += fmt.Sprintf("\n    %s = %s", r.src, short(x))
			}
		}
		fails = append(fails, msg)
	}
	return fails
}

// checkRequests compares the requests the mocked backends received with
// the test's expect_request blocks (the n-th block with the n-th request)
// and reports requests no mock answered.
func checkRequests(c *Case, reqs []*request) []string {
	var fails []string
	for _, r := range reqs {
		if !r.matched {
			fails = append(fails, fmt.Sprintf("unexpected request to %s: %s (no mock matches its method and path)", r.backend, r))
		}
	}
	for i, e := range c.expects {
		if i >= len(reqs) {
			fails = append(fails, fmt.Sprintf("expect_request #%d: the tool sent only %d request(s)", i+1, len(reqs)))
			continue
		}
		r := reqs[i]
		where := fmt.Sprintf("expect_request #%d (%s)", i+1, r)
		if e.method != "" && e.method != r.method {
			fails = append(fails, fmt.Sprintf("%s: method %s, want %s", where, r.method, e.method))
		}
		if e.path != "" && e.path != r.path {
			fails = append(fails, fmt.Sprintf("%s: path %q, want %q", where, r.path, e.path))
		}
		for _, k := range sortedKeys(e.query) {
			if got := r.query[k]; !slices.Contains(got, e.query[k]) {
				fails = append(fails, fmt.Sprintf("%s: query %s = %q, want %q", where, k, got, e.query[k]))
			}
		}
		for _, k := range sortedKeys(e.headers) {
			if got := r.header.Values(k); !slices.Contains(got, e.headers[k]) {
				fails = append(fails, fmt.Sprintf("%s: header %s = %q, want %q", where, k, got, e.headers[k]))
			}
		}
		if e.hasBodyContains && !strings.Contains(string(r.body), e.bodyContains) {
			fails = append(fails, fmt.Sprintf("%s: body does not contain %q; body:\n%s", where, e.bodyContains, indent(string(r.body))))
		}
	}
	return fails
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// maxShown bounds a value or text shown in a failure.
const maxShown = 2000

func short(v any) string {
	b, err := json.Marshal(v)
	s := string(b)
	if err != nil {
		s = fmt.Sprint(v)
	}
	if len(s) > maxShown {
		s = s[:maxShown] + "…"
	}
	return s
}

func indent(s string) string {
	if len(s) > maxShown {
		s = s[:maxShown] + "…"
	}
	if s == "" {
		return "        (empty)"
	}
	return "        " + strings.ReplaceAll(s, "\n", "\n        ")
}

// Summary counts results.
type Summary struct {
	Passed, Failed int
	Elapsed        time.Duration
}

// Printer writes results as `go test -v` does: a === RUN line per test
// (verbose only), --- PASS/--- FAIL lines with what differed, and summary
// lines at the end.
type Printer struct {
	W       io.Writer
	Verbose bool
	JSON    bool
	Summary Summary
}

// Report prints one result.
func (p *Printer) Report(r *Result) {
	if r.Passed {
		p.Summary.Passed++
	} else {
		p.Summary.Failed++
	}
	p.Summary.Elapsed += r.Elapsed
	if p.JSON {
		b, _ := json.Marshal(r)
		fmt.Fprintf(p.W, "%s\n", b)
		return
	}
	secs := r.Elapsed.Seconds()
	if p.Verbose {
		fmt.Fprintf(p.W, "=== RUN   %s\n", r.Name)
	}
	if r.Passed {
		if p.Verbose {
			fmt.Fprintf(p.W, "--- PASS: %s (%.2fs)\n", r.Name, secs)
			if t := strings.TrimRight(r.Text, "\n"); t != "" {
				fmt.Fprintf(p.W, "%s\n", indent(t))
			}
		}
		return
	}
	fmt.Fprintf(p.W, "--- FAIL: %s (%.2fs)\n", r.Name, secs)
	fmt.Fprintf(p.W, "    %s\n", r.Pos)
	for _, f := range r.Failures {
		fmt.Fprintf(p.W, "    %s\n", strings.ReplaceAll(f, "\n", "\n    "))
	}
}

// Finish prints the closing lines: FAIL or ok, with the counts.
func (p *Printer) Finish(config string) {
	if p.JSON {
		return
	}
	s := p.Summary
	status := "ok  "
	if s.Failed > 0 {
		status = "FAIL"
		fmt.Fprintln(p.W, "FAIL")
	} else if p.Verbose {
		fmt.Fprintln(p.W, "PASS")
	}
	fmt.Fprintf(p.W, "%s\t%s\t%.3fs\n", status, config, s.Elapsed.Seconds())
	fmt.Fprintf(p.W, "%d passed, %d failed\n", s.Passed, s.Failed)
}
