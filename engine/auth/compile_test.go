package auth

import (
	"strings"
	"testing"
)

// Config errors are diagnostics that point at the attribute to fix.
func TestCompileDiagnostics(t *testing.T) {
	jwks := `jwks_url = "http://127.0.0.1:1/jwks"`
	tests := []struct {
		name, body, want string
	}{
		{"empty", ``, "auth.hcl:1,1-5: Empty auth block"},
		{"value and sha256", `api_key "a" {
    value  = "x"
    sha256 = "00"
  }`, "auth.hcl:2,3-14: Invalid api_key"},
		{"neither", `api_key "a" {
  }`, "auth.hcl:2,3-14: Invalid api_key"},
		{"empty value", `api_key "a" {
    value = env("MCPD_TEST_UNSET_VARIABLE", "")
  }`, "auth.hcl:3,13-48: Empty API key"},
		{"bad hash", `api_key "a" {
    sha256 = "abc"
  }`, "auth.hcl:3,14-19: Invalid sha256"},
		{"duplicate name", `api_key "a" {
    value = "x"
  }
  api_key "a" {
    value = "y"
  }`, "auth.hcl:5,11-14: Duplicate api_key"},
		{"duplicate value", `api_key "a" {
    value = "x"
  }
  api_key "b" {
    value = "x"
  }`, "auth.hcl:5,3-14: Duplicate API key value"},
		{"attributes not an object", `api_key "a" {
    value      = "x"
    attributes = ["org"]
  }`, "auth.hcl:4,18-25: Invalid attributes"},
		{"authorization header", `header = "authorization"
  api_key "a" {
    value = "x"
  }`, "auth.hcl:2,12-27: Invalid auth header"},
		{"http resource", `resource = "http://mcp.example.com/mcp"
  api_key "a" {
    value = "x"
  }`, "auth.hcl:2,14-42: Invalid auth resource"},
		{"oauth without resource", `oauth {
    issuer = "https://issuer.example.com"
    ` + jwks + `
  }`, "Missing resource"},
		{"http issuer", `resource = "https://mcp.example.com/mcp"
  oauth {
    issuer = "http://issuer.example.com"
    ` + jwks + `
  }`, "auth.hcl:4,14-41: Invalid issuer"},
		{"alg none", `resource = "https://mcp.example.com/mcp"
  oauth {
    issuer     = "https://issuer.example.com"
    algorithms = ["none"]
    ` + jwks + `
  }`, "auth.hcl:5,18-26: Unsupported algorithm"},
		{"alg HS256", `resource = "https://mcp.example.com/mcp"
  oauth {
    issuer     = "https://issuer.example.com"
    algorithms = ["RS256", "HS256"]
    ` + jwks + `
  }`, `"HS256" cannot verify tokens`},
		{"leeway", `resource = "https://mcp.example.com/mcp"
  oauth {
    issuer = "https://issuer.example.com"
    leeway = "1h"
    ` + jwks + `
  }`, "auth.hcl:5,14-18: Invalid leeway"},
		{"no jwks", `resource = "https://mcp.example.com/mcp"
  oauth {
    issuer = "https://issuer.example.com"
  }`, "Missing jwks_url"},
		{"introspection", `resource = "https://mcp.example.com/mcp"
  oauth {
    issuer            = "https://issuer.example.com"
    introspection_url = "https://issuer.example.com/introspect"
    ` + jwks + `
  }`, "auth.hcl:5,5-22: Missing client credentials"},
		{"two blocks", "api_key \"a\" {\n    value = \"x\"\n  }\n}\nauth {\n  api_key \"b\" {\n    value = \"y\"\n  }", "auth.hcl:6,1-5: Duplicate auth block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(t, "auth {\n  "+tc.body+"\n}\n", nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
