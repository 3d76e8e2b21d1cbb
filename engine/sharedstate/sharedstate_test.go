package sharedstate_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/sharedstate/sharedstatetest"
	"github.com/mcpd/mcpd/internal/wait"
)

// compile loads src as a config file and compiles its state block.
func compile(t testing.TB, src string) (*sharedstate.Settings, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpd.hcl")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, diags := config.Load([]string{path}, config.Blocks{})
	if diags.HasErrors() {
		return nil, diags
	}
	name := ""
	if cfg.Server != nil {
		name = cfg.Server.Name
	}
	var sc *config.State
	if cfg.Server != nil {
		sc = cfg.Server.State
	}
	return sharedstate.Compile(sc, name, &hcl.EvalContext{Functions: funcs.Table(dir)})
}

func TestCompile(t *testing.T) {
	t.Setenv("MCPD_TEST_STATE_URL", "redis://:s3cret-pass@10.0.0.7:6380/2")
	t.Setenv("MCPD_TEST_STATE_PASS", "other-pass\n")
	for _, tc := range []struct {
		name, src string
		// want is a diagnostic's "line:col: summary" or, for a valid block,
		// "addr prefix password on_failure db=N reserve=N".
		want string
	}{
		{"env url, default prefix", `server {
  name = "crm"
  state { redis = env("MCPD_TEST_STATE_URL") }
}`, "10.0.0.7:6380 mcpd:crm s3cret-pass open db=2 reserve=16"},
		{"password from env overrides the URL's, prefix, fail closed", `server {
  state {
    redis      = env("MCPD_TEST_STATE_URL")
    password   = env("MCPD_TEST_STATE_PASS")
    key_prefix = "team-a:mcpd:"
    on_failure = "closed"
    timeout    = "250ms"
    local_reserve = 0
  }
}`, "10.0.0.7:6380 team-a:mcpd other-pass closed db=2 reserve=0"},
		{"no name", `server {
  state { redis = "redis://127.0.0.1:6379" }
}`, "127.0.0.1:6379 mcpd:mcpd  open db=0 reserve=16"},
		{"missing redis", `server {
  state {}
}`, "2:3: Missing redis"},
		{"bad url", `server {
  state { redis = "http://user:hunter2@x" }
}`, "2:19: Invalid redis URL"},
		{"tls without rediss", `server {
  state {
    redis = "redis://127.0.0.1:6379"
    tls { server_name = "redis.internal" }
  }
}`, "3:13: TLS settings without TLS"},
		{"half a client certificate", `server {
  state {
    redis = "rediss://127.0.0.1:6379"
    tls { cert_file = "c.pem" }
  }
}`, "4:5: Incomplete client certificate"},
		{"missing ca file", `server {
  state {
    redis = "rediss://127.0.0.1:6379"
    tls { ca_file = "nope.pem" }
  }
}`, "4:21: Cannot read ca_file"},
		{"bad on_failure", `server {
  state {
    redis      = "redis://127.0.0.1:6379"
    on_failure = "maybe"
  }
}`, "4:18: Invalid on_failure"},
		{"bad timeout", `server {
  state {
    redis   = "redis://127.0.0.1:6379"
    timeout = "soon"
  }
}`, "4:15: Invalid timeout"},
		{"negative local_reserve", `server {
  state {
    redis         = "redis://127.0.0.1:6379"
    local_reserve = -1
  }
}`, "4:21: Invalid local_reserve"},
		{"local_reserve not a number", `server {
  state {
    redis         = "redis://127.0.0.1:6379"
    local_reserve = "lots"
  }
}`, "4:21: Invalid local_reserve"},
		{"local_reserve too large", `server {
  state {
    redis         = "redis://127.0.0.1:6379"
    local_reserve = 5000
  }
}`, "4:21: Invalid local_reserve"},
		{"local_reserve", `server {
  state {
    redis         = "redis://127.0.0.1:6379"
    local_reserve = 64
  }
}`, "127.0.0.1:6379 mcpd:mcpd  open db=0 reserve=64"},
		{"misspelt attribute", `server {
  state {
    redis     = "redis://127.0.0.1:6379"
    pasword   = "x"
  }
}`, "4:5: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, diags := compile(t, tc.src)
			if diags.HasErrors() {
				d := diags[0]
				got := fmt.Sprintf("%d:%d: %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
				if !strings.HasPrefix(got, tc.want) || tc.want == "" {
					t.Fatalf("diagnostic %q (%s), want %q", got, d.Detail, tc.want)
				}
				for _, d := range diags {
					if strings.Contains(d.Detail, "hunter2") || strings.Contains(d.Detail, "s3cret") {
						t.Errorf("diagnostic shows the password: %s", d.Detail)
					}
				}
				return
			}
			if s == nil {
				t.Fatal("no settings and no error")
			}
			got := fmt.Sprintf("%s %s %s %s db=%d reserve=%d", s.Addr, s.Prefix, s.Options.Password, s.OnFailure, s.Options.DB, s.Reserve)
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompileTLS(t *testing.T) {
	// A CA file read at load time, the server name kept from the URL's host
	// unless the block names one.
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, testCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	s, diags := compile(t, fmt.Sprintf(`server {
  state {
    redis = "rediss://redis.example:6380"
    tls { ca_file = %q }
  }
}`, ca))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c := s.Options.TLSConfig
	if c == nil || c.RootCAs == nil || c.ServerName != "redis.example" {
		t.Fatalf("TLS config %+v", c)
	}
}

func TestFingerprint(t *testing.T) {
	block := "server {\n  state {\n    redis = \"redis://127.0.0.1:6379\"\n%s  }\n}\n"
	a := mustCompile(t, fmt.Sprintf(block, ""))
	b := mustCompile(t, fmt.Sprintf(block, ""))
	c := mustCompile(t, fmt.Sprintf(block, "    key_prefix = \"x\"\n"))
	if a.Fingerprint() != b.Fingerprint() {
		t.Error("equal blocks, different fingerprints: a reload would reconnect for nothing")
	}
	if a.Fingerprint() == c.Fingerprint() {
		t.Error("different blocks, equal fingerprints: a reload would keep a stale client")
	}
}

func mustCompile(t *testing.T, src string) *sharedstate.Settings {
	t.Helper()
	return mustCompileB(t, src)
}

func mustCompileB(t testing.TB, src string) *sharedstate.Settings {
	t.Helper()
	s, diags := compile(t, src)
	if diags.HasErrors() || s == nil {
		t.Fatalf("%s: %v", src, diags)
	}
	return s
}

// stateBlock is a config with a state block of these attribute lines.
func stateBlock(lines ...string) string {
	return "server {\n  state {\n    " + strings.Join(lines, "\n    ") + "\n  }\n}\n"
}

func TestNoStateBlock(t *testing.T) {
	s, diags := compile(t, "server {\n  name = \"x\"\n}\n")
	if s != nil || diags.HasErrors() {
		t.Fatalf("%v %v", s, diags)
	}
	var st *sharedstate.Store
	if st.Healthy() || st.Close() != nil || st.OnFailure() != sharedstate.FailOpen {
		t.Fatal("a nil store must be usable and never healthy")
	}
}

func TestUnknownAtLoad(t *testing.T) {
	// `mcpd validate` without the secrets: env() of an unset variable is
	// unknown; there is nothing to connect to, and no error of ours.
	dir := t.TempDir()
	path := filepath.Join(dir, "mcpd.hcl")
	os.WriteFile(path, []byte(stateBlock(`redis = env("MCPD_TEST_UNSET_URL_XYZ")`)), 0o600)
	cfg, diags := config.LoadWith([]string{path}, config.Blocks{}, config.Options{UnsetEnvUnknown: true})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s, diags := sharedstate.Compile(cfg.Server.State, "", &hcl.EvalContext{Functions: funcs.TableWith(dir, funcs.Options{UnsetEnvUnknown: true})})
	if s != nil || diags.HasErrors() {
		t.Fatalf("%v %v", s, diags)
	}
}

func TestKey(t *testing.T) {
	s, _ := compile(t, `server {
  name = "a:b"
  state { redis = "redis://127.0.0.1:1" }
}`)
	st := sharedstate.Open(s, nil)
	defer st.Close()
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{[]string{"rl", "search", "bearer:alice"}, "mcpd:a%3Ab:rl:search:bearer%3Aalice"},
		{[]string{"rl", "search:bearer", "alice"}, "mcpd:a%3Ab:rl:search%3Abearer:alice"},
		{[]string{"x", "100%"}, "mcpd:a%3Ab:x:100%25"},
	} {
		if got := st.Key(tc.parts...); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func TestStoreHealthAgainstRealRedis(t *testing.T) {
	url := sharedstatetest.URL(t)
	s := mustCompile(t, stateBlock(fmt.Sprintf("redis = %q", url)))
	st := sharedstate.Open(s, nil)
	defer st.Close()
	if !st.Healthy() {
		t.Fatalf("not healthy after Open: %+v", st.Status())
	}
	ctx := context.Background()
	key := st.Key("test", sharedstatetest.Prefix(t, url))
	if err := st.Client().Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	st.Client().Del(ctx, key)
}

func TestStoreReconnects(t *testing.T) {
	srv := sharedstatetest.NewServer(t)
	s := mustCompile(t, stateBlock(fmt.Sprintf("redis = %q", srv.URL()), `timeout = "300ms"`))
	st := sharedstate.Open(s, nil)
	defer st.Close()
	if !st.Healthy() {
		t.Fatalf("not healthy after Open: %+v", st.Status())
	}
	srv.Kill()
	// A command that finds Redis gone marks the store down at once.
	err := st.Client().Ping(context.Background()).Err()
	if err == nil || !st.Observe(err) {
		t.Fatalf("ping of a killed Redis: %v, not seen as unavailable", err)
	}
	if st.Healthy() {
		t.Fatal("healthy after a failed command")
	}
	if got := st.Status(); got.Up || got.Error == "" || got.Failures == 0 {
		t.Fatalf("status while down: %+v", got)
	}
	srv.Start()
	wait.Until(t, "the store to reconnect", st.Healthy)
	if got := st.Status(); !got.Up || got.Error != "" {
		t.Fatalf("status after reconnecting: %+v", got)
	}
}

func TestStoreStartsWithoutRedis(t *testing.T) {
	// A replica starts while Redis is not there yet, and finds it when it
	// comes.
	srv := sharedstatetest.NewServer(t)
	srv.Kill()
	s := mustCompile(t, stateBlock(fmt.Sprintf("redis = %q", srv.URL()), `timeout = "300ms"`))
	st := sharedstate.Open(s, nil)
	defer st.Close()
	if st.Healthy() {
		t.Fatal("healthy without a Redis")
	}
	srv.Start()
	wait.Until(t, "the store to connect", st.Healthy)
}

// testCA returns a self-signed CA certificate in PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-redis-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
