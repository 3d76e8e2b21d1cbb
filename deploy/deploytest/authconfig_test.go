package deploytest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

// The auth blocks the deployment files ship load beside a config and read
// their key from the file they name: deploy/haproxy/auth.hcl (the path
// from MCPD_API_KEY_FILE) and the api-key component's (the Secret's mount
// path, rewritten here to a temporary file). Runs always, in process.
func TestShippedAuthConfigsLoad(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(keyFile, []byte("a-key-of-the-deploy-tests\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "tools.hcl")
	if err := os.WriteFile(conf, []byte(scaleConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	component, err := os.ReadFile(filepath.Join(overlaysDir, "components", "api-key", "auth.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	const mounted = "/run/secrets/mcpd/api-key"
	if !strings.Contains(string(component), mounted) {
		t.Fatalf("the component's auth.hcl does not read %s, where the Secret is mounted", mounted)
	}
	rewritten := filepath.Join(t.TempDir(), "auth.hcl")
	if err := os.WriteFile(rewritten, []byte(strings.ReplaceAll(string(component), mounted, keyFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	// haproxy/auth.hcl reads the file MCPD_API_KEY_FILE names: a missing
	// one is a load error, so that a replica never starts without its key.
	t.Setenv("MCPD_API_KEY_FILE", keyFile+".missing")
	if l := loader.Load([]string{conf, haproxyFile(t, "auth.hcl")}, reg, nil, "test"); !l.Diagnostics.HasErrors() {
		t.Error("haproxy/auth.hcl loaded without its key file")
	}
	t.Setenv("MCPD_API_KEY_FILE", keyFile)
	if l := loader.Load([]string{conf, haproxyFile(t, "auth.hcl")}, reg, nil, "test"); l.Diagnostics.HasErrors() {
		t.Errorf("haproxy/auth.hcl: %s", l.Diagnostics.Error())
	}
	// The component's literal path is watched: a Secret update reloads.
	l := loader.Load([]string{conf, rewritten}, reg, nil, "test")
	if l.Diagnostics.HasErrors() {
		t.Errorf("the api-key component's auth.hcl: %s", l.Diagnostics.Error())
	} else if !slices.Contains(l.Referenced, keyFile) {
		t.Errorf("the component's key file is not among the files a reload watches: %v", l.Referenced)
	}
}
