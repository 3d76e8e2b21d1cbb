package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
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
