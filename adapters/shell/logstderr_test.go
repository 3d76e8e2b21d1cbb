package shell_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/funcs"

	"github.com/mcpd/mcpd/adapters/shell"
)

// callLogged runs h like the engine would, sending log records to send.
func callLogged(ctx context.Context, h adapter.Handler, send func(level, msg string)) (*adapter.Output, error) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table(".")}
	args := map[string]any{}
	return h.Call(ctx, &adapter.Request{Tool: "test_tool", Args: args, Eval: scope.CallContext(args),
		Progress: func(float64, float64, string) {}, Log: send})
}

func TestLogStderr(t *testing.T) {
	long := strings.Repeat("x", 9000)
	cases := []struct {
		name, script, level string
		want                []string
		stderr              string // the stderr variable: unchanged by logging
	}{
		{"lines at the level, blank lines skipped, CR dropped, last line without newline", `echo one >&2; echo >&2; printf 'two\r\n' >&2; echo out; printf three >&2`, "notice",
			[]string{"notice:one", "notice:two", "notice:three"}, "one\n\ntwo\r\nthree"},
		{"a long line is cut", `printf '%s\n' "` + long + `" >&2`, "debug",
			[]string{"debug:" + long[:8192] + " [line cut]"}, long + "\n"},
		{"invalid UTF-8 is replaced", `printf 'a\377b\n' >&2`, "error", []string{"error:a\uFFFDb"}, ""},
		{"past 1000 records, a count", `i=0; while [ $i -lt 1003 ]; do echo "l$i" >&2; i=$((i+1)); done`, "info", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := compile(t, "", fmt.Sprintf("shell {\n  command = [\"sh\", \"-c\", %q]\n  log_stderr = %q\n}", c.script, c.level), nil)
			var mu sync.Mutex
			var got []string
			out, err := callLogged(context.Background(), h, func(level, msg string) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, level+":"+msg)
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil { // the cap
				if len(got) != 1001 || got[999] != "info:l999" || got[1000] != "info:[3 more stderr lines not sent: at most 1000 per call]" {
					t.Errorf("%d records, last %q", len(got), got[len(got)-1])
				}
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("records\n got %q\nwant %q", got, c.want)
			}
			if c.stderr != "" && out.Vars["stderr"] != c.stderr {
				t.Errorf("stderr = %q, want %q", out.Vars["stderr"], c.stderr)
			}
		})
	}
}

// Records are sent while the program runs, not when it ends.
func TestLogStderrIsLive(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	h := compile(t, dir, fmt.Sprintf(`shell {
  command    = ["sh", "-c", "echo started >&2; while [ ! -e %s ]; do sleep 0.01; done; echo done >&2"]
  log_stderr = "info"
}`, gate), nil)
	seen := make(chan string, 2)
	done := make(chan error, 1)
	go func() {
		_, err := callLogged(context.Background(), h, func(_, msg string) { seen <- msg })
		done <- err
	}()
	select {
	case msg := <-seen:
		if msg != "started" {
			t.Errorf("first record %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no log record while the program ran")
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if msg := <-seen; msg != "done" {
		t.Errorf("second record %q", msg)
	}
}

func TestLogStderrInvalid(t *testing.T) {
	for _, c := range []struct{ value, want string }{
		{`"verbose"`, `log_stderr is the log level of the stderr lines sent to the client: one of debug, info, notice, warning, error, critical, alert, emergency, not "verbose"`},
		{`3`, "Invalid"},
	} {
		src := "shell {\n  command = [\"true\"]\n  log_stderr = " + c.value + "\n}"
		_, diags := adaptertest.Compile(t, shell.New(), "shell", adaptertest.Config{Src: src})
		ok, all := adaptertest.DiagContains(diags, c.want)
		if !ok {
			t.Fatalf("log_stderr = %s: want %q in:\n%s", c.value, c.want, all)
		}
		for _, d := range diags {
			if d.Subject == nil || d.Subject.Filename != "test.hcl" || d.Subject.Start.Line != 3 {
				t.Errorf("diagnostic at %v, want test.hcl line 3", d.Subject)
			}
		}
	}
}
