// Package sharedstate is the state the replicas of one mcpd deployment
// share: a Redis named by the server's `state { ... }` block. Its Store owns
// the one Redis client of a config, knows whether Redis answers (for
// /readyz, metrics and the fail-open/fail-closed choice of its users), and
// names keys so that two deployments sharing a Redis never collide.
//
// What is built on it (global rate limits, concurrency leases, the result
// cache) lives with its users; this package only provides the connection,
// the key space and the health.
//
// Without a state block there is no Store (a nil *Store): every user keeps
// its state in memory, as a single process always did.
package sharedstate

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/redis/go-redis/v9"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
)

// FailMode is what a user of the shared state does while it does not
// answer.
type FailMode int

const (
	// FailOpen falls back to this process's own state (local limits),
	// logged and counted: the service stays up, the limits are per
	// replica for a while.
	FailOpen FailMode = iota
	// FailClosed refuses the call with a tool error: the limit is never
	// exceeded, at the price of the tool being unavailable.
	FailClosed
)

func (m FailMode) String() string {
	if m == FailClosed {
		return "closed"
	}
	return "open"
}

// ParseFailMode decodes "open" or "closed" from attribute a.
func ParseFailMode(a *hcl.Attribute, ectx *hcl.EvalContext) (FailMode, hcl.Diagnostics) {
	s, known, d := stringAttr(a, ectx)
	if d.HasErrors() || !known {
		return FailOpen, d
	}
	switch s {
	case "open":
		return FailOpen, nil
	case "closed":
		return FailClosed, nil
	}
	return FailOpen, hcl.Diagnostics{attrError(a, "Invalid "+a.Name, fmt.Sprintf("%q is neither \"open\" (fall back to this replica's own limits while the shared state does not answer) nor \"closed\" (refuse the call).", s))}
}

// Defaults of a state block.
const (
	// DefaultTimeout bounds a dial, and all of one call's Redis operations
	// together (see Budget): long enough for a managed Redis across zones,
	// short enough that a call does not hang on a Redis that went away.
	DefaultTimeout = time.Second
)

// Settings are a compiled state block: everything needed to open a Store,
// with no connection yet.
type Settings struct {
	// Options are the client's options, parsed from the URL and completed
	// by the block's attributes.
	Options *redis.Options
	// Prefix starts every key (without a trailing colon).
	Prefix string
	// OnFailure is the default FailMode of the state's users.
	OnFailure FailMode
	// Addr is the server's address, for logs and /readyz (never the
	// password).
	Addr string
	// Reserve is the most rate-limit tokens a replica holds per bucket
	// (see reserves); 0: every call is decided in Redis.
	Reserve int

	fingerprint string
}

// Fingerprint identifies the settings: a reload whose state block has the
// same fingerprint keeps its Store (and its connections).
func (s *Settings) Fingerprint() string { return s.fingerprint }

// Compile evaluates and checks a state block. ectx holds the functions
// (env, file) of the block's directory; the values they read are recorded
// by ectx's table, so that the password never appears in a result.
// serverName is the server's name, the default key prefix's second part.
//
// It returns nil settings without errors when a value is unknown at load
// (env() of an unset variable while validating): there is nothing to
// connect to, and the loader reports the variable.
func Compile(sc *config.State, serverName string, ectx *hcl.EvalContext) (*Settings, hcl.Diagnostics) {
	if sc == nil {
		return nil, nil
	}
	var diags hcl.Diagnostics
	unknown := false
	str := func(a *hcl.Attribute) string {
		if a == nil {
			return ""
		}
		s, known, d := stringAttr(a, ectx)
		diags = append(diags, d...)
		if !known {
			unknown = true
		}
		return s
	}
	if sc.Redis == nil {
		rng := sc.DeclRange
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Missing redis", Detail: "A state block names its Redis: redis = env(\"MCPD_REDIS_URL\"), a redis:// or rediss:// URL.", Subject: &rng}}
	}
	url := str(sc.Redis)
	user, pass := str(sc.Username), strings.TrimRight(str(sc.Password), "\r\n")
	prefix := str(sc.KeyPrefix)
	var mode FailMode
	if sc.OnFailure != nil {
		m, d := ParseFailMode(sc.OnFailure, ectx)
		diags = append(diags, d...)
		mode = m
	}
	timeout := DefaultTimeout
	if sc.Timeout != nil {
		if s := str(sc.Timeout); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				diags = append(diags, attrError(sc.Timeout, "Invalid timeout", fmt.Sprintf("%q is not a duration such as \"500ms\" or \"2s\".", s)))
			}
			timeout = d
		}
	}
	reserve := DefaultReserve
	if a := sc.LocalReserve; a != nil {
		v, d := a.Expr.Value(ectx)
		diags = append(diags, d...)
		switch {
		case d.HasErrors():
		case !v.IsKnown():
			unknown = true
		default:
			var n int
			if v.Type() != cty.Number || gocty.FromCtyValue(v, &n) != nil || n < 0 || n > 1024 {
				diags = append(diags, attrError(a, "Invalid local_reserve", "local_reserve is a whole number from 0 (every call is checked in Redis) to 1024: the most rate-limit tokens one replica holds per limit."))
			} else {
				reserve = n
			}
		}
	}
	var tlsFiles [][]byte
	var tlsConf *tls.Config
	if t := sc.TLS; t != nil {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
		tlsConf.ServerName = str(t.ServerName)
		if t.CAFile != nil {
			if p := str(t.CAFile); p != "" {
				pem, err := os.ReadFile(funcs.Resolve(sc.Dir, p))
				switch {
				case err != nil:
					diags = append(diags, attrError(t.CAFile, "Cannot read ca_file", err.Error()))
				default:
					pool := x509.NewCertPool()
					if !pool.AppendCertsFromPEM(pem) {
						diags = append(diags, attrError(t.CAFile, "Invalid ca_file", p+" holds no PEM certificate."))
					}
					tlsConf.RootCAs = pool
					tlsFiles = append(tlsFiles, pem)
				}
			}
		}
		if (t.CertFile == nil) != (t.KeyFile == nil) {
			rng := t.DeclRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Incomplete client certificate", Detail: "A client certificate needs both cert_file and key_file.", Subject: &rng})
		} else if t.CertFile != nil {
			cp, kp := str(t.CertFile), str(t.KeyFile)
			if cp != "" && kp != "" {
				certPEM, err1 := os.ReadFile(funcs.Resolve(sc.Dir, cp))
				keyPEM, err2 := os.ReadFile(funcs.Resolve(sc.Dir, kp))
				switch {
				case err1 != nil:
					diags = append(diags, attrError(t.CertFile, "Cannot read cert_file", err1.Error()))
				case err2 != nil:
					diags = append(diags, attrError(t.KeyFile, "Cannot read key_file", err2.Error()))
				default:
					cert, err := tls.X509KeyPair(certPEM, keyPEM)
					if err != nil {
						diags = append(diags, attrError(t.CertFile, "Invalid client certificate", err.Error()))
					}
					tlsConf.Certificates = []tls.Certificate{cert}
					tlsFiles = append(tlsFiles, certPEM, keyPEM)
				}
			}
		}
	}
	if diags.HasErrors() || unknown {
		return nil, diags
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		// The URL may hold a password: say what is wrong, never the value.
		return nil, append(diags, attrError(sc.Redis, "Invalid redis URL", "Expected redis://[user:password@]host:port[/db] or rediss://… for TLS: "+scrubURLError(err, url)+" (The value is not shown: it may hold a password.)"))
	}
	if tlsConf != nil {
		if opts.TLSConfig == nil {
			return nil, append(diags, attrError(sc.Redis, "TLS settings without TLS", "The state block has a tls block, but its URL starts with redis://: use rediss:// to connect with TLS."))
		}
		if tlsConf.ServerName == "" {
			tlsConf.ServerName = opts.TLSConfig.ServerName
		}
		opts.TLSConfig = tlsConf
	}
	if user != "" {
		opts.Username = user
	}
	if pass != "" {
		opts.Password = pass
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	// The users of the store decide about retrying: a limiter's script is
	// not idempotent (a retry after a lost reply would count the call
	// twice), and a call must not wait on retries while Redis is down.
	opts.MaxRetries = -1
	// A context deadline, not only the socket timeouts, bounds each command.
	opts.ContextTimeoutEnabled = true
	if prefix == "" {
		name := serverName
		if name == "" {
			name = "mcpd"
		}
		prefix = "mcpd:" + escapePart(name)
	}
	prefix = strings.TrimSuffix(prefix, ":")
	s := &Settings{Options: opts, Prefix: prefix, OnFailure: mode, Addr: opts.Addr, Reserve: reserve}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%v\x00%s\x00%t\x00%d", url, user, pass, prefix, mode, timeout, tlsConfServerName(tlsConf), tlsConf != nil, reserve)
	for _, f := range tlsFiles {
		h.Write([]byte{0})
		h.Write(f)
	}
	s.fingerprint = hex.EncodeToString(h.Sum(nil))
	return s, diags
}

func tlsConfServerName(c *tls.Config) string {
	if c == nil {
		return ""
	}
	return c.ServerName
}

// scrubURLError returns err's text without the URL in it.
func scrubURLError(err error, url string) string {
	msg := err.Error()
	if url != "" {
		msg = strings.ReplaceAll(msg, url, "<url>")
	}
	return msg
}

// stringAttr evaluates a as a string. known is false for a value unknown at
// load (an unset env() variable while validating).
func stringAttr(a *hcl.Attribute, ectx *hcl.EvalContext) (s string, known bool, diags hcl.Diagnostics) {
	v, d := a.Expr.Value(ectx)
	if d.HasErrors() {
		return "", true, d
	}
	if !v.IsWhollyKnown() {
		return "", false, nil
	}
	if v.IsNull() || v.Type() != cty.String {
		return "", true, hcl.Diagnostics{attrError(a, "Invalid "+a.Name, a.Name+" is a string.")}
	}
	return v.AsString(), true, nil
}

func attrError(a *hcl.Attribute, summary, detail string) *hcl.Diagnostic {
	rng := a.Expr.Range()
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rng}
}
