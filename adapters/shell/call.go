package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/mcpd/mcpd/engine/adapter"
)

// Call runs the program once.
func (h *handler) Call(ctx context.Context, req *adapter.Request) (*adapter.Output, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s was not started: %w", h.name, err)
	}
	argv, err := h.argv(req.Eval)
	if err != nil {
		return nil, err
	}
	env, err := h.environ(req.Eval)
	if err != nil {
		return nil, err
	}
	dir, err := h.workDir(req.Eval)
	if err != nil {
		return nil, err
	}
	if h.inherit && dir != "" {
		env = setPWD(env, h.env, dir)
	}
	if record := adapter.DryRun(ctx); record != nil {
		// `mcpd test` with expect_argv: say what would run, run nothing.
		stdin, err := h.stdinValue(req.Eval)
		if err != nil {
			return nil, err
		}
		record(adapter.Invocation{Argv: argv, Stdin: stdin, Dir: dir})
		return h.result(0, newCapture(h.maxOutput), newCapture(h.maxOutput))
	}
	path := h.exePath
	if path == "" {
		// Not installed at load: look again, in the load-time PATH only.
		if path, err = lookPath(h.name, h.searchPath); err != nil {
			return nil, fmt.Errorf("%s is not installed here: %q is not in PATH (%s)", req.Tool, h.name, h.searchPath)
		}
	}

	release, err := h.acquire(ctx, req.Tool)
	if err != nil {
		return nil, err
	}
	defer release()

	stdout := newCapture(h.maxOutput)
	stderr := newCapture(h.maxOutput)
	var prog *progressScanner
	if h.progress != nil {
		report := req.Progress
		if report == nil {
			report = func(float64, float64, string) {}
		}
		prog = newProgressScanner(h.progress, report)
		if h.progress.stderr {
			stderr.lines = prog
		} else {
			stdout.lines = prog
		}
	}

	if h.logStderr != "" && req.Log != nil {
		stderr.logs = newLineLogger(h.logStderr, req.Log)
	}

	sio := stdio{stdout: stdout, stderr: stderr}
	if sio.stdin, err = h.stdinValue(req.Eval); err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir}
	res, err := runProcess(ctx, cmd, sio, h.timeout, h.killGrace, h.procs)
	var se *startError
	if errors.As(err, &se) {
		return nil, h.explainStart(se.err, path, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.name, err)
	}
	if prog != nil {
		prog.flush()
	}
	if stderr.logs != nil {
		stderr.logs.flush()
	}

	switch {
	case res.ctxErr != nil:
		return nil, h.withTail(fmt.Errorf("%s was cancelled (%v); its process group was killed", h.name, res.ctxErr), stdout, stderr)
	case res.timedOut:
		return nil, h.withTail(fmt.Errorf("%s timed out after %s; its process group was killed", h.name, h.timeout), stdout, stderr)
	}
	ws := res.status
	if ws.Signaled() {
		return nil, h.withTail(fmt.Errorf("%s was killed by signal %s", h.name, signalName(ws.Signal())), stdout, stderr)
	}
	code := ws.ExitStatus()
	if !h.exitOK(code) {
		return nil, h.withTail(fmt.Errorf("%s exited with code %d", h.name, code), stdout, stderr)
	}
	return h.result(code, stdout, stderr)
}

// acquire takes one of the tool's process slots, waiting up to
// queueTimeout for one to free up. The returned func gives it back.
func (h *handler) acquire(ctx context.Context, tool string) (func(), error) {
	release := func() { <-h.slots }
	select {
	case h.slots <- struct{}{}:
		return release, nil
	default:
	}
	if tool == "" {
		tool = h.name
	}
	busy := fmt.Errorf("%s is busy: it already runs its maximum of %d calls at once (max_concurrency) and none finished within %s; retry later", tool, cap(h.slots), h.queueTimeout)
	if h.queueTimeout <= 0 {
		return nil, busy
	}
	timer := time.NewTimer(h.queueTimeout)
	defer timer.Stop()
	select {
	case h.slots <- struct{}{}:
		return release, nil
	case <-timer.C:
		return nil, busy
	case <-ctx.Done():
		return nil, fmt.Errorf("%s was cancelled (%v) while waiting for one of the %d calls already running to finish", tool, context.Cause(ctx), cap(h.slots))
	}
}

// argItem is one argv string and whether a call chose its first byte.
type argItem struct {
	s      string
	caller bool
}

// argv evaluates the command elements after the executable. A string whose
// first byte the call chose must not start with '-' (the program could read
// it as an option, such as sort's --output=FILE) unless a literal "--"
// comes before it or its params are listed in allow_dash_args.
func (h *handler) argv(ectx *hcl.EvalContext) ([]string, error) {
	argv := make([]string, 1, len(h.args)+1)
	argv[0] = h.name
	afterSep := false // a "--" written in the config came before
	for _, el := range h.args {
		if el.expr == nil {
			for _, a := range el.static {
				afterSep = afterSep || a == "--"
			}
			argv = append(argv, el.static...)
			continue
		}
		items, err := evalArg(el.expr, ectx, el.index)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if it.caller && !afterSep && !el.dashOK && strings.HasPrefix(it.s, "-") {
				return nil, h.dashError(el)
			}
			afterSep = afterSep || (!it.caller && it.s == "--")
			argv = append(argv, it.s)
		}
	}
	return argv, nil
}

// dashError tells the model which argument to change, without quoting it.
func (h *handler) dashError(el argElem) error {
	what := "command[" + strconv.Itoa(el.index) + "]"
	switch len(el.params) {
	case 0:
	case 1:
		what = fmt.Sprintf("argument %q", el.params[0])
	default:
		q := make([]string, len(el.params))
		for i, p := range el.params {
			q[i] = strconv.Quote(p)
		}
		what = "arguments " + strings.Join(q, ", ")
	}
	return fmt.Errorf("%s must not start with '-': %s would read it as an option, not as a value. Pass a value without a leading '-' (a relative file name can be written as ./-name)", what, h.name)
}

// evalArg evaluates one command element into argv strings, recording for
// each whether its first byte comes from the call. Conditionals and tuple
// literals are walked so that the literals they contain ("--author" in
// args.a == null ? [] : ["--author", args.a]) count as the config's.
func evalArg(e hcl.Expression, ectx *hcl.EvalContext, index int) ([]argItem, error) {
	switch x := e.(type) {
	case *hclsyntax.ParenthesesExpr:
		return evalArg(x.Expression, ectx, index)
	case *hclsyntax.ConditionalExpr:
		branch, err := pickBranch(x, ectx)
		if err != nil {
			return nil, fmt.Errorf("command[%d]: %w", index, err)
		}
		return evalArg(branch, ectx, index)
	case *hclsyntax.TupleConsExpr:
		items := make([]argItem, 0, len(x.Exprs))
		for i, ie := range x.Exprs {
			it, err := evalScalar(ie, ectx)
			if errors.Is(err, errNull) {
				return nil, fmt.Errorf("command[%d][%d] is null", index, i)
			}
			if err != nil {
				return nil, fmt.Errorf("command[%d][%d]: %w", index, i, err)
			}
			items = append(items, it)
		}
		return items, nil
	}
	v, diags := e.Value(ectx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("command[%d]: %w", index, adapter.DiagError(diags))
	}
	strs, err := argStrings(v, index)
	if err != nil {
		return nil, err
	}
	caller := leadFromArgs(e)
	items := make([]argItem, len(strs))
	for i, s := range strs {
		items[i] = argItem{s: s, caller: caller}
	}
	return items, nil
}

var errNull = errors.New("is null")

// evalScalar evaluates one element of a tuple literal in command.
func evalScalar(e hcl.Expression, ectx *hcl.EvalContext) (argItem, error) {
	switch x := e.(type) {
	case *hclsyntax.ParenthesesExpr:
		return evalScalar(x.Expression, ectx)
	case *hclsyntax.ConditionalExpr:
		branch, err := pickBranch(x, ectx)
		if err != nil {
			return argItem{}, err
		}
		return evalScalar(branch, ectx)
	}
	v, diags := e.Value(ectx)
	if diags.HasErrors() {
		return argItem{}, adapter.DiagError(diags)
	}
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return argItem{}, errNull
	}
	s, err := argString(v)
	if err != nil {
		return argItem{}, err
	}
	return argItem{s: s, caller: leadFromArgs(e)}, nil
}

// pickBranch evaluates a conditional's condition and returns the branch it
// selects.
func pickBranch(x *hclsyntax.ConditionalExpr, ectx *hcl.EvalContext) (hcl.Expression, error) {
	cv, diags := x.Condition.Value(ectx)
	if diags.HasErrors() {
		return nil, adapter.DiagError(diags)
	}
	cv, _ = cv.UnmarkDeep()
	if cv.IsNull() {
		return nil, errors.New("the condition is null")
	}
	b, err := convert.Convert(cv, cty.Bool)
	if err != nil {
		return nil, fmt.Errorf("the condition must be a boolean, got %s", cv.Type().FriendlyName())
	}
	if b.True() {
		return x.TrueResult, nil
	}
	return x.FalseResult, nil
}

// leadFromArgs reports whether the call may choose the first byte of the
// strings e evaluates to: false when e is static, or a template that starts
// with literal text ("--max-count=${args.n}": the dash is the config's).
func leadFromArgs(e hcl.Expression) bool {
	if adapter.IsStatic(e) {
		return false
	}
	switch x := e.(type) {
	case *hclsyntax.TemplateWrapExpr:
		return leadFromArgs(x.Wrapped)
	case *hclsyntax.ParenthesesExpr:
		return leadFromArgs(x.Expression)
	case *hclsyntax.ForExpr:
		// [for f in args.files : "--file=${f}"]: each item is led by the
		// value expression; its iteration variables count as the call's.
		return x.KeyExpr != nil || leadFromArgs(x.ValExpr)
	case *hclsyntax.TemplateExpr:
		if len(x.Parts) > 0 {
			if lit, ok := x.Parts[0].(*hclsyntax.LiteralValueExpr); ok && lit.Val.Type() == cty.String && lit.Val.IsKnown() && !lit.Val.IsNull() && lit.Val.AsString() != "" {
				return false
			}
		}
	case interface{ UnwrapExpression() hcl.Expression }:
		// A for's value as armed by adapter.Scope.Check (see forbound.go).
		return leadFromArgs(x.UnwrapExpression())
	}
	return true
}

// argStrings converts one command element's value to argv strings: a
// string, number or bool is one argument, a list or tuple is one argument
// per element (an empty list is none).
func argStrings(v cty.Value, index int) ([]string, error) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() {
		return nil, fmt.Errorf("command[%d] is null (an optional argument that was not given?); leave it out with a list element such as args.x == null ? [] : [args.x]", index)
	}
	t := v.Type()
	if t.IsListType() || t.IsTupleType() || t.IsSetType() {
		out := make([]string, 0, v.LengthInt())
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			_, ev := it.Element()
			if ev.IsNull() {
				return nil, fmt.Errorf("command[%d][%d] is null", index, i)
			}
			s, err := argString(ev)
			if err != nil {
				return nil, fmt.Errorf("command[%d][%d]: %w", index, i, err)
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := argString(v)
	if err != nil {
		return nil, fmt.Errorf("command[%d]: %w", index, err)
	}
	return []string{s}, nil
}

func argString(v cty.Value) (string, error) {
	t := v.Type()
	if t != cty.String && t != cty.Number && t != cty.Bool {
		return "", fmt.Errorf("a string, number or boolean is required, got %s", t.FriendlyName())
	}
	s, err := adapter.ValueString(v)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("contains a NUL byte, which cannot be passed to a program")
	}
	return s, nil
}

// environ builds the process environment: the declared variables plus a
// minimal PATH, or mcpd's environment overlaid with the declared variables
// when inherit_env is set.
func (h *handler) environ(ectx *hcl.EvalContext) ([]string, error) {
	declared := h.env
	if len(h.envVars) > 0 {
		declared = make(map[string]string, len(h.env)+len(h.envVars))
		for k, v := range h.env {
			declared[k] = v
		}
		for _, ev := range h.envVars {
			v, diags := ev.expr.Value(ectx)
			if diags.HasErrors() {
				return nil, fmt.Errorf("env %s: %w", ev.name, adapter.DiagError(diags))
			}
			if v, _ = v.UnmarkDeep(); v.IsNull() {
				delete(declared, ev.name) // an optional argument that was not given
				continue
			}
			s, err := adapter.ValueString(v)
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", ev.name, err)
			}
			if err := checkEnv(map[string]string{ev.name: s}); err != nil {
				return nil, err
			}
			declared[ev.name] = s
		}
	}
	return buildEnv(declared, h.inherit, os.Environ()), nil
}

func buildEnv(declared map[string]string, inherit bool, parent []string) []string {
	merged := make(map[string]string, len(declared)+1)
	if inherit {
		for _, kv := range parent {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				merged[k] = v
			}
		}
	}
	for k, v := range declared {
		merged[k] = v
	}
	if _, ok := merged["PATH"]; !ok {
		merged["PATH"] = DefaultPath
	}
	env := make([]string, 0, len(merged))
	for k, v := range merged {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// effectivePath is the PATH a process would get, for load-time checks.
func effectivePath(declared map[string]string, inherit bool, parent []string) string {
	return envLookup(buildEnv(declared, inherit, parent), "PATH")
}

// checkEnv rejects names and values exec cannot pass. Values are never
// quoted in the message: they may be secrets.
func checkEnv(m map[string]string) error {
	for k, v := range m {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env name %q is invalid: names must be non-empty and contain neither '=' nor NUL", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("env %s contains a NUL byte, which cannot be passed to a program", k)
		}
	}
	return nil
}

func envLookup(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// setPWD points an inherited PWD at the working directory, unless the block
// declares PWD itself.
func setPWD(env []string, declared map[string]string, dir string) []string {
	if _, ok := declared["PWD"]; ok {
		return env
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return env
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PWD=") {
			env[i] = "PWD=" + abs
			return env
		}
	}
	return append(env, "PWD="+abs)
}

func (h *handler) workDir(ectx *hcl.EvalContext) (string, error) {
	if h.dirExpr == nil {
		return h.dir, nil
	}
	v, diags := h.dirExpr.Value(ectx)
	if diags.HasErrors() {
		return "", fmt.Errorf("dir: %w", adapter.DiagError(diags))
	}
	if v.IsNull() {
		return h.dir, nil
	}
	s, err := adapter.ValueString(v)
	if err != nil {
		return "", fmt.Errorf("dir: %w", err)
	}
	if s == "" || strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("dir must be a non-empty path without NUL bytes")
	}
	return absDir(h.baseDir, s)
}

func (h *handler) stdinValue(ectx *hcl.EvalContext) (*string, error) {
	if h.stdinExpr == nil {
		return h.stdin, nil
	}
	v, diags := h.stdinExpr.Value(ectx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("stdin: %w", adapter.DiagError(diags))
	}
	if v.IsNull() {
		return nil, nil
	}
	s, err := adapter.ValueString(v)
	if err != nil {
		return nil, fmt.Errorf("stdin: %w", err)
	}
	return &s, nil
}

// lookPath finds an executable in a PATH list. Relative and empty entries
// are skipped: they would resolve against the working directory.
func lookPath(name, path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if checkExecutable(p) == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return unwrapPathErr(err)
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode()&0o111 == 0 {
		return errors.New("is not executable")
	}
	return nil
}

// stdio is what runProcess connects the process to.
type stdio struct {
	stdin          *string // nil: the process reads EOF (/dev/null)
	stdout, stderr *capture
}

// startError is runProcess's error when the process could not be started.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }

// explainStart explains why the process could not be started.
func (h *handler) explainStart(err error, path, dir string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return fmt.Errorf("working directory %s: %v", dir, pe.Err)
	}
	if dir != "" {
		if _, serr := os.Stat(dir); serr != nil {
			return fmt.Errorf("working directory %s: %v", dir, unwrapPathErr(serr))
		}
	}
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot run %s (%s): %v", h.name, path, pe.Err)
	}
	return fmt.Errorf("cannot run %s: %v", h.name, err)
}

func (h *handler) exitOK(code int) bool {
	for _, c := range h.okCodes {
		if c == code {
			return true
		}
	}
	return false
}

// withTail appends the end of stderr (or of stdout when stderr is empty) to
// a failure, so the model sees the program's own explanation.
func (h *handler) withTail(err error, stdout, stderr *capture) error {
	name, c := "stderr", stderr
	if stderr.total == 0 {
		name, c = "stdout", stdout
	}
	tail, cut := c.tailText()
	if strings.TrimSpace(tail) == "" {
		return err
	}
	label := name
	if cut {
		label = fmt.Sprintf("%s (last %d bytes)", name, len(tail))
	}
	return fmt.Errorf("%w; %s:\n%s", err, label, strings.TrimRight(tail, "\r\n"))
}

// result assembles the Output of a successful run.
func (h *handler) result(code int, stdout, stderr *capture) (*adapter.Output, error) {
	// The strings share the captures' buffers, which are not written
	// again: a copy would double what the call holds.
	head := stdout.head
	if !stdout.truncated() {
		head = fitted(head)
	}
	outText := bytesString(head)
	lines := splitLines(outText)
	out := &adapter.Output{
		Vars: map[string]any{
			"stdout":           outText,
			"stderr":           bytesString(fitted(stderr.head)),
			"exit_code":        code,
			"lines":            lines,
			"stdout_truncated": stdout.truncated(),
			"stderr_truncated": stderr.truncated(),
		},
	}
	text := outText
	if stdout.truncated() {
		// The note goes after the output in the same buffer (capture
		// leaves room for it): the bytes of outText are not touched.
		b := head
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		b = fmt.Appendf(b, "[truncated: stdout exceeded max_output_bytes (%d bytes); %d more bytes were discarded]", h.maxOutput, stdout.total-int64(len(stdout.head)))
		text = bytesString(b)
	}
	switch h.output {
	case outputText:
		out.Text = text
	case outputLines:
		out.Text = text
		items := make([]any, len(lines))
		for i, l := range lines {
			items[i] = l
		}
		out.Structured = map[string]any{"lines": items, "truncated": stdout.truncated()}
	case outputJSON:
		v, err := h.parseJSON(stdout)
		if err != nil {
			return nil, err
		}
		out.Vars["json"] = v
		if obj, ok := v.(map[string]any); ok {
			out.Structured = obj
		} else {
			out.Structured = map[string]any{"result": v}
		}
	}
	return out, nil
}

// parseJSON parses stdout as exactly one JSON value.
func (h *handler) parseJSON(stdout *capture) (any, error) {
	if stdout.truncated() {
		return nil, fmt.Errorf("%s printed more than max_output_bytes (%d bytes) of JSON; the output was cut and cannot be parsed", h.name, h.maxOutput)
	}
	data := stdout.head
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s printed nothing; JSON output was expected", h.name)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s did not print valid JSON (%v): %s", h.name, jsonErrText(err), excerpt(data, jsonErrOffset(err, dec)))
	}
	var extra any
	if err := dec.Decode(&extra); err != io.EOF {
		return nil, fmt.Errorf("%s printed more than one JSON value: %s", h.name, excerpt(data, dec.InputOffset()))
	}
	return v, nil
}

func jsonErrText(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "unexpected end of input"
	}
	return err.Error()
}

func jsonErrOffset(err error, dec *json.Decoder) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Offset
	}
	return dec.InputOffset()
}

// excerpt quotes up to 200 bytes of data around offset.
func excerpt(data []byte, offset int64) string {
	const before, after = 80, 120
	start := max(int(offset)-before, 0)
	end := min(int(offset)+after, len(data))
	if start > len(data) {
		start = len(data)
	}
	if end < start {
		end = start
	}
	for start > 0 && start < len(data) && !utf8.RuneStart(data[start]) {
		start--
	}
	for end < len(data) && !utf8.RuneStart(data[end]) {
		end++
	}
	s := strconv.Quote(string(data[start:end]))
	if start > 0 {
		s = "…" + s
	}
	if end < len(data) {
		s += "…"
	}
	return s
}

// splitLines splits output into lines without their "\n" or "\r\n"; a
// final newline does not start another line.
// bytesString is b as a string without a copy: b must never be written
// again.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// fitted is b, or a copy of it when b holds much more room than bytes:
// the string bytesString makes of it keeps all of its array alive.
func fitted(b []byte) []byte {
	if cap(b)-len(b) > len(b)/4+4096 {
		return bytes.Clone(b)
	}
	return b
}

func splitLines(s string) []string {
	if s == "" {
		return []string{}
	}
	s = strings.TrimSuffix(s, "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGBUS:
		return "SIGBUS"
	case syscall.SIGFPE:
		return "SIGFPE"
	case syscall.SIGILL:
		return "SIGILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("%d (%s)", int(s), s)
}
