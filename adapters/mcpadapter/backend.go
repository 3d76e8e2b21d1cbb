package mcpadapter

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/adapters/internal/identity"
	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/connect"
	"github.com/mcpd/mcpd/engine/proc"
	"github.com/mcpd/mcpd/engine/requeststate"
)

const (
	defaultConnectTimeout = 10 * time.Second
	// runnerConnectTimeout is the default for a server started through a
	// package runner (npx, uvx, ...): its first start downloads the
	// package (about 15 s for server-everything through npx, issue #37),
	// and a handshake cut short by connect_timeout kills the download.
	runnerConnectTimeout = 2 * time.Minute
	// defaultPath is the PATH of a stdio upstream that declares none and
	// does not inherit mcpd's environment (as for the shell adapter).
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// Protocol versions an upstream may be pinned to with protocol_version.
var protocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// serverConfig is one decoded mcp_server block: plain settings, separate
// from the live upstream they describe.
type serverConfig struct {
	name string

	// stdio
	command []string
	// runner is the package runner the command starts (npx, uvx, ...),
	// whose first start downloads the server; "" for any other command.
	runner     string
	env        map[string]string
	inheritEnv bool
	dir        string

	// Streamable HTTP
	url     string
	headers map[string]string

	protocolVersion string
	connectTimeout  time.Duration
	// answerTimeout is how long a call held for a client's answer
	// waits for its retry (held.go).
	answerTimeout time.Duration
	// maxIdle and idleTimeout bound an HTTP upstream's pool of sessions
	// for calls whose client can be asked (pool.go).
	maxIdle     int
	idleTimeout time.Duration
	eager       bool // start = "load": connect when opened
	// noFastPath (fast_path = false) sends every call through the SDK's
	// client (fastcall.go).
	noFastPath bool

	expose *exposeConfig // nil: no bulk exposure
	drift  driftPolicy   // on_drift (pin.go)

	// identity is the OAuth identity of an HTTP upstream's requests (nil:
	// the headers only), whose tokens the adapter's cache keeps.
	identity *identity.Config
	tokens   *identity.Cache
	// user is the identity block in user_authorization mode (userauth.go):
	// each user's own grant; connect runs its flow.
	user    *userAuthConfig
	connect *connect.Service

	procs   *proc.Supervisor // starts a stdio upstream's program
	unknown bool             // a value read an unset env var (validation only)

	// secrets are values of headers and env that must never reach a log
	// line or an error the model sees.
	secrets []string
}

func (c *serverConfig) String() string { return fmt.Sprintf("mcp_server %q", c.name) }

// transport names the kind of upstream, for logs and metrics.
func (c *serverConfig) transport() string {
	if c.url != "" {
		return "http"
	}
	return "stdio"
}

// DecodeBackend decodes an mcp_server block. Everything in it is known at
// load time; env and headers may read secrets with env() and file().
func (a *Adapter) DecodeBackend(b *adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	d := adapter.NewDecoder(b.Scope)
	content, ok := d.Content(b.Body, serverSchema)
	if !ok {
		return nil, d.Diags
	}
	attrs := content.Attributes
	c := &serverConfig{name: b.Name, connectTimeout: defaultConnectTimeout, answerTimeout: defaultAnswerTimeout,
		maxIdle: defaultMaxIdle, idleTimeout: defaultIdleTimeout, procs: a.procs, tokens: a.tokens, connect: a.connect}
	// A value that reads an unset environment variable, in a load that
	// allows it (validation without secrets), is skipped: the loader
	// reports the variable, and the server stays declared for its tools.
	for _, name := range []string{"env", "headers", "url"} {
		if attr := attrs[name]; attr != nil && unknownAtLoad(attr, b.Scope) {
			delete(attrs, name)
			c.unknown = true
		}
	}
	cmdAttr, urlAttr := attrs["command"], attrs["url"]
	switch {
	case cmdAttr == nil && urlAttr == nil && !c.unknown:
		d.Errorf(b.Range, "Missing command or url", "mcp_server %q needs either command (a program spoken to over stdio) or url (a Streamable HTTP endpoint).", b.Name)
	case cmdAttr != nil && urlAttr != nil:
		d.Errorf(urlAttr.Expr.Range(), "Both command and url", "An mcp_server is either a program (command) or an HTTP endpoint (url), not both.")
	}
	if cmdAttr != nil {
		if v, ok := d.Static(cmdAttr, "command", cty.List(cty.String)); ok {
			for _, e := range v.AsValueSlice() {
				if e.IsNull() {
					d.Errorf(cmdAttr.Expr.Range(), "Invalid command", "command must not contain null elements.")
					break
				}
				c.command = append(c.command, e.AsString())
			}
			if len(c.command) == 0 || c.command[0] == "" {
				d.Errorf(cmdAttr.Expr.Range(), "Invalid command", `command is the program and its arguments, such as ["npx", "-y", "@modelcontextprotocol/server-everything"]; it must not be empty.`)
			}
		}
	}
	if attr := attrs["env"]; attr != nil {
		if cmdAttr == nil {
			d.Errorf(attr.NameRange, "env without command", "env sets the environment of a stdio upstream's program; an HTTP upstream takes headers.")
		}
		if m, ok := stringMap(d, attr, "env"); ok {
			for k, v := range m {
				if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
					d.Errorf(attr.Expr.Range(), "Invalid env", "env %q: names must not be empty or contain '=', and values must not contain NUL bytes.", k)
				}
				c.secrets = append(c.secrets, v)
			}
			c.env = m
		}
	}
	if attr := attrs["inherit_env"]; attr != nil {
		c.inheritEnv, _ = d.Bool(attr, "inherit_env")
	}
	if attr := attrs["dir"]; attr != nil {
		if s, ok := d.String(attr, "dir"); ok {
			if !filepath.IsAbs(s) {
				s = filepath.Join(b.Scope.Dir, s)
			}
			c.dir = s
		}
	}
	if urlAttr != nil {
		if s, ok := d.String(urlAttr, "url"); ok {
			u, err := url.Parse(s)
			switch {
			case err != nil:
				d.Errorf(urlAttr.Expr.Range(), "Invalid url", "url is not a URL: %v.", err)
			case u.Scheme != "http" && u.Scheme != "https":
				d.Errorf(urlAttr.Expr.Range(), "Invalid url", "url must be an http:// or https:// Streamable HTTP endpoint, such as http://127.0.0.1:3001/mcp.")
			case u.Host == "":
				d.Errorf(urlAttr.Expr.Range(), "Invalid url", "url has no host.")
			case u.User != nil:
				d.Errorf(urlAttr.Expr.Range(), "Invalid url", "url must not carry credentials; send them in headers, read with env() or file().")
			default:
				c.url = s
			}
		}
	}
	if attr := attrs["headers"]; attr != nil {
		if urlAttr == nil && !c.unknown {
			d.Errorf(attr.NameRange, "headers without url", "headers are sent to an HTTP upstream; a stdio upstream takes env.")
		}
		if m, ok := stringMap(d, attr, "headers"); ok {
			for k, v := range m {
				if k == "" || strings.ContainsAny(k, " :\r\n\x00") || strings.ContainsAny(v, "\r\n\x00") {
					d.Errorf(attr.Expr.Range(), "Invalid header", "header %q: names are tokens and values must not contain line breaks.", k)
				}
				c.secrets = append(c.secrets, v)
			}
			c.headers = m
		}
	}
	if attr := attrs["protocol_version"]; attr != nil {
		if s, ok := d.String(attr, "protocol_version"); ok {
			if !contains(protocolVersions, s) {
				d.Errorf(attr.Expr.Range(), "Unknown protocol_version", "protocol_version must be one of %s.", strings.Join(protocolVersions, ", "))
			}
			c.protocolVersion = s
		}
	}
	if len(c.command) > 0 && packageRunner(c.command[0]) {
		c.runner = filepath.Base(c.command[0])
		c.connectTimeout = runnerConnectTimeout
	}
	if attr := attrs["connect_timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "connect_timeout", 100*time.Millisecond, 10*time.Minute); ok {
			c.connectTimeout = dur
		}
	}
	if attr := attrs["answer_timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "answer_timeout", 100*time.Millisecond, requeststate.DefaultTTL); ok {
			c.answerTimeout = dur
		}
	}
	for _, name := range []string{"max_idle_sessions", "idle_session_timeout"} {
		if attr := attrs[name]; attr != nil && cmdAttr != nil {
			d.Errorf(attr.NameRange, name+" without url", "%s bounds the pool of sessions of an HTTP upstream; a stdio upstream has one session, shared by all its calls (see docs/gateway.md).", name)
		}
	}
	if attr := attrs["max_idle_sessions"]; attr != nil {
		if n, ok := d.Int(attr, "max_idle_sessions", 0, maxMaxIdle); ok {
			c.maxIdle = int(n)
		}
	}
	if attr := attrs["idle_session_timeout"]; attr != nil {
		if dur, ok := d.Duration(attr, "idle_session_timeout", 100*time.Millisecond, time.Hour); ok {
			c.idleTimeout = dur
		}
	}
	if attr := attrs["start"]; attr != nil {
		if s, ok := d.String(attr, "start"); ok {
			switch s {
			case "load":
				c.eager = true
			case "first_use":
			default:
				d.Errorf(attr.Expr.Range(), "Invalid start", `start is "first_use" (the default: connect on the first call or listing) or "load" (connect as soon as the config is served).`)
			}
		}
	}
	c.drift = decodeOnDrift(d, attrs["on_drift"])
	if attr := attrs["fast_path"]; attr != nil {
		if cmdAttr != nil {
			d.Errorf(attr.NameRange, "fast_path without url", "fast_path is about calls to an HTTP upstream; a stdio upstream's calls always go through the SDK's client.")
		}
		if on, ok := d.Bool(attr, "fast_path"); ok {
			c.noFastPath = !on
		}
	}
	if eb := d.SingleBlock(content.Blocks, "expose"); eb != nil {
		c.expose = decodeExpose(d, eb)
	}
	if ib := d.SingleBlock(content.Blocks, "identity"); ib != nil {
		if isUserMode(ib) { // userauth.go
			if c.user = decodeUserIdentity(d, ib, c, b.Scope); c.user != nil {
				checkUserMode(d, ib, c, attrs)
			}
		} else {
			c.decodeIdentity(d, ib, cmdAttr, content.Attributes["headers"])
		}
	}
	if d.HasErrors() {
		return nil, d.Diags
	}
	return c, d.Diags
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// stringMap decodes a load-time map of strings.
func stringMap(d *adapter.Decoder, attr *hcl.Attribute, what string) (map[string]string, bool) {
	v, ok := d.Static(attr, what, cty.Map(cty.String))
	if !ok {
		return nil, false
	}
	m := map[string]string{}
	for k, e := range v.AsValueMap() {
		if e.IsNull() {
			d.Errorf(attr.Expr.Range(), "Invalid "+what, "%s %q must not be null.", what, k)
			return nil, false
		}
		m[k] = e.AsString()
	}
	return m, true
}

// unknownAtLoad reports whether attr is a valid load-time expression whose
// value is not wholly known: it reads an unset environment variable in a
// load that allows that.
func unknownAtLoad(attr *hcl.Attribute, scope *adapter.Scope) bool {
	if len(attr.Expr.Variables()) > 0 {
		return false
	}
	v, d := attr.Expr.Value(scope.EvalContext())
	return !d.HasErrors() && !v.IsWhollyKnown()
}

// Fingerprint identifies the connection settings: a reload that keeps them
// keeps the live upstream (and its process) running. The expose block is
// not part of it: what is exposed is computed from the live listing on
// every build (see ExposedTools).
func (c *serverConfig) Fingerprint() string {
	h := sha256.New()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(c.name)
	w(strings.Join(c.command, "\x01"))
	for _, k := range sortedKeys(c.env) {
		w(k)
		w(c.env[k])
	}
	w(fmt.Sprint(c.inheritEnv, c.eager, c.connectTimeout, c.answerTimeout, c.maxIdle, c.idleTimeout, c.noFastPath))
	w(c.dir)
	w(c.url)
	for _, k := range sortedKeys(c.headers) {
		w(k)
		w(c.headers[k])
	}
	w(c.protocolVersion)
	c.identity.Fingerprint(w)
	w(c.user.fingerprint())
	return hex.EncodeToString(h.Sum(nil))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// environ is a stdio upstream's environment: the declared variables and a
// PATH, or mcpd's environment overlaid with them when inherit_env is set.
func (c *serverConfig) environ() []string {
	merged := map[string]string{}
	if c.inheritEnv {
		for _, kv := range os.Environ() {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				merged[k] = v
			}
		}
	} else {
		// A program needs somewhere to write (npm's cache, for one).
		for _, k := range []string{"HOME", "TMPDIR", "LANG", "TZ"} {
			if v, ok := os.LookupEnv(k); ok {
				merged[k] = v
			}
		}
	}
	for k, v := range c.env {
		merged[k] = v
	}
	if _, ok := merged["PATH"]; !ok {
		merged["PATH"] = defaultPath
	}
	env := make([]string, 0, len(merged))
	for _, k := range sortedKeys(merged) {
		env = append(env, k+"="+merged[k])
	}
	return env
}

// decodeIdentity decodes the identity block of an HTTP upstream. A stdio
// upstream has no HTTP requests to carry a token: its program gets what
// it needs in env.
func (c *serverConfig) decodeIdentity(d *adapter.Decoder, b *hcl.Block, cmdAttr, headersAttr *hcl.Attribute) {
	if cmdAttr != nil {
		d.Errorf(b.DefRange, "identity without url", "identity makes the HTTP requests to an upstream carry an OAuth token; mcp_server %q is a program spoken to over stdio (command), which sends no HTTP requests. Give the program its credentials in env, read with env() or file().", c.name)
		return
	}
	cfg, secrets := identity.Decode(d, b, c.String())
	c.secrets = append(c.secrets, secrets...)
	if cfg == nil {
		return
	}
	if headersAttr != nil && c.headers != nil {
		identity.CheckHeaders(d, headersAttr, sortedKeys(c.headers), cfg)
	}
	c.identity = cfg
}

// packageRunner reports a command that fetches the server it runs on its
// first start: npx, pnpx, bunx, uvx, pipx (run). `pnpm dlx` and `yarn dlx`
// are not told apart from their other subcommands.
func packageRunner(cmd string) bool {
	switch strings.TrimSuffix(strings.ToLower(filepath.Base(cmd)), ".exe") {
	case "npx", "pnpx", "bunx", "uvx", "pipx":
		return true
	}
	return false
}
