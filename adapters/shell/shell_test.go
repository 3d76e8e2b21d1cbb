package shell_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/internal/wait"
)

// compile compiles a shell block whose config file lives in dir.
func compile(t testing.TB, dir, src string, params map[string]string) adapter.Handler {
	t.Helper()
	return adaptertest.MustCompile(t, shell.New(), "shell", adaptertest.Config{Src: src, Dir: dir, Params: params})
}

// call runs h like the engine would, recording progress notifications.
func call(ctx context.Context, h adapter.Handler, params map[string]string, args map[string]any, progress func(p, total float64, msg string)) (*adapter.Output, error) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: params}
	if args == nil {
		args = map[string]any{}
	}
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	return h.Call(ctx, &adapter.Request{Tool: "test_tool", Args: args, Eval: scope.CallContext(args), Progress: progress})
}

func mustCall(t *testing.T, h adapter.Handler, params map[string]string, args map[string]any) *adapter.Output {
	t.Helper()
	out, err := call(context.Background(), h, params, args, nil)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return out
}

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHostileArgumentsArriveLiterally(t *testing.T) {
	params := map[string]string{"v": "string"}
	// printf reads no options after its format, so a leading '-' is safe
	// here and allowed; see TestOptionInjection for the default.
	h := compile(t, "", `shell {
  command         = ["printf", "[%s]", args.v]
  allow_dash_args = ["v"]
}`, params)
	for _, v := range []string{
		"; rm -rf /",
		"$(id)",
		"`id`",
		"--output=/etc/x",
		"-n",
		"a\nb\r\nc",
		"  two  spaces  ",
		"'single' \"double\"",
		"* ? [a-z] ~",
		"$HOME ${PATH}",
		"back\\slash \\n",
		"",
		"héllo ✓ 日本",
		"| cat /etc/passwd > /tmp/x &",
		"\x01\x1b[31mred\x7f",
	} {
		t.Run(strconv.Quote(v), func(t *testing.T) {
			out := mustCall(t, h, params, map[string]any{"v": v})
			if want := "[" + v + "]"; out.Text != want || out.Vars["stdout"] != want {
				t.Errorf("got %q, want %q", out.Text, want)
			}
		})
	}
}

func TestArgvElements(t *testing.T) {
	params := map[string]string{"n": "integer", "f": "number", "b": "boolean", "list": "array", "opt": "string"}
	h := compile(t, "", `shell {
  command         = ["printf", "[%s]", args.n, args.f, args.b, args.list, args.opt == null ? [] : ["--opt", args.opt], "lit${args.n}"]
  allow_dash_args = ["f"]
}`, params)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"n": float64(10), "f": 1.5, "b": true, "list": []any{"a b", "$(c)", float64(3)}}, "[10][1.5][true][a b][$(c)][3][lit10]"},
		{map[string]any{"n": float64(0), "f": -2.25, "b": false, "list": []any{}, "opt": "; x"}, "[0][-2.25][false][--opt][; x][lit0]"},
	}
	for _, c := range cases {
		if out := mustCall(t, h, params, c.args); out.Text != c.want {
			t.Errorf("got %q, want %q", out.Text, c.want)
		}
	}

	// A null element is an error, not a silently shifted argv.
	h = compile(t, "", `shell { command = ["printf", "[%s]", args.opt] }`, params)
	_, err := call(context.Background(), h, params, map[string]any{}, nil)
	if err == nil || !strings.Contains(err.Error(), "command[2] is null") {
		t.Errorf("null element: got %v", err)
	}
}

func TestNULBytes(t *testing.T) {
	params := map[string]string{"v": "string"}
	cases := []struct {
		name, src, want string
	}{
		{"argv", `shell { command = ["printf", "%s", args.v] }`, "command[2]: contains a NUL byte"},
		{"argv list", `shell { command = ["printf", "%s", [args.v]] }`, "command[2][0]: contains a NUL byte"},
		{"env", `shell {
  command = ["true"]
  env     = { SECRETISH = args.v }
}`, "env SECRETISH contains a NUL byte"},
		{"dir", `shell {
  command = ["true"]
  dir     = args.v
}`, "NUL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, params)
			_, err := call(context.Background(), h, params, map[string]any{"v": "top\x00secret"}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the value: %v", err)
			}
		})
	}

	// stdin is bytes: NUL passes through.
	h := compile(t, "", `shell {
  command = ["cat"]
  stdin   = args.v
}`, params)
	if out := mustCall(t, h, params, map[string]any{"v": "a\x00b"}); out.Text != "a\x00b" {
		t.Errorf("stdin with NUL: got %q", out.Text)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("MCPD_SHELL_TEST_SECRET", "s3cret")
	params := map[string]string{"v": "string"}
	cases := []struct {
		name    string
		src     string
		want    []string // exact lines of `env`, sorted
		has     []string
		hasNot  []string
		exactly bool
	}{
		{
			name:    "nothing declared: only the minimal PATH",
			src:     `shell { command = ["env"] }`,
			want:    []string{"PATH=" + shell.DefaultPath},
			exactly: true,
		},
		{
			name: "declared, static and from args",
			src: `shell {
  command = ["env"]
  env     = { FOO = "bar baz", FROM_ARG = args.v, FROM_ENV = env("MCPD_SHELL_TEST_SECRET") }
}`,
			want:    []string{"FOO=bar baz", "FROM_ARG=$(id)", "FROM_ENV=s3cret", "PATH=" + shell.DefaultPath},
			exactly: true,
		},
		{
			name: "declared PATH replaces the default",
			src: `shell {
  command = ["/usr/bin/env"]
  env     = { PATH = "/opt/x/bin:/usr/bin" }
}`,
			want:    []string{"PATH=/opt/x/bin:/usr/bin"},
			exactly: true,
		},
		{
			name: "inherit_env",
			src: `shell {
  command     = ["env"]
  inherit_env = true
  env         = { FOO = "bar" }
}`,
			has: []string{"MCPD_SHELL_TEST_SECRET=s3cret", "FOO=bar"},
		},
		{
			name: "inherit_env with an override",
			src: `shell {
  command     = ["env"]
  inherit_env = true
  env         = { MCPD_SHELL_TEST_SECRET = "replaced" }
}`,
			has:    []string{"MCPD_SHELL_TEST_SECRET=replaced"},
			hasNot: []string{"MCPD_SHELL_TEST_SECRET=s3cret"},
		},
		{
			name: "optional arg left out of env",
			src: `shell {
  command = ["env"]
  env     = { OPT = args.v }
}`,
			want:    []string{"PATH=" + shell.DefaultPath},
			exactly: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, params)
			args := map[string]any{"v": "$(id)"}
			if strings.HasPrefix(c.name, "optional") {
				args = map[string]any{}
			}
			out := mustCall(t, h, params, args)
			lines := out.Vars["lines"].([]string)
			if c.exactly && !reflect.DeepEqual(lines, c.want) {
				t.Errorf("env = %q, want %q", lines, c.want)
			}
			for _, w := range c.has {
				if !contains(lines, w) {
					t.Errorf("env lacks %q", w)
				}
			}
			for _, w := range c.hasNot {
				if contains(lines, w) {
					t.Errorf("env has %q", w)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStdin(t *testing.T) {
	params := map[string]string{"in": "string"}
	cases := []struct {
		name, src string
		args      map[string]any
		want      string
	}{
		{"from args", `shell {
  command = ["cat"]
  stdin   = args.in
}`, map[string]any{"in": "line 1\n$(id)\n"}, "line 1\n$(id)\n"},
		{"static", `shell {
  command = ["cat"]
  stdin   = "fixed\n"
}`, nil, "fixed\n"},
		{"templated", `shell {
  command = ["cat"]
  stdin   = "hello ${args.in}"
}`, map[string]any{"in": "world"}, "hello world"},
		{"none: the program reads EOF", `shell { command = ["cat"] }`, nil, ""},
		{"null: the program reads EOF", `shell {
  command = ["cat"]
  stdin   = args.in
}`, map[string]any{}, ""},
		{"not read by the program", `shell {
  command = ["printf", "ok"]
  stdin   = args.in
}`, map[string]any{"in": strings.Repeat("x", 1<<20)}, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, params)
			if out := mustCall(t, h, params, c.args); out.Text != c.want {
				t.Errorf("got %q, want %q", out.Text, c.want)
			}
		})
	}
}

func TestDir(t *testing.T) {
	base := t.TempDir()
	sub := filepath.Join(base, "sub dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"d": "string"}
	cases := []struct {
		name, src string
		args      map[string]any
		want      string
	}{
		{"default: the config file's directory", `shell { command = ["pwd", "-P"] }`, nil, base},
		{"relative to the config file", `shell {
  command = ["pwd", "-P"]
  dir     = "sub dir"
}`, nil, sub},
		{"absolute", fmt.Sprintf(`shell {
  command = ["pwd", "-P"]
  dir     = %q
}`, sub), nil, sub},
		{"from args", `shell {
  command = ["pwd", "-P"]
  dir     = args.d
}`, map[string]any{"d": "sub dir"}, sub},
		{"from args, null: default", `shell {
  command = ["pwd", "-P"]
  dir     = args.d
}`, map[string]any{}, base},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, base, c.src, params)
			out := mustCall(t, h, params, c.args)
			want, _ := filepath.EvalSymlinks(c.want)
			if got := strings.TrimSpace(out.Text); got != want {
				t.Errorf("cwd %q, want %q", got, want)
			}
		})
	}

	h := compile(t, base, `shell {
  command = ["pwd"]
  dir     = args.d
}`, params)
	_, err := call(context.Background(), h, params, map[string]any{"d": "missing"}, nil)
	if err == nil || !strings.Contains(err.Error(), "working directory "+filepath.Join(base, "missing")+": no such file or directory") {
		t.Errorf("missing dir: %v", err)
	}
}

func TestExecutableResolution(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(base, "bin"), "hello.sh", `printf 'hello from %s' "$1"`)
	other := t.TempDir()

	// A relative path is relative to the config file's directory, even
	// when dir is elsewhere.
	h := compile(t, base, fmt.Sprintf(`shell {
  command = ["./bin/hello.sh", "script"]
  dir     = %q
}`, other), nil)
	if out := mustCall(t, h, nil, nil); out.Text != "hello from script" {
		t.Errorf("got %q", out.Text)
	}

	// A bare name is looked up in the PATH the process gets.
	h = compile(t, base, fmt.Sprintf(`shell {
  command = ["hello.sh", "path"]
  env     = { PATH = %q }
}`, filepath.Join(base, "bin")), nil)
	if out := mustCall(t, h, nil, nil); out.Text != "hello from path" {
		t.Errorf("got %q", out.Text)
	}

	// A missing executable is a load warning naming it and the PATH
	// searched; the tool is still compiled, and its calls fail.
	for _, c := range []struct{ src, want string }{
		{`shell { command = ["mcpd-no-such-tool", "x"] }`, `"mcpd-no-such-tool" is not in PATH (` + shell.DefaultPath + `)`},
		{`shell { command = ["./nope.sh"] }`, "./nope.sh (" + filepath.Join(base, "nope.sh") + "): no such file or directory"},
		{`shell { command = ["./bin"] }`, "./bin (" + filepath.Join(base, "bin") + "): is a directory"},
		{`shell {
  command = ["hello.sh"]
}`, `"hello.sh" is not in PATH`},
	} {
		h, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Src: c.src, Dir: base})
		if h == nil || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || !strings.Contains(diags[0].Detail, c.want) || diags[0].Subject == nil || diags[0].Subject.Start.Column != 20 && diags[0].Subject.Start.Column != 14 {
			t.Errorf("%s: diags %s, want one warning containing %q at command[0]", c.src, diags.Error(), c.want)
		}
	}
}

// pidGone reports whether a process no longer runs (it is gone, or a zombie
// waiting for a reaper, which in a container may never come).
func pidGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && i+2 < len(data) && (data[i+2] == 'Z' || data[i+2] == 'X')
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	t.Cleanup(func() {
		if !pidGone(pid) {
			syscallKill(pid)
		}
	})
	wait.Until(t, fmt.Sprintf("process %d gone after the call", pid), func() bool { return pidGone(pid) })
}

func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// readPID waits for a pid file to be written.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("pid file: %v", err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s never written", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The script is the config author choosing sh: mcpd → script (sh) → sh -c →
// sleep, so the sleep is a great-grandchild of mcpd that inherits stdout.
const spawnScript = `%s
sh -c 'sleep 300 & echo $! > "$0"; wait' "$1"
`

func TestTimeoutKillsProcessGroup(t *testing.T) {
	cases := []struct {
		name       string
		trap       string // prologue of the script
		grace      string
		wantMax    time.Duration
		wantMinDur time.Duration
	}{
		{"SIGTERM is enough", "", "2s", 2 * time.Second, 400 * time.Millisecond},
		{"SIGTERM ignored: SIGKILL after the grace", `trap "" TERM`, "700ms", 3 * time.Second, 1100 * time.Millisecond},
		{"no grace: SIGKILL at once", `trap "" TERM`, "0s", 2 * time.Second, 400 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeScript(t, dir, "spawn.sh", fmt.Sprintf(spawnScript, c.trap))
			pidFile := filepath.Join(dir, "pid")
			h := compile(t, dir, fmt.Sprintf(`shell {
  command    = ["./spawn.sh", %q]
  timeout    = "400ms"
  kill_grace = %q
}`, pidFile, c.grace), nil)
			start := time.Now()
			_, err := call(context.Background(), h, nil, nil, nil)
			elapsed := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "timed out after 400ms") {
				t.Fatalf("got %v, want a timeout", err)
			}
			if elapsed < c.wantMinDur || elapsed > c.wantMax {
				t.Errorf("call took %v, want between %v and %v", elapsed, c.wantMinDur, c.wantMax)
			}
			waitGone(t, readPID(t, pidFile))
		})
	}
}

func TestCancellationKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "spawn.sh", fmt.Sprintf(spawnScript, ""))
	pidFile := filepath.Join(dir, "pid")
	h := compile(t, dir, fmt.Sprintf(`shell {
  command = ["./spawn.sh", %q]
}`, pidFile), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := call(ctx, h, nil, nil, nil)
		done <- err
	}()
	pid := readPID(t, pidFile)
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancelled (context canceled)") {
			t.Errorf("got %v, want a cancellation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call did not return after cancellation")
	}
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("took %v", elapsed)
	}
	waitGone(t, pid)

	// A context that is already done never starts the program.
	_, err := call(ctx, h, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "was not started") {
		t.Errorf("cancelled context: %v", err)
	}
}

// A grandchild that keeps stdout open must not keep the call waiting, nor
// outlive it, when the program itself exits.
func TestLeftoverChildrenAreKilled(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "bg.sh", `sleep 300 & echo $! > "$1"; echo done`)
	pidFile := filepath.Join(dir, "pid")
	h := compile(t, dir, fmt.Sprintf(`shell { command = ["./bg.sh", %q] }`, pidFile), nil)
	start := time.Now()
	out := mustCall(t, h, nil, nil)
	if elapsed := time.Since(start); elapsed > 800*time.Millisecond {
		t.Errorf("call took %v: it waited for the grandchild's stdout", elapsed)
	}
	if out.Text != "done\n" {
		t.Errorf("got %q", out.Text)
	}
	waitGone(t, readPID(t, pidFile))
}

func TestOutputCaps(t *testing.T) {
	t.Run("50 MiB on stdout: bounded memory, marker", func(t *testing.T) {
		h := compile(t, "", `shell { command = ["head", "-c", "52428800", "/dev/zero"] }`, nil)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out := mustCall(t, h, nil, nil)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("allocated %d MiB for 50 MiB of output", alloc>>20)
		}
		if got := len(out.Vars["stdout"].(string)); got != 1<<20 {
			t.Errorf("kept %d bytes, want %d", got, 1<<20)
		}
		want := fmt.Sprintf("\n[truncated: stdout exceeded max_output_bytes (1048576 bytes); %d more bytes were discarded]", 50<<20-1<<20)
		if !strings.HasSuffix(out.Text, want) {
			t.Errorf("text ends with %q", out.Text[len(out.Text)-120:])
		}
		if out.Vars["stdout_truncated"] != true || out.Vars["stderr_truncated"] != false {
			t.Errorf("truncation flags: %v %v", out.Vars["stdout_truncated"], out.Vars["stderr_truncated"])
		}
	})
	cases := []struct {
		name, src         string
		stdout, stderr    string
		text              string
		stdoutTr, errTrue bool
	}{
		{"small cap", `shell {
  command          = ["printf", "hello world"]
  max_output_bytes = 5
}`, "hello", "", "hello\n[truncated: stdout exceeded max_output_bytes (5 bytes); 6 more bytes were discarded]", true, false},
		{"exactly at the cap", `shell {
  command          = ["printf", "hello"]
  max_output_bytes = 5
}`, "hello", "", "hello", false, false},
		{"cut inside a UTF-8 sequence", `shell {
  command          = ["printf", "ééé"]
  max_output_bytes = 3
}`, "é", "", "é\n[truncated: stdout exceeded max_output_bytes (3 bytes); 4 more bytes were discarded]", true, false},
		{"stderr capped separately", `shell {
  command          = ["sh", "-c", "printf 0123456789 >&2; printf ok"]
  max_output_bytes = 4
}`, "ok", "0123", "ok", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, nil)
			out := mustCall(t, h, nil, nil)
			if out.Vars["stdout"] != c.stdout || out.Vars["stderr"] != c.stderr || out.Text != c.text {
				t.Errorf("stdout %q stderr %q text %q", out.Vars["stdout"], out.Vars["stderr"], out.Text)
			}
			if out.Vars["stdout_truncated"] != c.stdoutTr || out.Vars["stderr_truncated"] != c.errTrue {
				t.Errorf("truncation flags: %v %v", out.Vars["stdout_truncated"], out.Vars["stderr_truncated"])
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		name    string
		src     string
		code    int
		errWant []string
		errNot  []string
	}{
		{"0 is ok by default", `shell { command = ["true"] }`, 0, nil, nil},
		{"non-zero is an error with the stderr tail", `shell { command = ["sh", "-c", "echo out; echo 'fatal: bad thing' >&2; exit 3"] }`, 0,
			[]string{"sh exited with code 3; stderr:\nfatal: bad thing"}, []string{"out"}},
		{"stdout is quoted when stderr is empty", `shell { command = ["sh", "-c", "echo 'error: on stdout'; exit 1"] }`, 0,
			[]string{"sh exited with code 1; stdout:\nerror: on stdout"}, nil},
		{"only the last 2 KiB of stderr", `shell { command = ["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo >&2; echo LAST LINE >&2; exit 2"] }`, 0,
			[]string{"sh exited with code 2; stderr (last 2048 bytes):\n", "xxx\nLAST LINE"}, nil},
		{"ok_exit_codes", `shell {
  command       = ["sh", "-c", "exit 1"]
  ok_exit_codes = [0, 1]
}`, 1, nil, nil},
		{"ok_exit_codes without 0", `shell {
  command       = ["true"]
  ok_exit_codes = [1]
}`, 0, []string{"true exited with code 0"}, nil},
		{"killed by a signal", `shell { command = ["sh", "-c", "kill -SEGV $$"] }`, 0, []string{"sh was killed by signal SIGSEGV"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, nil)
			out, err := call(context.Background(), h, nil, nil, nil)
			if c.errWant == nil {
				if err != nil {
					t.Fatal(err)
				}
				if out.Vars["exit_code"] != c.code {
					t.Errorf("exit_code %v, want %d", out.Vars["exit_code"], c.code)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.errWant {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, w := range c.errNot {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q has %q", err, w)
				}
			}
			if len(err.Error()) > 2048+200 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestOutputModes(t *testing.T) {
	cases := []struct {
		name, src  string
		text       string
		structured map[string]any
		json       any
		errWant    string
	}{
		{"text", `shell { command = ["printf", "a\nb\n"] }`, "a\nb\n", nil, nil, ""},
		{"json object", `shell {
  command = ["printf", "{\"a\": 1, \"b\": [true, null, \"x\"]}\n"]
  output  = "json"
}`, "", map[string]any{"a": 1.0, "b": []any{true, nil, "x"}}, map[string]any{"a": 1.0, "b": []any{true, nil, "x"}}, ""},
		{"json array is wrapped", `shell {
  command = ["printf", "[1, 2]"]
  output  = "json"
}`, "", map[string]any{"result": []any{1.0, 2.0}}, []any{1.0, 2.0}, ""},
		{"json scalar is wrapped", `shell {
  command = ["printf", "\"s\""]
  output  = "json"
}`, "", map[string]any{"result": "s"}, "s", ""},
		{"invalid json", `shell {
  command = ["printf", "{\"a\": 1,, oops}"]
  output  = "json"
}`, "", nil, nil, `printf did not print valid JSON (invalid character ',' looking for beginning of object key string): "{\"a\": 1,, oops}"`},
		{"truncated json", `shell {
  command = ["printf", "{\"a\": 1,\n"]
  output  = "json"
}`, "", nil, nil, `printf did not print valid JSON (unexpected end of input): "{\"a\": 1,\n"`},
		{"two json values", `shell {
  command = ["printf", "{} {}"]
  output  = "json"
}`, "", nil, nil, "printed more than one JSON value"},
		{"no output", `shell {
  command = ["true"]
  output  = "json"
}`, "", nil, nil, "true printed nothing; JSON output was expected"},
		{"json cut by the cap", `shell {
  command          = ["printf", "[1, 2, 3]"]
  output           = "json"
  max_output_bytes = 4
}`, "", nil, nil, "printed more than max_output_bytes (4 bytes) of JSON"},
		{"lines", `shell {
  command = ["printf", "a\nb\r\n\nc"]
  output  = "lines"
}`, "a\nb\r\n\nc", map[string]any{"lines": []any{"a", "b", "", "c"}, "truncated": false}, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, nil)
			out, err := call(context.Background(), h, nil, nil, nil)
			if c.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), c.errWant) {
					t.Fatalf("got %v, want %q", err, c.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.Text != c.text || !reflect.DeepEqual(out.Structured, c.structured) {
				t.Errorf("text %q structured %#v", out.Text, out.Structured)
			}
			if c.json != nil && !reflect.DeepEqual(out.Vars["json"], c.json) {
				t.Errorf("json var %#v", out.Vars["json"])
			}
			// Every declared var is present, and nothing else.
			var names []string
			for k := range out.Vars {
				names = append(names, k)
			}
			if len(names) != len(h.Vars()) {
				t.Errorf("vars %v, declared %v", names, h.Vars())
			}
			for _, v := range h.Vars() {
				if _, ok := out.Vars[v]; !ok {
					t.Errorf("var %s missing", v)
				}
			}
		})
	}
}

func TestVarsDeclared(t *testing.T) {
	text := compile(t, "", `shell { command = ["true"] }`, nil).Vars()
	want := []string{"exit_code", "lines", "stderr", "stderr_truncated", "stdout", "stdout_truncated"}
	if !reflect.DeepEqual(text, want) {
		t.Errorf("text vars %v", text)
	}
	js := compile(t, "", `shell {
  command = ["true"]
  output  = "json"
}`, nil).Vars()
	want = []string{"exit_code", "json", "lines", "stderr", "stderr_truncated", "stdout", "stdout_truncated"}
	if !reflect.DeepEqual(js, want) {
		t.Errorf("json vars %v", js)
	}
	out := mustCall(t, compile(t, "", `shell { command = ["sh", "-c", "printf 'x\ny\n'; printf e >&2"] }`, nil), nil, nil)
	wantVars := map[string]any{"stdout": "x\ny\n", "stderr": "e", "exit_code": 0, "lines": []string{"x", "y"}, "stdout_truncated": false, "stderr_truncated": false}
	if !reflect.DeepEqual(out.Vars, wantVars) {
		t.Errorf("vars %#v", out.Vars)
	}
}

type progressCall struct {
	progress, total float64
	message         string
}

func TestProgress(t *testing.T) {
	cases := []struct {
		name, src string
		want      []progressCall
		text      string
	}{
		{"progress and total groups, named message", `shell {
  command = ["sh", "-c", "for i in 1 2 3; do echo \"$i/3 step $i\"; done; echo '2/3 backwards'; echo 'noise'; echo '10/x'"]
  progress {
    pattern = "^(\\d+)/(\\d+) (?P<message>.*)$"
  }
}`, []progressCall{{1, 3, "step 1"}, {2, 3, "step 2"}, {3, 3, "step 3"}}, "1/3 step 1\n2/3 step 2\n3/3 step 3\n2/3 backwards\nnoise\n10/x\n"},
		{"static total, carriage returns, stderr, no final newline", `shell {
  command = ["sh", "-c", "printf '5.5%%\\r50%%\\r100%%' >&2; echo done"]
  progress {
    pattern = "(\\d+(?:\\.\\d+)?)%"
    total   = 100
    stream  = "stderr"
  }
}`, []progressCall{{5.5, 100, ""}, {50, 100, ""}, {100, 100, ""}}, "done\n"},
		{"named groups in any order", `shell {
  command = ["sh", "-c", "echo 'Receiving objects: 40 of 200'; echo 'Receiving objects: 200 of 200'"]
  progress {
    pattern = "^(?P<message>[A-Za-z ]+): (?P<progress>\\d+) of (?P<total>\\d+)$"
  }
}`, []progressCall{{40, 200, "Receiving objects"}, {200, 200, "Receiving objects"}}, ""},
		{"cmake style, as in the docs", `shell {
  command = ["printf", "[  5%%] Building a.o\n[ 45%%] Building b.o\n[100%%] Linking x\n"]
  progress {
    pattern = "^\\[ *(\\d+)%\\] (?P<message>.*)$"
    total   = 100
  }
}`, []progressCall{{5, 100, "Building a.o"}, {45, 100, "Building b.o"}, {100, 100, "Linking x"}}, ""},
		{"no total: 0", `shell {
  command = ["sh", "-c", "echo 'item 7'"]
  progress { pattern = "item (\\d+)" }
}`, []progressCall{{7, 0, ""}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", c.src, nil)
			var mu sync.Mutex
			var got []progressCall
			out, err := call(context.Background(), h, nil, nil, func(p, total float64, msg string) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, progressCall{p, total, msg})
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("progress %v, want %v", got, c.want)
			}
			if c.text != "" && out.Text != c.text {
				t.Errorf("progress lines must stay in stdout: %q", out.Text)
			}
		})
	}
}

// Progress notifications arrive while the program runs, not at the end.
func TestProgressIsLive(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	h := compile(t, dir, fmt.Sprintf(`shell {
  command = ["sh", "-c", "echo 1/2; while [ ! -e %s ]; do sleep 0.01; done; echo 2/2"]
  progress { pattern = "^(\\d+)/(\\d+)$" }
}`, gate), nil)
	seen := make(chan float64, 2)
	done := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), h, nil, nil, func(p, _ float64, _ string) { seen <- p })
		done <- err
	}()
	select {
	case p := <-seen:
		if p != 1 {
			t.Errorf("first progress %v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress while the program ran")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if p := <-seen; p != 2 {
		t.Errorf("second progress %v", p)
	}
}

func TestLoadDiagnostics(t *testing.T) {
	params := map[string]string{"n": "integer", "obj": "object", "sha": "string"}
	cases := []struct {
		name string
		src  string
		want string
		line int
	}{
		{"string command", `shell {
  command = "git log -n 5"
}`, `write command = ["git", "log", "-n", "5"]`, 2},
		{"template command", `shell {

  command = "git show ${args.sha}"
}`, "command must be a list, not a string", 3},
		{"non-literal command", `shell {
  command = concat(["git"], ["log"])
}`, "command must be a list literal", 2},
		{"empty command", `shell {
  command = []
}`, "command must list at least the executable", 2},
		{"executable from args", `shell {
  command = [args.sha, "x"]
}`, "The executable (command[0]) cannot depend on the call's arguments", 2},
		{"undeclared param", `shell {
  command = ["git", "log",
    "-n", args.nope]
}`, "args.nope is not declared; declared params: n, obj, sha", 3},
		{"undeclared param in env", `shell {
  command = ["env"]
  env     = { X = args.nope }
}`, "args.nope is not declared", 3},
		{"undeclared param in stdin", `shell {
  command = ["cat"]
  stdin   = "${args.nope}"
}`, "args.nope is not declared", 3},
		{"undeclared param in dir", `shell {
  command = ["cat"]
  dir     = args.nope
}`, "args.nope is not declared", 3},
		{"unknown function", `shell {
  command = ["echo", nosuch(args.n)]
}`, `There is no function named "nosuch"`, 2},
		{"object param as an argument", `shell {
  command = ["echo", args.obj]
}`, "args.obj is an object", 2},
		{"static object as an argument", `shell {
  command = ["echo", { a = 1 }]
}`, "command[1]: a string, number or boolean is required, got object", 2},
		{"bad timeout", `shell {
  command = ["true"]
  timeout = "30 seconds"
}`, `timeout: "30 seconds" is not a duration`, 3},
		{"zero timeout", `shell {
  command = ["true"]
  timeout = "0s"
}`, "timeout must be positive", 3},
		{"timeout from args", `shell {
  command = ["true"]
  timeout = "${args.n}s"
}`, "timeout cannot depend on the call's arguments", 3},
		{"bad kill_grace", `shell {
  command    = ["true"]
  kill_grace = "-1s"
}`, "kill_grace must be positive", 3},
		{"bad max_output_bytes", `shell {
  command          = ["true"]
  max_output_bytes = 0
}`, "max_output_bytes must be a whole number from 1 to 1073741824, got 0", 3},
		{"fractional max_output_bytes", `shell {
  command          = ["true"]
  max_output_bytes = 1.5
}`, "got 1.5", 3},
		{"bad ok_exit_codes", `shell {
  command       = ["true"]
  ok_exit_codes = [0, 256]
}`, "each of ok_exit_codes must be a whole number from 0 to 255, got 256", 3},
		{"empty ok_exit_codes", `shell {
  command       = ["true"]
  ok_exit_codes = []
}`, "at least one exit code", 3},
		{"bad output", `shell {
  command = ["true"]
  output  = "xml"
}`, `output must be "text", "json" or "lines", not "xml"`, 3},
		{"bad inherit_env", `shell {
  command     = ["true"]
  inherit_env = "maybe"
}`, "inherit_env must be a bool", 3},
		{"bad env name", `shell {
  command = ["true"]
  env     = { "A=B" = "x" }
}`, `env name "A=B" is invalid`, 3},
		{"env not a map", `shell {
  command = ["true"]
  env     = ["x"]
}`, "env must be a map of strings", 3},
		{"unknown attribute", `shell {
  command = ["true"]
  shell   = true
}`, `An argument named "shell" is not expected here`, 3},
		{"missing command", `shell {
  timeout = "1s"
}`, `The argument "command" is required`, 1},
		{"bad regexp", `shell {
  command = ["true"]
  progress {
    pattern = "^(\\d+"
  }
}`, "pattern is not a valid regular expression (RE2 syntax): error parsing regexp: missing closing )", 4},
		{"pattern without group", `shell {
  command = ["true"]
  progress {
    pattern = "^\\d+"
  }
}`, "pattern has no capture group for the progress value", 4},
		{"pattern with an unknown group name", `shell {
  command = ["true"]
  progress {
    pattern = "^(?P<pct>\\d+)"
  }
}`, `capture group "pct" has an unknown name`, 4},
		{"missing pattern", `shell {
  command = ["true"]
  progress {
    total = 10
  }
}`, `The argument "pattern" is required`, 3},
		{"bad progress stream", `shell {
  command = ["true"]
  progress {
    pattern = "(\\d+)"
    stream  = "both"
  }
}`, `stream must be "stdout" or "stderr"`, 5},
		{"bad progress total", `shell {
  command = ["true"]
  progress {
    pattern = "(\\d+)"
    total   = 0
  }
}`, "total must be positive", 5},
		{"two progress blocks", `shell {
  command = ["true"]
  progress { pattern = "(\\d+)" }
  progress { pattern = "(\\d+)" }
}`, "A shell block takes at most one progress block", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Src: c.src, Params: params})
			if !diags.HasErrors() {
				t.Fatalf("no error; diags: %s", diags.Error())
			}
			if h != nil {
				t.Error("a handler was returned with errors")
			}
			ok, all := adaptertest.DiagContains(diags, c.want)
			if !ok {
				t.Fatalf("want %q in:\n%s", c.want, all)
			}
			for _, d := range diags {
				if strings.Contains(d.Summary+": "+d.Detail, c.want) {
					if d.Subject == nil || d.Subject.Filename != "test.hcl" || d.Subject.Start.Line != c.line {
						t.Errorf("diagnostic at %v, want test.hcl line %d", d.Subject, c.line)
					}
				}
			}
		})
	}
}

func TestLoadWarnings(t *testing.T) {
	base := t.TempDir()
	_, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Dir: base, Src: `shell {
  command = ["true"]
  dir     = "not-yet"
}`})
	if diags.HasErrors() || len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || !strings.Contains(diags[0].Detail, filepath.Join(base, "not-yet")+" does not exist yet") || diags[0].Subject.Start.Line != 3 {
		t.Errorf("diags: %s", diags.Error())
	}
}

func TestConcurrentCalls(t *testing.T) {
	params := map[string]string{"i": "integer"}
	h := compile(t, "", `shell {
  command = ["sh", "-c", "printf '%s\\n' \"$1\"; printf '%s' \"$1\" >&2; sleep 0.05; echo $1/100", "sh", args.i]
  progress { pattern = "^(\\d+)/(\\d+)$" }
}`, params)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []float64
			out, err := call(context.Background(), h, params, map[string]any{"i": float64(i)}, func(p, _ float64, _ string) { got = append(got, p) })
			switch {
			case err != nil:
				errs <- err
			case out.Vars["stdout"] != fmt.Sprintf("%d\n%d/100\n", i, i) || out.Vars["stderr"] != strconv.Itoa(i):
				errs <- fmt.Errorf("call %d got stdout %q stderr %q vars %v", i, out.Vars["stdout"], out.Vars["stderr"], out.Vars)
			case !reflect.DeepEqual(got, []float64{float64(i)}):
				errs <- fmt.Errorf("call %d got progress %v", i, got)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestErrorsDoNotLeakEnvValues(t *testing.T) {
	h := compile(t, "", `shell {
  command = ["sh", "-c", "exit 4"]
  env     = { TOKEN = "hunter2" }
}`, nil)
	_, err := call(context.Background(), h, nil, nil, nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("got %v", err)
	}
}

// A parent deadline that ends the call is reported as such, not as the
// adapter's own timeout, and kills the group too.
func TestParentDeadline(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "spawn.sh", fmt.Sprintf(spawnScript, ""))
	pidFile := filepath.Join(dir, "pid")
	h := compile(t, dir, fmt.Sprintf(`shell { command = ["./spawn.sh", %q] }`, pidFile), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := call(ctx, h, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "cancelled (context deadline exceeded)") {
		t.Errorf("got %v", err)
	}
	waitGone(t, readPID(t, pidFile))
}

// BenchmarkCall measures a call of /bin/true through the adapter; compare
// with BenchmarkSpawnBaseline, the same process started by os/exec alone.
func BenchmarkCall(b *testing.B) {
	h := compile(b, "", `shell { command = ["/bin/true"] }`, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := call(context.Background(), h, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallArgs adds argv templating, a bare name resolved in PATH and
// captured output.
func BenchmarkCallArgs(b *testing.B) {
	params := map[string]string{"n": "integer", "s": "string"}
	h := compile(b, "", `shell {
  command = ["echo", "-n", args.n, args.s]
  env     = { A = "b" }
}`, params)
	args := map[string]any{"n": float64(10), "s": "hello"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := call(context.Background(), h, params, args, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSpawnBaseline(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOverhead alternates a call through the adapter with the same
// process run by os/exec alone (output captured in buffers), so that both
// see the same machine load, and reports the mean of each and their
// difference: what mcpd adds above the process spawn.
func BenchmarkOverhead(b *testing.B) {
	h := compile(b, "", `shell { command = ["/bin/true"] }`, nil)
	var adapterTime, baseTime time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		if _, err := call(context.Background(), h, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
		adapterTime += time.Since(start)

		start = time.Now()
		var stdout, stderr strings.Builder
		cmd := exec.Command("/bin/true")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		baseTime += time.Since(start)
		n++
	}
	b.ReportMetric(float64(adapterTime.Nanoseconds())/float64(n), "adapter-ns/call")
	b.ReportMetric(float64(baseTime.Nanoseconds())/float64(n), "exec-ns/call")
	b.ReportMetric(float64((adapterTime-baseTime).Nanoseconds())/float64(n), "overhead-ns/call")
}

// A process that leaves the group (setsid) escapes the group kill; if it
// keeps stdout open, the call still returns, after the pipe drain delay.
func TestEscapedProcessDoesNotHangTheCall(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	writeScript(t, dir, "escape.sh", `setsid sh -c 'echo $$ > "$0"; exec sleep 300' "$1" &
while [ ! -s "$1" ]; do sleep 0.01; done
echo started`)
	h := compile(t, dir, fmt.Sprintf(`shell { command = ["./escape.sh", %q] }`, pidFile), nil)
	start := time.Now()
	out := mustCall(t, h, nil, nil)
	pid := readPID(t, pidFile)
	t.Cleanup(func() { syscallKill(pid) })
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("call took %v", elapsed)
	}
	if pidGone(pid) {
		t.Errorf("the escaped process was killed: the test proves nothing")
	}
	if out.Text != "started\n" {
		t.Errorf("got %q", out.Text)
	}
}

// All the problems of a block are reported at once, each at its own line.
func TestLoadDiagnosticsAllAtOnce(t *testing.T) {
	_, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Src: `shell {
  command = "ls -l"
  timeout = "soon"
  bogus   = 1
  progress { pattern = "(" }
}`, Params: map[string]string{}})
	want := map[int]string{2: "command must be a list", 3: "Invalid duration", 4: "Unsupported argument", 5: "Invalid progress pattern"}
	got := map[int]string{}
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil {
			got[d.Subject.Start.Line] = d.Summary
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nfrom %s", got, diags.Error())
	}
}

func TestInheritedPWDFollowsDir(t *testing.T) {
	base := t.TempDir()
	t.Setenv("PWD", "/somewhere/else")
	h := compile(t, base, `shell {
  command     = ["sh", "-c", "printf %s \"$PWD\""]
  inherit_env = true
}`, nil)
	abs, _ := filepath.Abs(base)
	if out := mustCall(t, h, nil, nil); out.Text != abs {
		t.Errorf("PWD %q, want %q", out.Text, abs)
	}
}

func TestRelativePathEntriesAreIgnored(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(base, "bin"), "rel.sh", `echo found`)
	_, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Dir: base, Src: `shell {
  command = ["rel.sh"]
  env     = { PATH = "bin:." }
}`})
	if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || !strings.Contains(diags[0].Detail, `"rel.sh" is not in PATH (bin:.)`) || diags[0].Subject.Start.Line != 2 {
		t.Fatalf("diags: %s", diags.Error())
	}
}
