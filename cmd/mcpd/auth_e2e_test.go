package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// authConfig is an auth block with one API key, read from the environment.
const authConfig = `
auth {
  header = "X-Api-Key"
  api_key "ci-bot" {
    value  = env("MCPD_TEST_KEY")
    scopes = ["read"]
  }
}
`

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// loopbackURL turns the URL mcpd reports for a wildcard address into one
// this test can dial.
func loopbackURL(t *testing.T, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", u.Port())
	return u.String()
}

// keyTransport sends an API key with every request.
type keyTransport struct {
	header, value string
	base          http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(k.header, k.value)
	return k.base.RoundTrip(r)
}

func connectWith(t *testing.T, endpoint string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "auth-test", Version: "1"}, nil)
	cs, err := client.Connect(bounded(t), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, HTTPClient: hc}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// A non-loopback address without an auth block refuses to start unless
// --insecure-no-auth says a proxy authenticates; with an auth block it
// starts and asks for credentials.
func TestNonLoopbackNeedsAuth(t *testing.T) {
	plain := writeConfig(t, cliConfig)
	cmd := mcpdCommand("serve", "--http", "0.0.0.0:0", "-c", plain)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	if code, _ := waitExit(t, cmd, 20*time.Second); code != 1 || !strings.Contains(out.String(), "--insecure-no-auth") {
		t.Fatalf("exit %d, output:\n%s\nwant a refusal naming --insecure-no-auth", code, out.String())
	}

	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			cmd := mcpdCommand("serve", "--http", "0.0.0.0:0", "-c", plain)
			if how == "flag" {
				cmd.Args = append(cmd.Args, "--insecure-no-auth")
			} else {
				cmd.Env = append(cmd.Env, "MCPD_INSECURE_NO_AUTH=1")
			}
			endpoint, logs := startHTTPLogs(t, cmd)
			if _, err := connectWith(t, loopbackURL(t, endpoint), nil); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "without authentication") {
				t.Fatalf("no warning in the log:\n%s", logs.String())
			}
		})
	}

	t.Run("auth block", func(t *testing.T) {
		cmd := mcpdCommand("serve", "--http", "0.0.0.0:0", "-c", writeConfig(t, cliConfig+authConfig))
		cmd.Env = append(cmd.Env, "MCPD_TEST_KEY=e2e-secret")
		endpoint := loopbackURL(t, startHTTP(t, cmd))
		if _, err := connectWith(t, endpoint, nil); err == nil {
			t.Fatal("connected without a key")
		}
		for _, h := range [][2]string{{"Authorization", "Bearer e2e-secret"}, {"X-Api-Key", "e2e-secret"}} {
			hc := &http.Client{Transport: keyTransport{h[0], h[1], http.DefaultTransport}}
			cs, err := connectWith(t, endpoint, hc)
			if err != nil {
				t.Fatalf("%s: %v", h[0], err)
			}
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The http adapter builds its own requests: the client's token never
// reaches a backend.
func TestTokenNotForwarded(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprint(r.Header))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	defer backend.Close()
	cfg := cliConfig + authConfig + fmt.Sprintf(`
tool "fetch" {
  description = "Calls the backend."
  http {
    url = "%s/x"
  }
}
`, backend.URL)
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", writeConfig(t, cfg))
	cmd.Env = append(cmd.Env, "MCPD_TEST_KEY=never-forward-me")
	endpoint := startHTTP(t, cmd)
	for _, h := range [][2]string{{"Authorization", "Bearer never-forward-me"}, {"X-Api-Key", "never-forward-me"}} {
		cs, err := connectWith(t, endpoint, &http.Client{Transport: keyTransport{h[0], h[1], http.DefaultTransport}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fetch"})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("backend saw %d requests, want 2", len(seen))
	}
	for _, h := range seen {
		if strings.Contains(h, "never-forward-me") || strings.Contains(h, "Authorization") || strings.Contains(h, "X-Api-Key") {
			t.Fatalf("the backend saw the client's credentials: %s", h)
		}
	}
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1 and
// returns it.
func writeCert(t *testing.T, certPath, keyPath string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "mcpd-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Key first, then the certificate, each renamed into place as
	// cert-manager's atomic writes do.
	for _, f := range []struct {
		path string
		blk  *pem.Block
	}{{keyPath, &pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}}, {certPath, &pem.Block{Type: "CERTIFICATE", Bytes: der}}} {
		tmp := f.path + ".tmp"
		if err := os.WriteFile(tmp, pem.EncodeToMemory(f.blk), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := x509.ParseCertificate(der)
	return c
}

// HTTPS with --tls-cert/--tls-key: HTTP/2, a go-sdk client, and a renewed
// certificate served without a restart.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := writeCert(t, certPath, keyPath, 1)
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", writeConfig(t, cliConfig), "--tls-cert", certPath, "--tls-key", keyPath)
	endpoint := startHTTP(t, cmd)
	if !strings.HasPrefix(endpoint, "https://") {
		t.Fatalf("endpoint %s", endpoint)
	}
	client := func(trust *x509.Certificate) *http.Client {
		pool := x509.NewCertPool()
		pool.AddCert(trust)
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	}
	check := func(trust *x509.Certificate) {
		t.Helper()
		hc := client(trust)
		resp, err := hc.Get(strings.TrimSuffix(endpoint, "/mcp") + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.TLS.PeerCertificates[0].SerialNumber.Cmp(trust.SerialNumber) != 0 {
			t.Fatalf("proto %s, serial %v; want HTTP/2 and serial %v", resp.Proto, resp.TLS.PeerCertificates[0].SerialNumber, trust.SerialNumber)
		}
		cs, err := connectWith(t, endpoint, hc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	check(first)
	if _, err := connectWith(t, endpoint, nil); err == nil {
		t.Fatal("a client that does not trust the certificate connected")
	}

	time.Sleep(1100 * time.Millisecond) // a new modification time, past the check interval
	second := writeCert(t, certPath, keyPath, 2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client(second).Get(strings.TrimSuffix(endpoint, "/mcp") + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate was not served: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	check(second)
}

// The principal the auth layer verifies is the one the engine's scope
// checks see: an API key's scopes decide which tools it finds.
func TestAuthScopesReachTheEngine(t *testing.T) {
	cfg := cliConfig + authConfig + `
tool "secret" {
  description = "Needs the write scope."
  scopes      = ["write"]
  result {
    content "text" {
      text = "secret"
    }
  }
}
`
	cmd := mcpdCommand("serve", "--http", "127.0.0.1:0", "-c", writeConfig(t, cfg))
	cmd.Env = append(cmd.Env, "MCPD_TEST_KEY=scoped-key")
	endpoint := startHTTP(t, cmd)
	cs, err := connectWith(t, endpoint, &http.Client{Transport: keyTransport{"Authorization", "Bearer scoped-key", http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "secret" {
			t.Fatal("a caller without the write scope sees the secret tool")
		}
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret"}); err == nil {
		t.Fatal("a caller without the write scope called the secret tool")
	}
}
