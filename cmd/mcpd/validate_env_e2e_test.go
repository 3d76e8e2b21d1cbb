package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// `mcpd validate` of examples/postgres without DATABASE_URL, the real
// binary: one diagnostic naming the variable, a warning (exit 0) unless
// --strict (exit 1). Before, the one unset variable made nine errors.
func TestValidateWithoutSecrets(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "postgres")
	tests := []struct {
		args []string
		code int
		sev  string
	}{
		{[]string{"validate", "-c", dir}, 0, "warning"},
		{[]string{"validate", "--strict", "-c", dir}, 1, "error"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := mcpdCommand(tc.args...)
			env := []string{}
			for _, kv := range cmd.Env {
				if !strings.HasPrefix(kv, "DATABASE_URL=") {
					env = append(env, kv)
				}
			}
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			want := filepath.Join(dir, "tools.hcl") + ":6:20: " + tc.sev + ": Environment variable not set: env(\"DATABASE_URL\") has no default and DATABASE_URL is not set."
			if code != tc.code || len(lines) != 3 || !strings.HasPrefix(lines[0], want) {
				t.Errorf("exit %d (want %d), stderr:\n%s\nwant one diagnostic starting %q", code, tc.code, stderr.String(), want)
			}
		})
	}
}

// `mcpd validate` starts nothing, so it dials nothing: a config whose
// state block names a Redis (here a listener that records every
// connection and never answers) validates without a connection to it and
// without the Redis client's lines on stderr. The real binary.
func TestValidateDoesNotDialState(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			defer c.Close() // held open, never answered, until the test ends
		}
	}()
	t.Cleanup(func() { l.Close() })
	dir := configDir(t, map[string]string{"tools.hcl": fmt.Sprintf(`
server {
  name = "validate-state"
  state {
    redis   = "redis://%s"
    timeout = "200ms"
  }
}

tool "limited" {
  description = "Rate limited across replicas."
  rate_limit {
    per_caller = "10/s"
  }
  result {
    content "text" {
      text = "ok"
    }
  }
}
`, l.Addr())})
	cmd := mcpdCommand("validate", "-c", dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("validate: %v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "valid (1 tool") {
		t.Errorf("stdout %q, want the config valid", stdout.String())
	}
	if n := conns.Load(); n != 0 || stderr.Len() != 0 {
		t.Errorf("validate connected %d times to the state's Redis; stderr:\n%s", n, stderr.String())
	}
}
