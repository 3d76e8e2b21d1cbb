package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// `mcpd list` shows a catalog whose secrets are not set, auth block's API
// keys included (examples/tenant-rls reads them with env()): it used to
// exit 1 without a word, the auth block's unset keys refusing the config
// and their errors then dropped as repeats of the unset variables.
func TestListWithoutSecrets(t *testing.T) {
	for _, v := range []string{"ACME_API_KEY", "GLOBEX_API_KEY", "AUDITOR_API_KEY", "DATABASE_URL"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"list", "-c", "../../examples/tenant-rls"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	for _, tool := range []string{"list_orders", "add_order", "whoami"} {
		if !strings.Contains(stdout.String(), "tool "+tool) {
			t.Errorf("list lacks %s:\n%s", tool, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "not set: ACME_API_KEY, GLOBEX_API_KEY, AUDITOR_API_KEY, DATABASE_URL") {
		t.Errorf("stderr does not name the unset variables:\n%s", stderr.String())
	}
}
