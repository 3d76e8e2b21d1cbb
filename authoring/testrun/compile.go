// Package testrun runs the test blocks of a config (`mcpd test`): each test
// calls one tool, resource or prompt through an in-memory MCP client
// connected to the same server `mcpd serve` runs, so that argument
// validation, result shaping and redaction are all exercised, and checks
// what came back. A test may mock the HTTP backends its tool uses: the
// backend is pointed at an in-process server that answers with the test's
// canned responses and records the requests for expect_request.
package testrun

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Kinds of test target.
const (
	kindTool     = "tool"
	kindResource = "resource"
	kindPrompt   = "prompt"
)

// Case is one compiled test.
type Case struct {
	Name string
	// Pos is where the test is declared, as file:line:col.
	Pos string

	kind, target string
	args         map[string]any    // a tool's arguments
	promptArgs   map[string]string // a prompt's arguments
	isError      bool
	contains     []string
	matches      *regexp.Regexp
	asserts      []*assertion
	mocks        []*mock
	expects      []*expect
	// dryRun: the shell tool is not run; argv (and stdin, when
	// checkStdin) are compared with what it would have run.
	dryRun     bool
	argv       []string
	stdin      string
	checkStdin bool
}

// Mocked reports whether the test mocks any backend.
func (c *Case) Mocked() bool { return len(c.mocks) > 0 }

// assertEnv is what an assert expression sees.
type assertEnv struct {
	Structured any    `expr:"structured"`
	Text       string `expr:"text"`
	Content    []any  `expr:"content"`
	IsError    bool   `expr:"is_error"`
}

type assertion struct {
	src  string
	prog *vm.Program
	// refs are the variable paths the expression reads (structured.stars),
	// compiled on their own, whose values a failure shows.
	refs []ref
}

type ref struct {
	src  string
	prog *vm.Program
}

// mock is one canned response.
type mock struct {
	backend      string
	method, path string
	status       int
	headers      map[string]string
	body         []byte
}

// expect is what one request sent to a mocked backend must look like. Empty
// fields are not checked.
type expect struct {
	method, path    string
	query, headers  map[string]string
	bodyContains    string
	hasBodyContains bool
}

// Compile checks the tests against the config and its compiled snapshot and
// compiles their expectations. A test with errors is left out; the
// diagnostics say why. reg is the registry the snapshot was built with:
// mocks name the backends of the adapters that can mock them
// (adapter.Mocker).
func Compile(tests []*config.Test, cfg *config.Config, snap *snapshot.Snapshot, reg *adapter.Registry) ([]*Case, hcl.Diagnostics) {
	var cases []*Case
	var diags hcl.Diagnostics
	for _, t := range tests {
		c, d := compileTest(t, cfg, snap, reg)
		diags = append(diags, d...)
		if c != nil && !d.HasErrors() {
			cases = append(cases, c)
		}
	}
	return cases, diags
}

// compiler evaluates one test's attributes, collecting diagnostics.
type compiler struct {
	ectx  *hcl.EvalContext
	dir   string
	diags hcl.Diagnostics
}

func (c *compiler) errorf(rng hcl.Range, summary, format string, a ...any) {
	c.diags = append(c.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(format, a...), Subject: rng.Ptr()})
}

func (c *compiler) value(a *hcl.Attribute) (any, bool) {
	v, err := adapter.Eval(a.Expr, c.ectx)
	if err != nil {
		c.errorf(a.Expr.Range(), "Invalid "+a.Name, "%s: %v", a.Name, err)
		return nil, false
	}
	return v, true
}

func (c *compiler) str(a *hcl.Attribute) string {
	if a == nil {
		return ""
	}
	s, err := adapter.EvalString(a.Expr, c.ectx)
	if err != nil {
		c.errorf(a.Expr.Range(), "Invalid "+a.Name, "%s: %v", a.Name, err)
	}
	return s
}

// strs takes a string or a list of strings.
func (c *compiler) strs(a *hcl.Attribute) []string {
	if a == nil {
		return nil
	}
	v, ok := c.value(a)
	if !ok {
		return nil
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				c.errorf(a.Expr.Range(), "Invalid "+a.Name, "%s: every element must be a string.", a.Name)
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	c.errorf(a.Expr.Range(), "Invalid "+a.Name, "%s: a string or a list of strings is required.", a.Name)
	return nil
}

func (c *compiler) strMap(a *hcl.Attribute) map[string]string {
	if a == nil {
		return nil
	}
	m, err := adapter.EvalStringMap(a.Expr, c.ectx)
	if err != nil {
		c.errorf(a.Expr.Range(), "Invalid "+a.Name, "%s: %v", a.Name, err)
	}
	return m
}

func compileTest(t *config.Test, cfg *config.Config, snap *snapshot.Snapshot, reg *adapter.Registry) (*Case, hcl.Diagnostics) {
	c := &compiler{ectx: &hcl.EvalContext{Functions: funcs.Table(t.Dir)}, dir: t.Dir}
	tc := &Case{Name: t.Name, Pos: config.Pos(t.DeclRange)}

	var targets []*hcl.Attribute
	for _, a := range []*hcl.Attribute{t.Tool, t.Resource, t.Prompt} {
		if a != nil {
			targets = append(targets, a)
		}
	}
	if len(targets) != 1 {
		c.errorf(t.DeclRange, "A test needs one target", "Test %q names %d targets; give exactly one of tool = \"name\", resource = \"uri\" or prompt = \"name\".", t.Name, len(targets))
		return nil, c.diags
	}
	target := targets[0]
	tc.kind, tc.target = target.Name, c.str(target)
	if c.diags.HasErrors() {
		return nil, c.diags
	}
	if snap != nil && !targetExists(snap, tc.kind, tc.target) {
		c.errorf(target.Expr.Range(), "Unknown test target", "The config declares no %s %q%s.", tc.kind, tc.target, available(snap, tc.kind))
	}

	if t.Args != nil {
		v, ok := c.value(t.Args)
		m, isMap := v.(map[string]any)
		switch {
		case !ok:
		case v != nil && !isMap:
			c.errorf(t.Args.Expr.Range(), "Invalid args", "args must be an object, as in args = { name = \"value\" }.")
		case tc.kind == kindResource:
			c.errorf(t.Args.Range, "Invalid args", "A resource test takes no args: the arguments of a resource template are in its URI.")
		case tc.kind == kindPrompt:
			tc.promptArgs = map[string]string{}
			for k, x := range m {
				switch x := x.(type) {
				case string:
					tc.promptArgs[k] = x
				case nil:
				default:
					b, _ := json.Marshal(x)
					tc.promptArgs[k] = string(b)
				}
			}
		default:
			tc.args = m
		}
	}
	if t.IsError != nil {
		v, ok := c.value(t.IsError)
		if b, isBool := v.(bool); ok && isBool {
			tc.isError = b
		} else if ok {
			c.errorf(t.IsError.Expr.Range(), "Invalid is_error", "is_error must be true or false.")
		}
	}
	tc.contains = c.strs(t.TextContains)
	if t.TextMatches != nil {
		pat := c.str(t.TextMatches)
		re, err := regexp.Compile(pat)
		if err != nil {
			c.errorf(t.TextMatches.Expr.Range(), "Invalid text_matches", "text_matches is not a valid regular expression: %v", err)
		}
		tc.matches = re
	}
	if t.Assert != nil {
		srcs := c.strs(t.Assert)
		// Blame the element of a list that does not compile, not the list.
		ranges := make([]hcl.Range, len(srcs))
		elems, isTuple := t.Assert.Expr.(*hclsyntax.TupleConsExpr)
		for i := range srcs {
			ranges[i] = t.Assert.Expr.Range()
			if isTuple && len(elems.Exprs) == len(srcs) {
				ranges[i] = elems.Exprs[i].Range()
			}
		}
		for i, src := range srcs {
			a, err := compileAssert(src)
			if err != nil {
				c.errorf(ranges[i], "Invalid assert", "assert %q: %v", src, err)
				continue
			}
			tc.asserts = append(tc.asserts, a)
		}
	}
	for _, m := range t.Mocks {
		tc.mocks = append(tc.mocks, c.mock(m, cfg, reg))
	}
	for _, e := range t.Expects {
		tc.expects = append(tc.expects, c.expect(e))
	}
	if t.ExpectArgv != nil || t.ExpectStdin != nil {
		c.dryRun(t, tc, snap)
	}
	if len(t.Expects) > 0 && len(t.Mocks) == 0 {
		c.errorf(t.Expects[0].DeclRange, "expect_request without mock", "expect_request checks the requests sent to mocked backends; declare at least one mock block.")
	}
	return tc, c.diags
}

func targetExists(s *snapshot.Snapshot, kind, target string) bool {
	switch kind {
	case kindTool:
		_, ok := s.Tool(target)
		return ok
	case kindPrompt:
		_, ok := s.Prompt(target)
		return ok
	}
	for _, r := range s.Resources {
		if r.Def.URI == target {
			return true
		}
	}
	for _, t := range s.Templates {
		if _, ok := t.Match(target); ok {
			return true
		}
	}
	return false
}

// available lists the declared names of a kind, for a diagnostic.
func available(s *snapshot.Snapshot, kind string) string {
	var names []string
	switch kind {
	case kindTool:
		for _, t := range s.Tools {
			names = append(names, t.Def.Name)
		}
	case kindPrompt:
		for _, p := range s.Prompts {
			names = append(names, p.Def.Name)
		}
	default:
		for _, r := range s.Resources {
			names = append(names, r.Def.URI)
		}
		for _, t := range s.Templates {
			names = append(names, t.Def.URITemplate)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (declared: " + strings.Join(names, ", ") + ")"
}

func (c *compiler) mock(m *config.Mock, cfg *config.Config, reg *adapter.Registry) *mock {
	out := &mock{backend: m.Backend, status: http.StatusOK}
	found := false
	for _, b := range cfg.Backends {
		if b.Name == m.Backend && mocker(reg, b.Type) != nil {
			found = true
		}
	}
	if !found {
		var types []string
		if reg != nil {
			for _, typ := range reg.BackendBlocks() {
				if mocker(reg, typ) != nil {
					types = append(types, typ)
				}
			}
		}
		kinds := strings.Join(types, " or ")
		c.errorf(m.BackendRange, "Unknown mocked backend", "The config declares no %s %q; a mock answers for an %s.", kinds, m.Backend, kinds)
	}
	out.method = strings.ToUpper(c.str(m.Method))
	out.path = c.str(m.Path)
	if m.Status != nil {
		v, ok := c.value(m.Status)
		n, isInt := v.(int64)
		if ok && (!isInt || n < 100 || n > 599) {
			c.errorf(m.Status.Expr.Range(), "Invalid status", "status must be an HTTP status code from 100 to 599.")
		}
		out.status = int(n)
	}
	out.headers = c.strMap(m.Headers)
	var bodies []*hcl.Attribute
	for _, a := range []*hcl.Attribute{m.Body, m.BodyFile, m.JSON} {
		if a != nil {
			bodies = append(bodies, a)
		}
	}
	if len(bodies) > 1 {
		c.errorf(bodies[1].Range, "More than one body", "A mock has at most one of body, body_file and json.")
		return out
	}
	switch {
	case m.Body != nil:
		out.body = []byte(c.str(m.Body))
	case m.BodyFile != nil:
		p := funcs.Resolve(c.dir, c.str(m.BodyFile))
		b, err := os.ReadFile(p)
		if err != nil {
			c.errorf(m.BodyFile.Expr.Range(), "Cannot read body_file", "%v", err)
		}
		out.body = b
	case m.JSON != nil:
		v, ok := c.value(m.JSON)
		if ok {
			b, err := json.Marshal(v)
			if err != nil {
				c.errorf(m.JSON.Expr.Range(), "Invalid json", "%v", err)
			}
			out.body = b
			if _, set := headerValue(out.headers, "Content-Type"); !set {
				if out.headers == nil {
					out.headers = map[string]string{}
				}
				out.headers["Content-Type"] = "application/json"
			}
		}
	}
	return out
}

func headerValue(h map[string]string, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

func (c *compiler) expect(e *config.ExpectRequest) *expect {
	out := &expect{
		method:  strings.ToUpper(c.str(e.Method)),
		path:    c.str(e.Path),
		query:   c.strMap(e.Query),
		headers: c.strMap(e.Headers),
	}
	if e.BodyContains != nil {
		out.bodyContains, out.hasBodyContains = c.str(e.BodyContains), true
	}
	return out
}

// compileAssert compiles an assert expression, which must be boolean, and
// the variable paths it reads.
func compileAssert(src string) (*assertion, error) {
	prog, err := expr.Compile(src, expr.Env(assertEnv{}), expr.AsBool())
	if err != nil {
		return nil, err
	}
	a := &assertion{src: src, prog: prog}
	tree, err := expr.Compile(src, expr.Env(assertEnv{}))
	if err != nil {
		return a, nil
	}
	var paths []string
	node := tree.Node()
	ast.Walk(&node, &pathCollector{out: &paths})
	for _, p := range longest(paths) {
		if rp, err := expr.Compile(p, expr.Env(assertEnv{})); err == nil {
			a.refs = append(a.refs, ref{src: p, prog: rp})
		}
	}
	return a, nil
}

// pathCollector collects the variables and member chains an expression
// reads.
type pathCollector struct{ out *[]string }

func (p *pathCollector) Visit(n *ast.Node) {
	switch x := (*n).(type) {
	case *ast.IdentifierNode:
		*p.out = append(*p.out, x.Value)
	case *ast.MemberNode:
		*p.out = append(*p.out, x.String())
	}
}

// longest keeps the paths that no other path extends (structured.a rather
// than structured), without duplicates, in order of appearance.
func longest(paths []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if seen[p] {
			continue
		}
		seen[p] = true
		extended := false
		for _, q := range paths {
			if q != p && (strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[") || strings.HasPrefix(q, p+"?.")) {
				extended = true
				break
			}
		}
		if !extended {
			out = append(out, p)
		}
	}
	return out
}

// dryRun compiles expect_argv and expect_stdin: the test of a shell tool
// that checks what the tool would run instead of running it. Its result is
// then an empty output, so no expectation on the result may come with them.
func (c *compiler) dryRun(t *config.Test, tc *Case, snap *snapshot.Snapshot) {
	at := t.ExpectArgv
	if at == nil {
		at = t.ExpectStdin
	}
	// The tools whose adapter can record what it would run (shell).
	dry := false
	if snap != nil {
		if tool, ok := snap.Tool(tc.target); ok {
			dry = tool.DryRuns()
		}
	}
	if tc.kind != kindTool || !dry {
		c.errorf(at.Range, "Not a shell tool", "%s checks the process a shell tool would start; %s %q is not a shell tool.", at.Name, tc.kind, tc.target)
		return
	}
	for _, a := range []*hcl.Attribute{t.IsError, t.TextContains, t.TextMatches, t.Assert} {
		if a != nil {
			c.errorf(a.Range, "Result check in a dry run", "With %s the tool is not run, so there is no result to check: test %s in another test block.", at.Name, a.Name)
		}
	}
	if len(t.Mocks) > 0 {
		c.errorf(t.Mocks[0].DeclRange, "Mock in a dry run", "A shell tool's dry run sends no HTTP request.")
	}
	tc.dryRun = true
	if t.ExpectArgv != nil {
		v, ok := c.value(t.ExpectArgv)
		list, isList := v.([]any)
		if ok && !isList {
			c.errorf(t.ExpectArgv.Expr.Range(), "Invalid expect_argv", "expect_argv is a list of strings: the program, then its arguments.")
		}
		for _, x := range list {
			s, isStr := x.(string)
			if !isStr {
				b, _ := json.Marshal(x)
				s = string(b)
			}
			tc.argv = append(tc.argv, s)
		}
	}
	if t.ExpectStdin != nil {
		tc.stdin, tc.checkStdin = c.str(t.ExpectStdin), true
	}
}
