package loader_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
)

// Mistakes in the authorization and limit attributes are load errors at
// the attribute that is wrong.
func TestLoadBrokenAuthzAndLimits(t *testing.T) {
	tool := func(body string) string {
		return "tool \"t\" {\n  description = \"x\"\n" + body + "}\n"
	}
	tests := []struct {
		name, src string
		pos       string // line:col in the file
		want      string
	}{
		{"from_caller path", tool("  param \"tenant\" {\n    from_caller = \"org_id\"\n  }\n"), "4:19", `Invalid from_caller: param "tenant": "org_id" is not a caller attribute`},
		{"from_caller empty claim", tool("  param \"tenant\" {\n    from_caller = \"claims.\"\n  }\n"), "4:19", "is not a caller attribute"},
		{"from_caller not a string", tool("  param \"tenant\" {\n    from_caller = 3\n  }\n"), "4:19", "from_caller is a literal string"},
		{"from_caller with default", tool("  param \"tenant\" {\n    from_caller = \"claims.org_id\"\n    default = \"acme\"\n  }\n"), "5:5", "from_caller with a default"},
		{"from_caller with required", tool("  param \"tenant\" {\n    from_caller = \"name\"\n    required = true\n  }\n"), "3:3", "from_caller with required"},
		{"from_caller in a template", "resource_template \"r\" {\n  uri_template = \"x://{id}\"\n  text = \"x\"\n  param \"id\" {\n    from_caller = \"name\"\n  }\n}\n", "5:5", "from_caller applies to a tool's params"},
		{"bad timeout", tool("  timeout = \"soon\"\n"), "3:13", `"soon" is not a duration`},
		{"zero timeout", tool("  timeout = \"0s\"\n"), "3:13", "timeout must be more than 0s"},
		{"timeout over the cap", "server {\n  max_timeout = \"1m\"\n}\n" + tool("  timeout = \"2m\"\n"), "6:13", "timeout 2m0s exceeds the server's max_timeout 1m0s"},
		{"default over the cap", "server {\n  default_timeout = \"2m\"\n  max_timeout = \"1m\"\n}\n", "2:21", "default_timeout 2m0s exceeds max_timeout 1m0s"},
		{"max_concurrency zero", tool("  max_concurrency = 0\n"), "3:21", "max_concurrency must be a whole number from 1"},
		{"queue_timeout alone", tool("  queue_timeout = \"1s\"\n"), "3:19", "set max_concurrency too"},
		{"bad rate", tool("  rate_limit {\n    per_caller = \"60 per minute\"\n  }\n"), "4:18", `"60 per minute" is not a rate`},
		{"empty rate_limit", tool("  rate_limit {\n  }\n"), "3:3", "Empty rate_limit"},
		{"bad burst", tool("  rate_limit {\n    per_tool = \"1/s\"\n    burst = 1.5\n  }\n"), "5:13", "burst must be a whole number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tools.hcl")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			l := loader.Load([]string{path}, adapter.NewRegistry(), nil, "test")
			if l.Snapshot != nil {
				l.Snapshot.Close()
				t.Errorf("a broken config produced a snapshot")
			}
			if !hasDiag(l.Diagnostics, path+":"+tc.pos, tc.want) {
				t.Errorf("want an error at %s containing %q; got:\n%s", tc.pos, tc.want, render(l.Diagnostics))
			}
		})
	}
}
