package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/engine/config"
)

// sensitive is a tool param's attribute; on a resource_template's variable
// it is refused where it is written, since the URI is logged whole.
func TestSensitiveParam(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tools.hcl"), `
tool "login" {
  description = "Logs in."
  param "password" {
    sensitive = true
  }
}

resource_template "user" {
  uri_template = "users://{id}"
  text         = "x"
  param "id" {
    sensitive = true
  }
}
`)
	cfg, diags := config.Load([]string{dir}, config.Blocks{})
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, `param "id": sensitive applies to a tool's params`) {
		t.Fatalf("diagnostics: %s", diags.Error())
	}
	if got := config.Pos(*diags[0].Subject); !strings.HasSuffix(got, "tools.hcl:13:5") {
		t.Errorf("diagnostic at %s, want tools.hcl:13:5", got)
	}
	if p := cfg.Tools[0].Params[0]; p.Sensitive == nil {
		t.Error("the tool param's sensitive attribute was not decoded")
	}
}
