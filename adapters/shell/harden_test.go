package shell_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/shell"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
)

// A value the call chose that starts with '-' never reaches the program
// where it would be read as an option, unless the config says so.
func TestOptionInjection(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "written")
	params := map[string]string{"file": "string", "v": "string", "w": "string", "b": "boolean", "n": "integer", "list": "array"}
	cases := []struct {
		name string
		src  string
		args map[string]any
		want string // stdout on success
		err  string // substring of the tool error, "" for success
	}{
		{"sort --output is refused", `shell { command = ["sort", args.file] }`,
			map[string]any{"file": "--output=" + target}, "", `argument "file" must not start with '-': sort would read it as an option`},
		{"after a literal -- it is an operand", `shell {
  command       = ["sort", "--", args.file]
  ok_exit_codes = [2]
}`, map[string]any{"file": "--output=" + target}, "", ""},
		{"short option", `shell { command = ["printf", "[%s]", args.v] }`,
			map[string]any{"v": "-n"}, "", `argument "v" must not start with '-'`},
		{"a plain value passes", `shell { command = ["printf", "[%s]", args.v] }`,
			map[string]any{"v": "a-b"}, "[a-b]", ""},
		{"./-name passes", `shell { command = ["printf", "[%s]", args.v] }`,
			map[string]any{"v": "./-n"}, "[./-n]", ""},
		{"negative number", `shell { command = ["printf", "[%s]", args.n] }`,
			map[string]any{"n": float64(-5)}, "", `argument "n" must not start with '-'`},
		{"list item", `shell { command = ["printf", "[%s]", args.list] }`,
			map[string]any{"list": []any{"a", "-o"}}, "", `argument "list" must not start with '-'`},
		{"list after --", `shell { command = ["printf", "[%s]", "--", args.list] }`,
			map[string]any{"list": []any{"a", "-o"}}, "[--][a][-o]", ""},
		{"template led by the call", `shell { command = ["printf", "[%s]", "${args.v}.txt"] }`,
			map[string]any{"v": "-o"}, "", `argument "v" must not start with '-'`},
		{"template led by a literal: the dash is the config's", `shell { command = ["printf", "[%s]", "--max-count=${args.v}"] }`,
			map[string]any{"v": "-1"}, "[--max-count=-1]", ""},
		{"literals in a conditional list are the config's", `shell { command = ["printf", "[%s]", args.b ? ["-r"] : [], args.v == null ? [] : ["--opt", args.v]] }`,
			map[string]any{"b": true, "v": "x"}, "[-r][--opt][x]", ""},
		{"a call's value in a conditional list is checked", `shell { command = ["printf", "[%s]", args.v == null ? [] : ["--opt", args.v]] }`,
			map[string]any{"v": "--output=x"}, "", `argument "v" must not start with '-'`},
		{"a call's value as a conditional branch is checked", `shell { command = ["printf", "[%s]", args.b ? args.v : "x"] }`,
			map[string]any{"b": true, "v": "-x"}, "", `arguments "b", "v" must not start with '-'`},
		{"a function of the call's value is checked", `shell { command = ["printf", "[%s]", lower(args.v)] }`,
			map[string]any{"v": "-X"}, "", `argument "v" must not start with '-'`},
		{"two params", `shell { command = ["printf", "[%s]", "${args.v}${args.w}"] }`,
			map[string]any{"v": "-", "w": "x"}, "", `arguments "v", "w" must not start with '-'`},
		{"after a -- inside a conditional list", `shell { command = ["printf", "[%s]", args.v == null ? [] : ["--", args.v]] }`,
			map[string]any{"v": "-x"}, "[--][-x]", ""},
		{"a -- chosen by the call is no separator", `shell {
  command         = ["printf", "[%s]", args.list, args.v]
  allow_dash_args = ["list"]
}`, map[string]any{"list": []any{"--"}, "v": "-x"}, "", `argument "v" must not start with '-'`},
		{"a for expression led by a literal", `shell { command = ["printf", "[%s]", [for f in args.list : "--file=${f}"]] }`,
			map[string]any{"list": []any{"a", "-b"}}, "[--file=a][--file=-b]", ""},
		{"a for expression led by the call", `shell { command = ["printf", "[%s]", [for f in args.list : "${f}.txt"]] }`,
			map[string]any{"list": []any{"a", "-b"}}, "", `argument "list" must not start with '-'`},
		{"allow_dash_args", `shell {
  command         = ["printf", "[%s]", args.v == null ? [] : ["-e", args.v]]
  allow_dash_args = ["v"]
}`, map[string]any{"v": "-x"}, "[-e][-x]", ""},
		{"allow_dash_args covers only the params it lists", `shell {
  command         = ["printf", "[%s]", args.v, args.w]
  allow_dash_args = ["v"]
}`, map[string]any{"v": "-x", "w": "-y"}, "", `argument "w" must not start with '-'`},
		{"allow_dash_args does not cover an element that also uses another param", `shell {
  command         = ["printf", "[%s]", "${args.v}${args.w}"]
  allow_dash_args = ["v"]
}`, map[string]any{"v": "-x", "w": "y"}, "", `arguments "v", "w" must not start with '-'`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, dir, c.src, params)
			out, err := call(context.Background(), h, params, c.args, nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %v; want an error containing %q", out, err, c.err)
				}
				for _, v := range c.args {
					if s, ok := v.(string); ok && len(s) > 2 && strings.Contains(err.Error(), s) {
						t.Errorf("the error quotes the argument %q: %v", s, err)
					}
				}
			} else if err != nil {
				t.Fatalf("call: %v", err)
			} else if c.want != "" && out.Text != c.want {
				t.Errorf("got %q, want %q", out.Text, c.want)
			}
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s was written (%v)", target, err)
			}
		})
	}
}

// Load-time refusals, each at its exact position.
func TestHardeningLoadDiagnostics(t *testing.T) {
	params := map[string]string{"x": "string", "n": "integer"}
	cases := []struct {
		name     string
		src      string
		severity hcl.DiagnosticSeverity
		want     string
		line     int
		col      int
	}{
		{"PATH from args", `shell {
  command = ["ls"]
  env     = { A = "b", PATH = args.x }
}`, hcl.DiagError, "env PATH cannot depend on the call's arguments", 3, 31},
		{"LD_PRELOAD from args", `shell {
  command = ["ls"]
  env = {
    LD_PRELOAD = "${args.x}.so"
  }
}`, hcl.DiagError, "env LD_PRELOAD cannot depend on the call's arguments", 4, 18},
		{"GIT_CONFIG_* from args", `shell {
  command = ["ls"]
  env     = { GIT_CONFIG_VALUE_0 = args.x }
}`, hcl.DiagError, "env GIT_CONFIG_VALUE_0 cannot depend", 3, 36},
		{"HOME from args", `shell {
  command = ["ls"]
  env     = { HOME = args.x }
}`, hcl.DiagError, "env HOME cannot depend", 3, 22},
		{"env name from args", `shell {
  command = ["ls"]
  env     = { (args.x) = "1" }
}`, hcl.DiagError, "env names must be fixed by the config", 3, 15},
		{"env name from a template", `shell {
  command = ["ls"]
  env     = { "LD_${args.x}" = "1" }
}`, hcl.DiagError, "env names must be fixed by the config", 3, 15},
		{"env from args not a literal", `shell {
  command = ["ls"]
  env     = merge({ A = "1" }, { B = args.x })
}`, hcl.DiagError, "env must be an object literal", 3, 13},
		{"allow_dash_args names an undeclared param", `shell {
  command         = ["ls"]
  allow_dash_args = ["x", "nope"]
}`, hcl.DiagError, `allow_dash_args names "nope", which is not a declared param; declared params: n, x`, 3, 21},
		{"allow_dash_args not a list", `shell {
  command         = ["ls"]
  allow_dash_args = true
}`, hcl.DiagError, "allow_dash_args must be a list of string", 3, 21},
		{"zero max_concurrency", `shell {
  command         = ["ls"]
  max_concurrency = 0
}`, hcl.DiagError, "max_concurrency must be a whole number from 1 to 4096, got 0", 3, 21},
		{"max_concurrency from args", `shell {
  command         = ["ls"]
  max_concurrency = args.n
}`, hcl.DiagError, "max_concurrency cannot depend on the call's arguments", 3, 21},
		{"negative queue_timeout", `shell {
  command       = ["ls"]
  queue_timeout = "-1s"
}`, hcl.DiagError, "queue_timeout must be positive", 3, 19},
		{"missing program", `shell {
  command = ["ls", "-l"]
  env     = { PATH = "/nonexistent/bin" }
}`, hcl.DiagWarning, `"ls" is not in PATH (/nonexistent/bin)`, 2, 14},
		{"allowed param before any --", `shell {
  command         = ["grep", "-e", args.x, "--", args.n]
  allow_dash_args = ["x", "n"]
}`, hcl.DiagWarning, "command[2] uses args.x, listed in allow_dash_args, and no \"--\" comes before it", 2, 36},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Src: c.src, Params: params})
			if len(diags) != 1 {
				t.Fatalf("want exactly one diagnostic, got:\n%s", diags.Error())
			}
			d := diags[0]
			if d.Severity != c.severity || !strings.Contains(d.Summary+": "+d.Detail, c.want) {
				t.Fatalf("want %q, got %s", c.want, diags.Error())
			}
			if (h == nil) != (c.severity == hcl.DiagError) {
				t.Errorf("handler %v with severity %v", h, c.severity)
			}
			if d.Subject == nil || d.Subject.Filename != "test.hcl" || d.Subject.Start.Line != c.line || d.Subject.Start.Column != c.col {
				t.Errorf("diagnostic at %v, want test.hcl:%d:%d", d.Subject, c.line, c.col)
			}
		})
	}
}

// What the hardening still allows: static loader variables, args in the
// values of other variables, allowed params after "--" (no warning).
func TestHardeningAllows(t *testing.T) {
	params := map[string]string{"x": "string"}
	h, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Params: params, Src: `shell {
  command         = ["printf", "%s|", "--", args.x]
  env             = { PATH = "/usr/bin:/bin", LD_BIND_NOW = "1", LEVEL = args.x == "" ? "quiet" : "loud", OPT = args.x }
  allow_dash_args = ["x"]
}`})
	if len(diags) != 0 {
		t.Fatalf("diags: %s", diags.Error())
	}
	out, err := call(context.Background(), h, params, map[string]any{"x": "-v"}, nil)
	if err != nil || out.Text != "--|-v|" {
		t.Errorf("got %v, %v", out, err)
	}
}

// With max_concurrency = 4, 60 parallel calls never have more than 4
// processes alive: each process counts the live ones in a shared directory
// (its own marker included) before it removes its marker and exits.
func TestMaxConcurrency(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, dir, "count.sh", `live=$1
: > "$live/$$"
ls "$live" | wc -l > "$live/../seen.$$"
sleep 0.05
rm "$live/$$"
`)
	h := compile(t, dir, fmt.Sprintf(`shell {
  command         = ["./count.sh", %q]
  max_concurrency = 4
  queue_timeout   = "60s"
}`, live), nil)
	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := call(context.Background(), h, nil, nil, nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen, err := filepath.Glob(filepath.Join(dir, "seen.*"))
	if err != nil || len(seen) != n {
		t.Fatalf("%d processes reported, want %d (%v)", len(seen), n, err)
	}
	most := 0
	for _, p := range seen {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		k, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatalf("%s: %q", p, data)
		}
		most = max(most, k)
	}
	if most > 4 || most < 2 {
		t.Errorf("at most %d processes were alive at once, want 4 at most (and some overlap)", most)
	}
	t.Logf("at most %d of %d processes alive at once", most, n)
}

// A call that finds every slot taken waits up to queue_timeout, then fails
// with an error that says to retry; a cancelled call stops waiting.
func TestQueueTimeout(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	started := filepath.Join(dir, "started")
	h := compile(t, dir, fmt.Sprintf(`shell {
  command         = ["sh", "-c", "echo $$ > %s; while [ ! -e %s ]; do sleep 0.01; done"]
  max_concurrency = 1
  queue_timeout   = "200ms"
}`, started, gate), nil)
	first := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), h, nil, nil, nil)
		first <- err
	}()
	readPID(t, started)

	start := time.Now()
	_, err := call(context.Background(), h, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "test_tool is busy: it already runs its maximum of 1 calls at once (max_concurrency) and none finished within 200ms; retry later") {
		t.Errorf("got %v", err)
	}
	if el := time.Since(start); el < 200*time.Millisecond || el > 3*time.Second {
		t.Errorf("waited %v", el)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = call(ctx, h, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "test_tool was cancelled (context deadline exceeded) while waiting") {
		t.Errorf("got %v", err)
	}

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	// A slot freed while a call waits is taken by it. The wait is long
	// here, so that a loaded machine's slow exit of the holder cannot be
	// mistaken for a queue that never moves.
	gate2, started2 := filepath.Join(dir, "gate2"), filepath.Join(dir, "started2")
	h = compile(t, dir, fmt.Sprintf(`shell {
  command         = ["sh", "-c", "echo $$ > %s; while [ ! -e %s ]; do sleep 0.01; done"]
  max_concurrency = 1
  queue_timeout   = "60s"
}`, started2, gate2), nil)
	holder := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), h, nil, nil, nil)
		holder <- err
	}()
	readPID(t, started2)
	second := make(chan error, 1)
	go func() {
		_, err := call(context.Background(), h, nil, nil, nil)
		second <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(gate2, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Errorf("queued call: %v", err)
	}

	// queue_timeout = "0s" fails at once.
	held := filepath.Join(dir, "held")
	h = compile(t, dir, fmt.Sprintf(`shell {
  command         = ["sh", "-c", "echo $$ > %s; exec sleep 30"]
  max_concurrency = 1
  queue_timeout   = "0s"
}`, held), nil)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = call(ctx, h, nil, nil, nil) }()
	readPID(t, held)
	start = time.Now()
	_, err = call(context.Background(), h, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "none finished within 0s; retry later") || time.Since(start) > time.Second {
		t.Errorf("got %v after %v", err, time.Since(start))
	}
}

// A program missing at load is a warning, and the tool looks for it again
// on each call, in the load-time PATH: installing it needs no reload.
func TestExecutableResolvedOnEachCompile(t *testing.T) {
	bin := t.TempDir()
	src := fmt.Sprintf(`shell {
  command = ["mcpd-late-tool"]
  env     = { PATH = %q }
}`, bin)
	missing, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Src: src})
	if diags.HasErrors() || len(diags) != 1 || !strings.Contains(diags.Error(), `"mcpd-late-tool" is not in PATH (`+bin+`)`) {
		t.Fatalf("diags: %s", diags.Error())
	}
	_, err := call(context.Background(), missing, nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `is not installed here: "mcpd-late-tool" is not in PATH (`+bin+`)`) {
		t.Fatalf("call before install: %v", err)
	}
	writeScript(t, bin, "mcpd-late-tool", `echo late`)
	if out := mustCall(t, missing, nil, nil); out.Text != "late\n" {
		t.Errorf("the handler compiled before the install: got %q", out.Text)
	}
	h := compile(t, "", src, nil)
	if out := mustCall(t, h, nil, nil); out.Text != "late\n" {
		t.Errorf("got %q", out.Text)
	}
}
