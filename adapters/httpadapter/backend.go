package httpadapter

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/outbound"
)

// backendConfig is one decoded http_backend block. It holds secrets (header
// values, a client key), so it has String and GoString methods that print
// only its name.
type backendConfig struct {
	name    string
	baseURL string
	origin  origin
	headers map[string][]string // canonical names
	query   map[string][]string
	timeout time.Duration
	retry   retryPolicy
	caPEM   []byte
	certPEM []byte
	keyPEM  []byte
	secrets secrets
	// identity is the identity block (nil: the requests carry only the
	// configured headers).
	identity *identity.Config
}

func (c *backendConfig) String() string   { return fmt.Sprintf("http_backend %q", c.name) }
func (c *backendConfig) GoString() string { return c.String() }

// DecodeBackend decodes an http_backend block. All of its attributes are
// load-time values; headers may use env() and file().
func (a *Adapter) DecodeBackend(b *adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	d := &decoder{adapter.NewDecoder(b.Scope)}
	content, ok := d.Content(b.Body, backendSchema)
	if !ok {
		return nil, d.Diags
	}
	c := &backendConfig{name: b.Name, timeout: defaultTimeout, retry: noRetry}

	// An attribute that reads an unset environment variable, in a load that
	// allows it (validation without secrets), is skipped: the loader
	// reports the variable, and the backend stays declared for its tools.
	for _, name := range []string{"base_url", "headers", "query"} {
		if attr := content.Attributes[name]; attr != nil && unknownAtLoad(attr, b.Scope) {
			delete(content.Attributes, name)
		}
	}
	if attr := content.Attributes["base_url"]; attr != nil {
		if s, ok := d.String(attr, "base_url"); ok {
			o, msg := parseBase(s)
			if msg != "" {
				d.Errorf(attr.Expr.Range(), "Invalid base_url", "base_url: %s.", msg)
			} else {
				c.baseURL, c.origin = s, o
			}
		}
	}
	if attr := content.Attributes["headers"]; attr != nil {
		collectSecrets(d, attr.Expr, &c.secrets)
		if h, ok := d.staticMultiMap(attr, "headers"); ok {
			c.headers = d.checkHeaders(attr, h)
			collectHeaderSecrets(c.headers, &c.secrets)
		}
	}
	if attr := content.Attributes["query"]; attr != nil {
		collectSecrets(d, attr.Expr, &c.secrets)
		if q, ok := d.staticMultiMap(attr, "query"); ok {
			c.query = q
		}
	}
	if attr := content.Attributes["timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "timeout", minTimeout, maxTimeout); ok {
			c.timeout = dur
		}
	}
	if rb := d.SingleBlock(content.Blocks, "retry"); rb != nil {
		if p, ok := d.decodeRetry(rb); ok {
			c.retry = p
		}
	}
	if tb := d.SingleBlock(content.Blocks, "tls"); tb != nil {
		d.decodeTLS(tb, c)
	}
	if ib := d.SingleBlock(content.Blocks, "identity"); ib != nil {
		var vals []string
		c.identity, vals = identity.Decode(d.Decoder, ib, c.String())
		c.secrets.addAll(vals)
		if attr := content.Attributes["headers"]; attr != nil && c.identity != nil {
			names := make([]string, 0, len(c.headers))
			for k := range c.headers {
				names = append(names, k)
			}
			identity.CheckHeaders(d.Decoder, attr, names, c.identity)
		}
	}
	c.secrets = c.secrets.finish()
	if d.Diags.HasErrors() {
		return nil, d.Diags
	}
	return c, d.Diags
}

// staticMultiMap evaluates a load-time map attribute (headers, query).
func (d *decoder) staticMultiMap(attr *hcl.Attribute, what string) (map[string][]string, bool) {
	v, ok := d.Value(attr, what)
	if !ok {
		return nil, false
	}
	m, err := multiMapValue(v)
	if err != nil {
		d.Errorf(attr.Expr.Range(), "Invalid "+attr.Name, "%s: %s.", what, err)
		return nil, false
	}
	return m, true
}

// checkHeaders checks the names and values of a header map evaluated at
// load and returns it with canonical names.
func (d *decoder) checkHeaders(attr *hcl.Attribute, h map[string][]string) map[string][]string {
	out := make(map[string][]string, len(h))
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		if msg := checkHeaderName(name); msg != "" {
			d.Errorf(attr.Expr.Range(), "Invalid header", "headers: %s.", msg)
			continue
		}
		for _, v := range h[name] {
			if msg := checkHeaderValue(name, v); msg != "" {
				d.Errorf(attr.Expr.Range(), "Invalid header", "headers: %s.", msg)
			}
		}
		ck := http.CanonicalHeaderKey(name)
		out[ck] = append(out[ck], h[name]...)
	}
	return out
}

func (d *decoder) decodeTLS(b *hcl.Block, c *backendConfig) {
	content, ok := d.Content(b.Body, tlsSchema)
	if !ok {
		return
	}
	read := func(name string) ([]byte, *hcl.Attribute) {
		attr := content.Attributes[name]
		if attr == nil {
			return nil, nil
		}
		p, ok := d.String(attr, "tls."+name)
		if !ok {
			return nil, attr
		}
		full := funcs.Resolve(d.Scope.Dir, p)
		data, err := os.ReadFile(full)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			d.Errorf(attr.Expr.Range(), "Cannot read tls."+name, "Reading %s: %s.", full, err)
			return nil, attr
		}
		return data, attr
	}
	ca, caAttr := read("ca_file")
	cert, certAttr := read("cert_file")
	key, keyAttr := read("key_file")
	if ca != nil {
		if !x509.NewCertPool().AppendCertsFromPEM(ca) {
			d.Errorf(caAttr.Expr.Range(), "Invalid tls.ca_file", "tls.ca_file contains no PEM certificates.")
		}
		c.caPEM = ca
	}
	switch {
	case (certAttr == nil) != (keyAttr == nil):
		rng := b.DefRange
		if certAttr != nil {
			rng = certAttr.Range
		} else {
			rng = keyAttr.Range
		}
		d.Errorf(rng, "Incomplete client certificate", "tls.cert_file and tls.key_file must be set together.")
	case cert != nil && key != nil:
		if _, err := tls.X509KeyPair(cert, key); err != nil {
			// The error of X509KeyPair describes the PEM blocks, never
			// their content.
			d.Errorf(certAttr.Range, "Invalid client certificate", "tls.cert_file and tls.key_file do not form a valid key pair: %s.", err)
		}
		c.certPEM, c.keyPEM = cert, key
	}
}

// Fingerprint hashes every resolved setting, header values and certificate
// files included, so that a change of a secret (a rotated token in the
// environment) opens a new backend on reload.
func (c *backendConfig) Fingerprint() string {
	h := sha256.New()
	str := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	str("http_backend/v1")
	str(c.baseURL)
	hashMulti(str, c.headers)
	hashMulti(str, c.query)
	str(c.timeout.String())
	str(fmt.Sprintf("%d/%s/%s/%v/%t/%t", c.retry.attempts, c.retry.backoff, c.retry.maxBackoff, c.retry.statuses, c.retry.onTimeout, c.retry.onConnection))
	str(string(c.caPEM))
	str(string(c.certPEM))
	str(string(c.keyPEM))
	c.identity.Fingerprint(str)
	return hex.EncodeToString(h.Sum(nil))
}

func hashMulti(str func(string), m map[string][]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	str(fmt.Sprint(len(keys)))
	for _, k := range keys {
		str(k)
		str(fmt.Sprint(len(m[k])))
		for _, v := range m[k] {
			str(v)
		}
	}
}

// Open builds the live backend: one resty client, and so one connection
// pool, per http_backend. Nothing is dialled until the first call.
func (c *backendConfig) Open() (adapter.Backend, error) {
	var tc *tls.Config
	if c.caPEM != nil || c.certPEM != nil {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
		if c.caPEM != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(c.caPEM) {
				return nil, fmt.Errorf("http_backend %q: tls.ca_file contains no PEM certificates", c.name)
			}
			tc.RootCAs = pool
		}
		if c.certPEM != nil {
			pair, err := tls.X509KeyPair(c.certPEM, c.keyPEM)
			if err != nil {
				return nil, fmt.Errorf("http_backend %q: invalid client certificate: %w", c.name, err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
	}
	client, transport := newClient(tc)
	return &liveBackend{cfg: c, client: client, transport: transport}, nil
}

// liveBackend is an opened http_backend.
type liveBackend struct {
	cfg       *backendConfig
	client    *resty.Client
	transport *http.Transport
}

func (b *liveBackend) String() string { return b.cfg.String() }

// Close drops the idle connections of the pool. Calls still in flight
// finish on their own connections.
func (b *liveBackend) Close() error {
	b.transport.CloseIdleConnections()
	return nil
}

// newClient makes a resty client over its own transport: a clone of
// http.DefaultTransport (so HTTP_PROXY/HTTPS_PROXY/NO_PROXY are honoured),
// with no cookie jar (calls must not share a session by accident), no
// logging, no resty retries (the handler retries, per tool) and the
// same-origin redirect policy: at most maxRedirects, and only to the
// scheme, host and port of the request, so that a server cannot bounce
// the request (and its credentials) elsewhere, nor downgrade it from
// https to http. The policy's errors name no one (the client may be
// shared by tools without a backend): classify names the backend.
func newClient(tc *tls.Config) (*resty.Client, *http.Transport) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tc != nil {
		tr.TLSClientConfig = tc
	}
	tr.MaxIdleConnsPerHost = 32
	hc := &http.Client{Transport: tr}
	c := resty.NewWithClient(hc)
	c.SetLogger(nopLogger{})
	c.SetDisableWarn(true)
	c.SetRetryCount(0)
	c.SetRedirectPolicy(resty.RedirectPolicyFunc(outbound.SameOriginRedirects("", maxRedirects)))
	c.SetHeader("User-Agent", userAgent)
	return c, tr
}

const userAgent = "mcpd-http/1"

type nopLogger struct{}

func (nopLogger) Errorf(string, ...any) {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Debugf(string, ...any) {}

// unknownAtLoad reports whether attr is a valid load-time expression whose
// value is not wholly known: it reads an unset environment variable in a
// load that allows that (funcs.Options.UnsetEnvUnknown).
func unknownAtLoad(attr *hcl.Attribute, scope *adapter.Scope) bool {
	if len(attr.Expr.Variables()) > 0 {
		return false
	}
	v, d := attr.Expr.Value(scope.EvalContext())
	return !d.HasErrors() && !v.IsWhollyKnown()
}
