package httpadapter

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/adapter/adaptertest"
	"github.com/mcpd/mcpd/engine/funcs"
)

func TestDiagnostics(t *testing.T) {
	params := map[string]string{"login": "string", "host": "string", "var": "string"}
	const be = `http_backend "gh" {
  base_url = "https://api.example.com"
}
` // lines 1-3; tool blocks start on line 4
	tests := []struct {
		name string
		src  string
		want string
		line int
	}{
		{"unknown backend", be + `http {
  backend = "github"
}`, `There is no http_backend named "github"`, 5},
		{"path and url", be + `http {
  backend = "gh"
  path    = "/a"
  url     = "https://api.example.com/a"
}`, "Set either path (relative to the backend's base_url) or url", 7},
		{"url with backend", be + `http {
  backend = "gh"
  url     = "https://api.example.com/a"
}`, "url is a full URL and cannot be combined with backend", 6},
		{"path without backend", `http {
  path = "/a"
}`, "path is relative to an http_backend's base_url", 2},
		{"neither backend nor url", `http {
  method = "GET"
}`, "needs backend", 1},
		{"body and form", be + `http {
  backend = "gh"
  method  = "POST"
  body    = { a = 1 }
  form    = { a = "1" }
}`, "Set either body (sent as JSON) or form", 8},
		{"body with GET", be + `http {
  backend = "gh"
  body    = { a = 1 }
}`, "A GET request has no body", 6},
		{"bad method", be + `http {
  backend = "gh"
  method  = "FETCH"
}`, `method must be one of DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT; got "FETCH"`, 6},
		{"method from args", be + `http {
  backend = "gh"
  method  = args.var
}`, "method cannot depend on the call's arguments", 6},
		{"unparsable timeout", be + `http {
  backend = "gh"
  timeout = "fast"
}`, `timeout: "fast" is not a duration`, 6},
		{"negative timeout", be + `http {
  backend = "gh"
  timeout = "-1s"
}`, "timeout must be between 1ms and 1h0m0s, got -1s", 6},
		{"numeric timeout", be + `http {
  backend = "gh"
  timeout = 10
}`, `timeout must be a duration string such as "10s"`, 6},
		{"backend timeout", `http_backend "gh" {
  base_url = "https://api.example.com"
  timeout  = "0s"
}
http {
  backend = "gh"
}`, "timeout must be between 1ms and 1h0m0s, got 0s", 3},
		{"base_url not http", `http_backend "gh" {
  base_url = "ftp://files.example.com"
}
http {
  url = "https://api.example.com/"
}`, "base_url: the URL must start with http:// or https://", 2},
		{"base_url without scheme", `http_backend "gh" {
  base_url = "api.example.com"
}
http {
  url = "https://api.example.com/"
}`, "base_url: the URL must start with http:// or https://", 2},
		{"base_url with credentials", `http_backend "gh" {
  base_url = "https://user:pw@api.example.com"
}
http {
  url = "https://api.example.com/"
}`, "base_url: the URL must not contain credentials", 2},
		{"base_url with query", `http_backend "gh" {
  base_url = "https://api.example.com/?v=1"
}
http {
  url = "https://api.example.com/"
}`, "base_url: the URL must not contain a query string; use query", 2},
		{"base_url missing", `http_backend "gh" {
  timeout = "1s"
}
http {
  url = "https://api.example.com/"
}`, `The argument "base_url" is required`, 1},
		{"unknown attribute in http", be + `http {
  backend = "gh"
  metod   = "GET"
}`, `An argument named "metod" is not expected here`, 6},
		{"unknown attribute in backend", `http_backend "gh" {
  base_url = "https://api.example.com"
  insecure_skip_verify = true
}
http {
  url = "https://api.example.com/"
}`, `An argument named "insecure_skip_verify" is not expected here`, 3},
		{"unknown attribute in retry", `http_backend "gh" {
  base_url = "https://api.example.com"
  retry {
    tries = 3
  }
}
http {
  url = "https://api.example.com/"
}`, `An argument named "tries" is not expected here`, 4},
		{"undeclared param", be + `http {
  backend = "gh"
  path    = "/users/${args.nope}"
}`, "args.nope is not declared", 6},
		{"query in path", be + `http {
  backend = "gh"
  path    = "/search?q=${args.login}"
}`, "path must not contain a query string or fragment", 6},
		{"dot segment in path", be + `http {
  backend = "gh"
  path    = "/a/../${args.login}"
}`, `path must not contain ".." segments`, 6},
		{"path not a template", be + `http {
  backend = "gh"
  path    = args.login
}`, "path must be a quoted string", 6},
		{"host from args", `http {
  url = "https://${args.host}/x"
}`, "url must spell out its scheme, host and port literally", 2},
		{"host suffix from args", `http {
  url = "https://api.example.com${args.host}"
}`, "url must spell out its scheme, host and port literally", 2},
		{"url starting with args", `http {
  url = "${args.host}/x"
}`, "url must start with a literal scheme and host", 2},
		{"url not http", `http {
  url = "file:///etc/passwd"
}`, "url: the URL must start with http:// or https://", 2},
		{"url with query", `http {
  url = "https://api.example.com/x?a=${args.login}"
}`, "url must not contain a query string or fragment", 2},
		{"expect_status out of range", be + `http {
  backend = "gh"
  expect_status = [200, 99]
}`, "expect_status must be a non-empty list of HTTP status codes (100-599), such as [200, 201]. Got 99.", 6},
		{"max_response_bytes zero", be + `http {
  backend = "gh"
  max_response_bytes = 0
}`, "max_response_bytes must be a whole number from 1 to 1073741824, got 0", 6},
		{"retry attempts", be + `http {
  backend = "gh"
  retry {
    attempts = 0
  }
}`, "retry.attempts must be a whole number from 1 to 10, got 0", 7},
		{"retry on word", be + `http {
  backend = "gh"
  retry {
    on = [503, "sometimes"]
  }
}`, `Got "sometimes"`, 7},
		{"retry on 404", be + `http {
  backend = "gh"
  retry {
    on = [404]
  }
}`, "Got 404", 7},
		{"retry backoffs", be + `http {
  backend = "gh"
  retry {
    backoff     = "2s"
    max_backoff = "1s"
  }
}`, "retry.max_backoff (1s) must not be less than retry.backoff (2s)", 8},
		{"duplicate retry", be + `http {
  backend = "gh"
  retry {}
  retry {}
}`, "Only one retry block is allowed here", 7},
		{"host header", be + `http {
  backend = "gh"
  headers = { Host = "evil.example.com" }
}`, "the Host header cannot be set", 6},
		{"dynamic host header", be + `http {
  backend = "gh"
  headers = { Host = args.host }
}`, "the Host header cannot be set", 6},
		{"env from args", be + `http {
  backend = "gh"
  headers = { X-Secret = env(args.var) }
}`, "env() cannot take values from the call's arguments", 6},
		{"missing env", `http_backend "gh" {
  base_url = "https://api.example.com"
  headers  = { Authorization = env("MCPD_TEST_SURELY_UNSET") }
}
http {
  backend = "gh"
}`, "environment variable MCPD_TEST_SURELY_UNSET is not set", 3},
		{"tls cert without key", `http_backend "gh" {
  base_url = "https://api.example.com"
  tls {
    cert_file = "client.pem"
  }
}
http {
  backend = "gh"
}`, "tls.cert_file and tls.key_file must be set together", 4},
		{"tls missing ca file", `http_backend "gh" {
  base_url = "https://api.example.com"
  tls {
    ca_file = "does-not-exist.pem"
  }
}
http {
  backend = "gh"
}`, "Reading does-not-exist.pem: no such file or directory", 4},
		{"tls insecure", `http_backend "gh" {
  base_url = "https://api.example.com"
  tls {
    insecure_skip_verify = true
  }
}
http {
  backend = "gh"
}`, `An argument named "insecure_skip_verify" is not expected here`, 4},
		{"headers not a map", `http_backend "gh" {
  base_url = "https://api.example.com"
  headers  = ["a"]
}
http {
  backend = "gh"
}`, "headers: a map of strings is required", 3},
		{"header name from args", be + `http {
  backend = "gh"
  headers = {
    X-Fixed = "1"
    (args.var) = "v"
  }
}`, "headers: a name must be fixed in the config", 8},
		{"header name built from args", be + `http {
  backend = "gh"
  headers = { "X-${args.var}" = "v" }
}`, "headers: a name must be fixed in the config", 6},
		{"headers map from args", be + `http {
  backend = "gh"
  headers = merge({ X-Fixed = "1" }, { (args.var) = "v" })
}`, "headers must be written as { name = value, ... } with fixed names", 6},
		{"query name from args", be + `http {
  backend = "gh"
  query   = { (args.var) = args.login }
}`, "query: a name must be fixed in the config", 6},
		{"query map from args", be + `http {
  backend = "gh"
  query   = args.login != "" ? { q = args.login } : {}
}`, "query must be written as { name = value, ... } with fixed names", 6},
		{"unknown function", be + `http {
  backend = "gh"
  query = { a = nosuch(args.login) }
}`, `There is no function named "nosuch"`, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := adaptertest.Compile(t, New(), "http", adaptertest.Config{Src: tc.src, Params: params})
			if !diags.HasErrors() {
				t.Fatalf("no error; want %q", tc.want)
			}
			var match *hcl.Diagnostic
			for _, d := range diags {
				if strings.Contains(d.Summary+": "+d.Detail, tc.want) {
					match = d
					break
				}
			}
			if match == nil {
				t.Fatalf("no diagnostic contains %q; got:\n%s", tc.want, diags.Error())
			}
			if match.Subject == nil {
				t.Fatalf("diagnostic %q has no range", match.Detail)
			}
			if match.Subject.Start.Line != tc.line {
				t.Errorf("diagnostic at line %d, want %d: %s", match.Subject.Start.Line, tc.line, match.Error())
			}
		})
	}
}

func TestValidConfigs(t *testing.T) {
	params := map[string]string{"login": "string", "n": "integer", "opt": "string"}
	t.Setenv("MCPD_TEST_PREFIX", "v2")
	tests := []string{
		`http_backend "gh" {
  base_url = "https://api.example.com/base/"
  headers  = { Accept = "application/json", X-Api-Key = env("MCPD_TEST_UNSET_KEY", "") }
  query    = { per_page = 100 }
  timeout  = "10s"
  retry {
    attempts    = 4
    backoff     = "100ms"
    max_backoff = "2s"
    on          = [429, 502, 503, "timeout", "connection"]
  }
}
http {
  backend = "gh"
  method  = "patch"
  path    = "/${env("MCPD_TEST_PREFIX")}/users/${args.login}/n/${args.n}"
  headers = { X-Opt = args.opt }
  body    = { login = args.login, tags = ["a", args.opt] }
  expect_status = [200, 204]
  max_response_bytes = 4096
  timeout = "2s"
  retry_unsafe = true
}`,
		`http {
  url = "http://127.0.0.1:8080"
}`,
		`http {
  url    = "https://api.example.com/items/${args.login}.json"
  method = "DELETE"
  form   = { reason = args.opt }
}`,
		`http_backend "gh" {
  base_url = "https://api.example.com"
}
http {
  backend = "gh"
}`,
	}
	for i, src := range tests {
		_, diags := adaptertest.Compile(t, New(), "http", adaptertest.Config{Src: src, Params: params})
		if diags.HasErrors() {
			t.Errorf("config %d: %s", i, diags.Error())
		}
	}
}

// decodeBackend decodes the first http_backend block of src.
func decodeBackend(t *testing.T, src, dir string) (adapter.BackendConfig, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	content, diags := f.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "http_backend", LabelNames: []string{"name"}}}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	b := content.Blocks[0]
	return New().DecodeBackend(&adapter.BackendBlock{
		Name: b.Labels[0], Body: b.Body, Range: b.DefRange,
		Scope: &adapter.Scope{Dir: dir, Functions: funcs.Table(dir)},
	})
}

func TestFingerprint(t *testing.T) {
	src := `http_backend "gh" {
  base_url = "https://api.example.com"
  headers  = { Authorization = "Bearer ${env("MCPD_TEST_FP_TOKEN")}" }
  RETRY
}`
	fp := func(token, retry string) string {
		t.Setenv("MCPD_TEST_FP_TOKEN", token)
		cfg, diags := decodeBackend(t, strings.Replace(src, "RETRY", retry, 1), ".")
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return cfg.Fingerprint()
	}
	a := fp("one-token", "")
	if a != fp("one-token", "") {
		t.Errorf("same settings, different fingerprints")
	}
	if a == fp("two-token", "") {
		t.Errorf("a changed header value kept the fingerprint")
	}
	if a == fp("one-token", "retry {}") {
		t.Errorf("a retry block kept the fingerprint")
	}
	if strings.Contains(a, "one-token") {
		t.Errorf("the fingerprint contains the token")
	}
	cfg, _ := decodeBackend(t, strings.Replace(src, "RETRY", "", 1), ".")
	for _, s := range []string{cfg.(interface{ String() string }).String(), fmtV(cfg)} {
		if strings.Contains(s, "one-token") {
			t.Errorf("printing the config shows the token: %s", s)
		}
	}
}

func TestTLS(t *testing.T) {
	srv := newTLSServer(t)
	dir := t.TempDir()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tool := `
http {
  backend = "api"
  path    = "/secure"
}`
	t.Run("trusted with ca_file", func(t *testing.T) {
		h := adaptertest.MustCompile(t, New(), "http", adaptertest.Config{Dir: dir, Src: `
http_backend "api" {
  base_url = "` + srv.URL + `"
  tls {
    ca_file = "ca.pem"
  }
}` + tool})
		out, err := call(h, nil, nil)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		if out.Structured["tls"] != true {
			t.Errorf("Structured = %v", out.Structured)
		}
	})
	t.Run("untrusted without", func(t *testing.T) {
		h := adaptertest.MustCompile(t, New(), "http", adaptertest.Config{Src: `
http_backend "api" {
  base_url = "` + srv.URL + `"
}` + tool})
		_, err := call(h, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "GET "+srv.URL+"/secure: TLS failed: ") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		// The test server's own pair serves as a client certificate: only
		// the decoding and loading are under test here.
		cert := srv.TLS.Certificates[0]
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
		os.WriteFile(filepath.Join(dir, "client.pem"), certPEM, 0o600)
		os.WriteFile(filepath.Join(dir, "client-key.pem"), testKeyPEM(t, cert), 0o600)
		os.WriteFile(filepath.Join(dir, "bad-key.pem"), []byte("not a key"), 0o600)
		_, diags := decodeBackend(t, `http_backend "api" {
  base_url = "https://x.example"
  tls {
    cert_file = "client.pem"
    key_file  = "client-key.pem"
  }
}`, dir)
		if diags.HasErrors() {
			t.Errorf("valid pair: %s", diags.Error())
		}
		_, diags = decodeBackend(t, `http_backend "api" {
  base_url = "https://x.example"
  tls {
    cert_file = "client.pem"
    key_file  = "bad-key.pem"
  }
}`, dir)
		if ok, text := adaptertest.DiagContains(diags, "do not form a valid key pair"); !ok {
			t.Errorf("bad key: %s", text)
		}
	})
}

func newTLSServer(t *testing.T) *httptest.Server {
	srv := httptest.NewTLSServer(jsonHandler(200, `{"tls":true}`))
	t.Cleanup(srv.Close)
	return srv
}

func testKeyPEM(t *testing.T, cert tls.Certificate) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func fmtV(v any) string { return fmt.Sprintf("%v %+v %#v %s", v, v, v, v) }
