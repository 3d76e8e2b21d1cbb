// Package shell is the adapter behind a tool's `shell` block: it runs one
// program with an argv built from the call's arguments, without a shell, and
// returns what the program printed.
//
//	shell {
//	  command = ["git", "log", "--oneline", "-n", args.n]
//	  dir     = "."
//	  timeout = "10s"
//	}
//
// Every element of command is evaluated on its own and becomes exactly one
// argv element (or, when it evaluates to a list, that many elements), so an
// argument such as "; rm -rf /" reaches the program literally. The program
// runs in its own process group; a timeout or a cancelled call kills the
// whole group, and so does the end of the program, so that nothing it
// started outlives the call. Output is captured up to max_output_bytes per
// stream and the rest is discarded as it arrives. See docs/adapter-shell.md.
package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/hclbody"
	"github.com/mcpd/mcpd/engine/proc"
)

// Defaults and limits of the block's attributes.
const (
	// DefaultPath is the PATH a process gets when the block declares none
	// and does not inherit mcpd's environment.
	DefaultPath = "/usr/local/bin:/usr/bin:/bin"

	defaultTimeout   = 30 * time.Second
	defaultKillGrace = 2 * time.Second
	defaultMaxOutput = 1 << 20 // per stream
	maxMaxOutput     = 1 << 30

	// DefaultMaxConcurrency is how many processes of one tool may run at
	// once when the block does not say: enough for a model's parallel
	// calls, few enough that a burst cannot fork-bomb the host.
	DefaultMaxConcurrency = 8
	maxMaxConcurrency     = 4096

	// tailBytes is how much of the end of stderr (or stdout) an error quotes.
	tailBytes = 2 << 10
	// pipeReadDelay bounds how long a call waits for the output pipes to
	// reach EOF once the process group is gone; only a process that left
	// the group (setsid) and kept the pipes open can make it matter.
	pipeReadDelay = time.Second
	// maxProgressLine is the longest stdout/stderr line matched against a
	// progress pattern; longer lines are skipped.
	maxProgressLine = 64 << 10
)

// Adapter is the shell adapter. It has no backend block and no state of its
// own: every tool's settings live in the Handler that CompileTool returns.
type Adapter struct {
	procs *proc.Supervisor // starts every program
}

// New returns the shell adapter, registered by main as "shell", with a
// process supervisor of its own: its programs end when the process does.
func New() *Adapter { return &Adapter{procs: proc.NewSupervisor()} }

// NewWithSupervisor returns the shell adapter that starts every program
// through procs, which the owner of the process's lifecycle shares with the
// other adapters that start programs and kills on exit.
func NewWithSupervisor(procs *proc.Supervisor) *Adapter { return &Adapter{procs: procs} }

var blockSchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "command", Required: true},
		{Name: "dir"},
		{Name: "env"},
		{Name: "inherit_env"},
		{Name: "stdin"},
		{Name: "timeout"},
		{Name: "kill_grace"},
		{Name: "max_output_bytes"},
		{Name: "ok_exit_codes"},
		{Name: "output"},
		{Name: "allow_dash_args"},
		{Name: "max_concurrency"},
		{Name: "queue_timeout"},
		{Name: "log_stderr"},
	},
	Blocks: []adapter.BlockSchema{{Type: "progress", Schema: progressSchema}},
}

var progressSchema = &adapter.Schema{
	Attributes: []hcl.AttributeSchema{
		{Name: "pattern", Required: true},
		{Name: "total"},
		{Name: "stream"},
	},
}

// Output modes.
const (
	outputText  = "text"
	outputJSON  = "json"
	outputLines = "lines"
)

// argElem is one element of command after the executable: either its
// load-time value (one string, or several when it is a list) or the
// expression to evaluate on each call.
type argElem struct {
	index  int // position in command, for messages
	expr   hcl.Expression
	static []string

	params []string // the params expr refers to, sorted, for messages
	dashOK bool     // every param it uses is listed in allow_dash_args
}

// envVar is an env entry whose value depends on the call; its name is
// fixed by the config.
type envVar struct {
	name string
	expr hcl.Expression
}

// handler is one compiled shell block. It is immutable after CompileTool,
// except for the slots channel, which is safe for concurrent use; so the
// handler is safe for concurrent calls.
type handler struct {
	name    string // command[0] as written, for argv[0] and messages
	exePath string // absolute path, resolved at load; "" when not found then
	// searchPath is the load-time PATH a bare command name is looked up in
	// again on a call when it was not found at load.
	searchPath string
	args       []argElem

	baseDir   string            // the config file's directory, absolute
	dir       string            // resolved static working directory
	dirExpr   hcl.Expression    // non-nil when dir depends on args
	env       map[string]string // the static entries
	envVars   []envVar          // the entries that depend on args
	inherit   bool
	stdin     *string
	stdinExpr hcl.Expression

	timeout   time.Duration
	killGrace time.Duration
	maxOutput int
	okCodes   []int
	output    string
	progress  *progressSpec
	logStderr string // MCP log level of stderr lines sent to the client; "": none
	vars      []string

	// slots holds one token per running process: its capacity is
	// max_concurrency. A call that finds it full waits up to queueTimeout.
	slots        chan struct{}
	queueTimeout time.Duration
	allowDash    map[string]bool // params listed in allow_dash_args

	procs *proc.Supervisor // the adapter's
}

// progressSpec turns output lines into progress notifications.
type progressSpec struct {
	re       *regexp.Regexp
	progress int // submatch index of the progress value
	total    int // submatch index of the total, 0 if none
	message  int // submatch index of the message, 0 if none
	static   float64
	stderr   bool // scan stderr instead of stdout
}

// ToolSchema is the shell block's schema (adapter.Schemaer).
func (a *Adapter) ToolSchema() *adapter.Schema { return blockSchema }

// CompileTool decodes and checks one shell block.
func (a *Adapter) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	if diags := platformCheck(b.Range); diags.HasErrors() {
		return nil, diags
	}
	content, diags := hclbody.Content(b.Body, blockSchema.Body())
	if content == nil {
		return nil, diags
	}
	h := &handler{
		procs:     a.procs,
		timeout:   defaultTimeout,
		killGrace: defaultKillGrace,
		maxOutput: defaultMaxOutput,
		okCodes:   []int{0},
		output:    outputText,
	}
	maxConc := DefaultMaxConcurrency
	c := &compiler{&adapter.Decoder{Scope: b.Scope, Diags: diags}}
	attrs := content.Attributes

	// Load-time settings first: the PATH used to resolve the executable
	// depends on env and inherit_env.
	if at := attrs["timeout"]; at != nil {
		if d, ok := c.Duration(at, "", time.Nanosecond, 0); ok {
			h.timeout = d
		}
	}
	if at := attrs["kill_grace"]; at != nil {
		if d, ok := c.Duration(at, "", 0, 0); ok {
			h.killGrace = d
		}
	}
	if at := attrs["max_output_bytes"]; at != nil {
		if n, ok := c.Int(at, "", 1, maxMaxOutput); ok {
			h.maxOutput = int(n)
		}
	}
	if at := attrs["ok_exit_codes"]; at != nil {
		if codes, ok := c.exitCodes(at); ok {
			h.okCodes = codes
		}
	}
	if at := attrs["output"]; at != nil {
		if s, ok := c.String(at, ""); ok {
			switch s {
			case outputText, outputJSON, outputLines:
				h.output = s
			default:
				c.Errorf(at.Expr.Range(), "Invalid output mode", "output must be %q, %q or %q, not %q.", outputText, outputJSON, outputLines, s)
			}
		}
	}
	if at := attrs["log_stderr"]; at != nil {
		if s, ok := c.String(at, ""); ok {
			if adapter.ValidLogLevel(s) {
				h.logStderr = s
			} else {
				c.Errorf(at.Expr.Range(), "Invalid log_stderr", "log_stderr is the log level of the stderr lines sent to the client: one of %s, not %q.", strings.Join(adapter.LogLevels, ", "), s)
			}
		}
	}
	if at := attrs["max_concurrency"]; at != nil {
		if n, ok := c.Int(at, "", 1, maxMaxConcurrency); ok {
			maxConc = int(n)
		}
	}
	h.slots = make(chan struct{}, maxConc)
	// A call waits for a free slot at most as long as it may run.
	h.queueTimeout = h.timeout
	if at := attrs["queue_timeout"]; at != nil {
		if d, ok := c.Duration(at, "", 0, 0); ok {
			h.queueTimeout = d
		}
	}
	if at := attrs["allow_dash_args"]; at != nil {
		h.allowDash = c.allowDash(at)
	}
	if at := attrs["inherit_env"]; at != nil {
		if v, ok := c.Static(at, "", cty.Bool); ok {
			h.inherit = v.True()
		}
	}
	if at := attrs["env"]; at != nil {
		h.env, h.envVars = c.env(at)
	}
	// The default working directory, and the one used when a dir that
	// depends on the call evaluates to null: the config file's directory.
	if d, err := absDir(b.Scope.Dir, "."); err != nil {
		c.Errorf(b.Range, "Invalid dir", "%v.", err)
	} else {
		h.dir, h.baseDir = d, d
	}
	if at := attrs["dir"]; at != nil {
		if d, expr := c.dir(at, b.Scope.Dir); expr != nil {
			h.dirExpr = expr
		} else if d != "" {
			h.dir = d
		}
	}
	if at := attrs["stdin"]; at != nil {
		if adapter.IsStatic(at.Expr) {
			if v, ok := c.Static(at, "", cty.String); ok && !v.IsNull() {
				s := v.AsString()
				h.stdin = &s
			}
		} else {
			c.Add(b.Scope.Check(at.Expr))
			h.stdinExpr = at.Expr
		}
	}
	if at := attrs["command"]; at != nil {
		c.command(h, at)
	}
	if len(content.Blocks) > 1 {
		rng := content.Blocks[1].DefRange
		c.Errorf(rng, "Duplicate progress block", "A shell block takes at most one progress block; the first is at %s.", content.Blocks[0].DefRange)
	}
	if len(content.Blocks) > 0 {
		h.progress = c.progress(content.Blocks[0])
	}

	h.vars = []string{"exit_code", "lines", "stderr", "stderr_truncated", "stdout", "stdout_truncated"}
	if h.output == outputJSON {
		h.vars = append(h.vars, "json")
		sort.Strings(h.vars)
	}
	if c.Diags.HasErrors() {
		return nil, c.Diags
	}
	return h, c.Diags
}

// Vars names the variables of Output.Vars.
func (h *handler) Vars() []string { return append([]string(nil), h.vars...) }

// Traits: a call evaluates the block's expressions, holds at most the cap
// of stdout plus that of stderr, and under adapter.WithDryRun records the
// process it would start instead of starting it.
func (h *handler) Traits() adapter.Traits {
	return adapter.Traits{ReadsEval: true, MaxOutputBytes: 2 * int64(h.maxOutput), DryRuns: true}
}

// compiler is the toolkit's Decoder, with the decoding of what only a
// shell block has.
type compiler struct{ *adapter.Decoder }

func (c *compiler) exitCodes(at *hcl.Attribute) ([]int, bool) {
	v, ok := c.Static(at, "", cty.List(cty.Number))
	if !ok {
		return nil, false
	}
	if v.LengthInt() == 0 {
		c.Errorf(at.Expr.Range(), "Invalid value", "ok_exit_codes must list at least one exit code.")
		return nil, false
	}
	var codes []int
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() {
			c.Errorf(at.Expr.Range(), "Invalid value", "ok_exit_codes must not contain null.")
			return nil, false
		}
		n, d := adapter.IntValue(ev, at.Expr.Range(), "each of ok_exit_codes", 0, 255)
		if !c.Add(d) {
			return nil, false
		}
		codes = append(codes, int(n))
	}
	return codes, true
}

// env decodes env. A static env is evaluated now. One that depends on the
// call must be an object literal, so that every variable name is fixed by
// the config, and the variables that decide which code a program loads or
// runs (hijackVar) must have static values: a call chooses values, never
// which program or library runs.
func (c *compiler) env(at *hcl.Attribute) (map[string]string, []envVar) {
	if adapter.IsStatic(at.Expr) {
		if d := c.Scope.CheckStatic(at.Expr, "env"); d.HasErrors() {
			c.Add(d)
			return nil, nil
		}
		m, err := adapter.EvalStringMap(at.Expr, c.Scope.EvalContext())
		if err != nil {
			c.Errorf(at.Expr.Range(), "Invalid env", "env must be a map of strings: %s.", err)
			return nil, nil
		}
		if err := checkEnv(m); err != nil {
			c.Errorf(at.Expr.Range(), "Invalid env", "%s.", err)
			return nil, nil
		}
		return m, nil
	}
	obj, ok := at.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		c.Errorf(at.Expr.Range(), "Invalid env", "env must be an object literal { NAME = value, ... } when it uses args, so that the variable names are fixed by the config; only values may depend on the call.")
		return nil, nil
	}
	static := map[string]string{}
	var vars []envVar
	for _, item := range obj.Items {
		if !adapter.IsStatic(item.KeyExpr) {
			c.Errorf(item.KeyExpr.Range(), "Env name from args", "env names must be fixed by the config: a call must not choose which variable it sets (LD_PRELOAD, PATH, ...). Only values may use args.")
			continue
		}
		kv, ok := c.StaticExpr(item.KeyExpr, "An env name", cty.String)
		if !ok {
			continue
		}
		name := kv.AsString()
		if err := checkEnv(map[string]string{name: ""}); err != nil {
			c.Errorf(item.KeyExpr.Range(), "Invalid env", "%s.", err)
			continue
		}
		if !adapter.IsStatic(item.ValueExpr) {
			d := c.Scope.Check(item.ValueExpr)
			c.Add(d)
			if d.HasErrors() {
				continue
			}
			if hijackVar(name) {
				c.Errorf(item.ValueExpr.Range(), "Env value from args", "env %s cannot depend on the call's arguments: it decides which programs, libraries or configuration the program loads, so a call could make it run code of its choosing. Give it a static value.", name)
				continue
			}
			vars = append(vars, envVar{name: name, expr: item.ValueExpr})
			continue
		}
		v, ok := c.ExprValue(item.ValueExpr, "env "+name)
		if !ok {
			continue
		}
		if v.IsNull() {
			continue
		}
		s, err := adapter.ValueString(v)
		if err != nil {
			c.Errorf(item.ValueExpr.Range(), "Invalid env", "env %s: %s.", name, err)
			continue
		}
		if err := checkEnv(map[string]string{name: s}); err != nil {
			c.Errorf(item.ValueExpr.Range(), "Invalid env", "%s.", err)
			continue
		}
		static[name] = s
	}
	return static, vars
}

// hijackVar reports whether an environment variable decides which code a
// program runs: the executable search path, the dynamic loader's settings,
// shell start-up files and field splitting, interpreters' module paths and
// options, and the helper programs and configuration files that common
// tools (git, less, ssh) run or read. Such a variable may be declared, but
// its value must not come from a call. The list is documented in
// docs/adapter-shell.md; names are case-sensitive, as in the kernel.
func hijackVar(name string) bool {
	for _, p := range []string{"LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG", "PYTHON", "PERL", "RUBY", "NODE_", "JAVA_", "_JAVA_", "JDK_JAVA_", "LUA_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "PATH", "IFS", "ENV", "BASH_ENV", "CDPATH", "SHELLOPTS", "BASHOPTS", "PS4", "SHELL",
		"GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "MALLOC_CONF",
		"HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
		"EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "LESSOPEN", "LESSCLOSE", "SSH_ASKPASS", "SUDO_ASKPASS",
		"GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
		"GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "GIT_DIR", "GIT_TEMPLATE_DIR",
		"CLASSPATH", "GEM_HOME", "GEM_PATH":
		return true
	}
	return false
}

// allowDash decodes allow_dash_args: the params whose values may start
// with '-' anywhere in command.
func (c *compiler) allowDash(at *hcl.Attribute) map[string]bool {
	v, ok := c.Static(at, "", cty.List(cty.String))
	if !ok {
		return nil
	}
	m := map[string]bool{}
	for it := v.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		if ev.IsNull() {
			c.Errorf(at.Expr.Range(), "Invalid allow_dash_args", "allow_dash_args must list param names, not null.")
			continue
		}
		name := ev.AsString()
		if _, declared := c.Scope.Params[name]; !declared {
			c.Errorf(at.Expr.Range(), "Invalid allow_dash_args", "allow_dash_args names %q, which is not a declared param; declared params: %s.", name, c.Scope.DeclaredParams())
			continue
		}
		m[name] = true
	}
	return m
}

// dir decodes the working directory. A static dir is resolved and checked
// now; a missing directory is a warning, since it may be created later.
func (c *compiler) dir(at *hcl.Attribute, base string) (string, hcl.Expression) {
	if !adapter.IsStatic(at.Expr) {
		c.Add(c.Scope.Check(at.Expr))
		return "", at.Expr
	}
	s, ok := c.String(at, "")
	if !ok {
		return "", nil
	}
	if s == "" || strings.IndexByte(s, 0) >= 0 {
		c.Errorf(at.Expr.Range(), "Invalid dir", "dir must be a non-empty path without NUL bytes.")
		return "", nil
	}
	p, err := absDir(base, s)
	if err != nil {
		c.Errorf(at.Expr.Range(), "Invalid dir", "%v.", err)
		return "", nil
	}
	if fi, err := os.Stat(p); err != nil {
		c.Warnf(at.Expr.Range(), "Working directory not found", "dir %s does not exist yet (%v); calls will fail until it does.", p, unwrapPathErr(err))
	} else if !fi.IsDir() {
		c.Warnf(at.Expr.Range(), "Working directory is not a directory", "dir %s is not a directory; calls will fail.", p)
	}
	return p, nil
}

// command decodes the argv list.
func (c *compiler) command(h *handler, at *hcl.Attribute) {
	elems, d := hcl.ExprList(at.Expr)
	if d.HasErrors() {
		c.commandNotList(at)
		return
	}
	if len(elems) == 0 {
		c.Errorf(at.Expr.Range(), "Empty command", "command must list at least the executable, e.g. [\"git\", \"status\"].")
		return
	}
	// The executable is fixed by the config: a call must never choose which
	// program runs.
	if v, ok := c.StaticExpr(elems[0], "The executable (command[0])", cty.String); ok {
		name := v.AsString()
		switch {
		case name == "" || strings.IndexByte(name, 0) >= 0:
			c.Errorf(elems[0].Range(), "Invalid executable", "command[0] must be a non-empty program name or path without NUL bytes.")
		default:
			h.name = name
			c.resolveExecutable(h, elems[0].Range())
		}
	}
	afterSep := false
	for i, e := range elems[1:] {
		el := argElem{index: i + 1}
		if adapter.IsStatic(e) {
			if d := c.Scope.CheckStatic(e, "command"); d.HasErrors() {
				c.Add(d)
				continue
			}
			v, d := e.Value(c.Scope.EvalContext())
			c.Add(d)
			if d.HasErrors() {
				continue
			}
			strs, err := argStrings(v, el.index)
			if err != nil {
				c.Errorf(e.Range(), "Invalid command element", "%s.", err)
				continue
			}
			el.static = strs
			for _, a := range strs {
				if a == "--" {
					afterSep = true
				}
			}
		} else {
			d := c.Scope.Check(e)
			c.Add(d)
			if d.HasErrors() {
				continue
			}
			if name, ok := argsParam(e); ok && c.Scope.Params[name] == "object" {
				c.Errorf(e.Range(), "Invalid command element", "args.%s is an object; a command element must be a string, number, boolean or a list of those.", name)
				continue
			}
			el.expr = e
			el.params = exprParams(e)
			el.dashOK = len(el.params) > 0
			for _, p := range el.params {
				el.dashOK = el.dashOK && h.allowDash[p]
			}
			if el.dashOK && !afterSep {
				c.Warnf(e.Range(), "Argument may be read as an option", "command[%d] uses %s, listed in allow_dash_args, and no \"--\" comes before it: a value such as --output=FILE reaches %s as an option. Keep it only where %s reads the next argument as a value (after an option that takes one, such as \"-e\"), or put \"--\" before it and drop it from allow_dash_args.", el.index, quoteParams(el.params), h.name, h.name)
			}
		}
		h.args = append(h.args, el)
	}
}

// exprParams lists the params an expression refers to (args.<name>).
func exprParams(e hcl.Expression) []string {
	seen := map[string]bool{}
	var names []string
	for _, tr := range e.Variables() {
		if tr.RootName() != "args" || len(tr) < 2 {
			continue
		}
		var name string
		switch step := tr[1].(type) {
		case hcl.TraverseAttr:
			name = step.Name
		case hcl.TraverseIndex:
			if step.Key.Type() == cty.String {
				name = step.Key.AsString()
			}
		}
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// quoteParams names params for messages: args.a, args.b.
func quoteParams(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "args." + n
	}
	return strings.Join(q, ", ")
}

// commandNotList explains how to write command when it is not a list
// literal, with a suggestion when it is a plain string.
func (c *compiler) commandNotList(at *hcl.Attribute) {
	general := "command is an argv list, run without a shell: its first element is the executable and each further element is one argument, e.g. [\"git\", \"log\", \"-n\", args.n]. To pass a variable number of arguments, use an element that is a list (args.paths, or args.x == null ? [] : [\"--x\", args.x])."
	detail := "command must be a list literal [...], so that the executable is fixed by the config. " + general
	if isTemplate(at.Expr) || adapter.IsStatic(at.Expr) {
		detail = "command must be a list, not a string: mcpd never runs a shell, so write each argument as a separate element, e.g. [\"git\", \"show\", args.sha] instead of \"git show ${args.sha}\"."
	}
	if adapter.IsStatic(at.Expr) {
		v, d := at.Expr.Value(c.Scope.EvalContext())
		switch {
		case d.HasErrors() || !v.IsWhollyKnown() || v.IsNull():
		case v.Type() == cty.String:
			words := strings.Fields(v.AsString())
			quoted := make([]string, len(words))
			for i, w := range words {
				quoted[i] = fmt.Sprintf("%q", w)
			}
			detail = fmt.Sprintf("command must be a list, not a string: mcpd never runs a shell, so write command = [%s] (each argument a separate element). If you really need shell syntax, say so explicitly with [\"sh\", \"-c\", \"...\"] and never interpolate arguments into the script.", strings.Join(quoted, ", "))
		default:
			detail = "command must be a list literal [...], so that the executable is fixed by the config. " + general
		}
	}
	c.Errorf(at.Expr.Range(), "command must be a list", "%s", detail)
}

// resolveExecutable fixes the program at load time: a path with a slash is
// made absolute (against the config file's directory), a bare name is
// looked up in the PATH the process gets, which is static (see hijackVar).
// A program that cannot be found is a warning, not an error: the same
// config is often shared by machines and images that have different
// programs (a FROM scratch image has none), and one missing program must
// not keep every other tool from being served. Such a tool looks the
// program up again on each call, in the same load-time PATH (never one a
// call chooses), and until it is installed answers with a tool error.
func (c *compiler) resolveExecutable(h *handler, rng hcl.Range) {
	if strings.ContainsRune(h.name, '/') {
		p, err := filepath.Abs(funcs.Resolve(c.Scope.Dir, h.name))
		if err != nil {
			c.Errorf(rng, "Invalid executable", "cannot make %s absolute: %v.", h.name, err)
			return
		}
		h.exePath = p
		if err := checkExecutable(p); err != nil {
			c.Warnf(rng, "Executable not found", "%s (%s): %v. Calls of this tool fail until it exists.", h.name, p, err)
		}
		return
	}
	path := effectivePath(h.env, h.inherit, os.Environ())
	h.searchPath = path
	p, err := lookPath(h.name, path)
	if err != nil {
		c.Warnf(rng, "Executable not found", "%q is not in PATH (%s); relative PATH entries are not searched. Calls of this tool fail until it is installed. Install it, declare env = { PATH = \"...\" }, or write an absolute path.", h.name, path)
		return
	}
	h.exePath = p
}

// progress decodes the progress block.
func (c *compiler) progress(b *hcl.Block) *progressSpec {
	content, ok := c.Content(b.Body, progressSchema)
	if !ok {
		return nil
	}
	spec := &progressSpec{}
	ok = true
	if at := content.Attributes["pattern"]; at != nil {
		s, sok := c.String(at, "")
		if sok {
			re, err := regexp.Compile(s)
			if err != nil {
				c.Errorf(at.Expr.Range(), "Invalid progress pattern", "pattern is not a valid regular expression (RE2 syntax): %v.", err)
				ok = false
			} else {
				spec.re = re
				ok = c.progressGroups(spec, at.Expr.Range()) && ok
			}
		} else {
			ok = false
		}
	}
	if at := content.Attributes["total"]; at != nil {
		if v, vok := c.Static(at, "", cty.Number); vok {
			f, _ := v.AsBigFloat().Float64()
			if f <= 0 {
				c.Errorf(at.Expr.Range(), "Invalid progress total", "total must be positive, got %v.", f)
				ok = false
			}
			spec.static = f
		} else {
			ok = false
		}
	}
	if at := content.Attributes["stream"]; at != nil {
		if s, sok := c.String(at, ""); sok {
			switch s {
			case "stdout":
			case "stderr":
				spec.stderr = true
			default:
				c.Errorf(at.Expr.Range(), "Invalid progress stream", "stream must be \"stdout\" or \"stderr\", not %q.", s)
				ok = false
			}
		} else {
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return spec
}

// progressGroups assigns the pattern's capture groups: the groups named
// progress, total and message, else the first unnamed group is the progress
// and the second the total.
func (c *compiler) progressGroups(spec *progressSpec, rng hcl.Range) bool {
	var unnamed []int
	for i, name := range spec.re.SubexpNames() {
		if i == 0 {
			continue
		}
		switch name {
		case "":
			unnamed = append(unnamed, i)
		case "progress":
			spec.progress = i
		case "total":
			spec.total = i
		case "message":
			spec.message = i
		default:
			c.Errorf(rng, "Invalid progress pattern", "capture group %q has an unknown name; named groups may be progress, total and message (or use unnamed groups: the first is the progress, the second the total).", name)
			return false
		}
	}
	if spec.progress == 0 && len(unnamed) > 0 {
		spec.progress, unnamed = unnamed[0], unnamed[1:]
	}
	if spec.total == 0 && len(unnamed) > 0 {
		spec.total = unnamed[0]
	}
	if spec.progress == 0 {
		c.Errorf(rng, "Invalid progress pattern", "pattern has no capture group for the progress value; write one, e.g. \"^(\\\\d+)/(\\\\d+)\" or \"(?P<progress>\\\\d+)%%\".")
		return false
	}
	return true
}

// argsParam reports the param an expression refers to when it is exactly
// args.<name>.
func argsParam(e hcl.Expression) (string, bool) {
	tr, d := hcl.AbsTraversalForExpr(e)
	if d.HasErrors() || len(tr) != 2 || tr.RootName() != "args" {
		return "", false
	}
	if a, ok := tr[1].(hcl.TraverseAttr); ok {
		return a.Name, true
	}
	return "", false
}

// absDir resolves a working directory against the config file's directory
// and makes it absolute, so that it does not depend on mcpd's own working
// directory at call time.
func absDir(base, dir string) (string, error) {
	p, err := filepath.Abs(funcs.Resolve(base, dir))
	if err != nil {
		return "", fmt.Errorf("cannot make dir %s absolute: %v", dir, err)
	}
	return p, nil
}

func isTemplate(e hcl.Expression) bool {
	switch e.(type) {
	case *hclsyntax.TemplateExpr, *hclsyntax.TemplateWrapExpr:
		return true
	}
	return false
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
