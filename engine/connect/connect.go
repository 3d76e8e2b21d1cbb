// Package connect is mcpd's per-user connect flow: for an upstream that
// authorizes each user with OAuth 2.1 (the MCP authorization spec), it
// finds the upstream's authorization server (RFC 9728 protected-resource
// metadata, then RFC 8414 / OpenID metadata), registers mcpd as a client
// (RFC 7591) unless one is configured, sends the user to authorize with
// the authorization-code grant, PKCE (S256) and a resource indicator
// (RFC 8707), receives the callback, and keeps the resulting grant per
// principal (engine/grants: sealed, in Redis when the config has a state
// block, in memory otherwise). Calls then get the user's access token from
// Flow.Token, refreshed before it expires, once per principal and upstream
// however many calls wait (single-flight); the user or an admin revokes a
// grant with Flow.Revoke or Service.Revoke.
//
// What an authorization server sends is untrusted: answers are bounded in
// size, lifetimes clamped (engine/lifetime), redirects never followed
// (engine/outbound), and its error text is shortened and stripped of
// control characters before anyone sees it. Tokens never appear in an
// error, a log line or a page.
package connect

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/sharedstate"
)

// CallbackPath is where mcpd receives the authorization server's
// redirect, on its HTTP listener.
const CallbackPath = "/oauth/callback"

// Bounds of the flow.
const (
	// pendingTTL is how long a user has to complete an authorization.
	pendingTTL = 10 * time.Minute
	// defaultGrantTTL is how long a grant with a refresh token is kept
	// unused; a grant without one lives as long as its access token.
	defaultGrantTTL = 30 * 24 * time.Hour
	maxMemoryValues = 10000
	maxListed       = 10000
	// discoveryTTL is how long discovered metadata is used; failures are
	// retried after discoveryRetry, so that a down server is not asked
	// once per call.
	discoveryTTL   = time.Hour
	discoveryRetry = 5 * time.Second
	defaultTimeout = 10 * time.Second
)

// Config is one upstream's connect settings (the mcp_server block's
// identity block with mode = "user_authorization").
type Config struct {
	Upstream string // the mcp_server block's name
	// Resource is the upstream's MCP endpoint; its protected-resource
	// metadata names the authorization server and the resource indicator.
	Resource string
	// Issuer, when set, is the authorization server, and the upstream's
	// metadata is not read (Resource is then the resource indicator).
	Issuer string
	// ClientID and ClientSecret are a client registered beforehand; with
	// no ClientID mcpd registers itself (RFC 7591).
	ClientID, ClientSecret string
	// Scopes are asked for; none: the metadata's scopes_supported, or none.
	Scopes []string
	// CallbackURL is where users' browsers reach mcpd's CallbackPath;
	// "": the service's (the listener's address).
	CallbackURL string
	// Key seals the grants (grants.KeySize bytes); nil: a random key,
	// refused when grants would be stored in Redis.
	Key      []byte
	Timeout  time.Duration // of one request to the authorization server
	GrantTTL time.Duration // how long an unused grant with a refresh token is kept
}

// Options configure a Service.
type Options struct {
	Logger *slog.Logger
	// Shared returns the shared store grants go to (Redis, when the
	// config has a state block); nil, or a nil result: this process's
	// memory.
	Shared func() grants.Backend
	// Transport carries the requests to authorization servers and to
	// upstreams' metadata (nil: a clone of http.DefaultTransport).
	Transport http.RoundTripper
}

// Service is the process's connect flows, one per upstream, and the
// callback every flow's users come back to.
type Service struct {
	log    *slog.Logger
	shared func() grants.Backend
	rt     http.RoundTripper
	mem    *grants.Memory

	mu sync.Mutex
	// flows are each upstream's open flows, the latest last: a reload
	// opens the new one before it closes the old.
	flows    map[string][]*Flow
	callback string                            // the listener's CallbackURL
	waiters  map[string]map[chan struct{}]bool // grant key -> calls waiting for it
}

// NewService returns a service with no flows.
func NewService(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Transport == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 8
		o.Transport = tr
	}
	return &Service{log: o.Logger, shared: o.Shared, rt: o.Transport, mem: grants.NewMemory(maxMemoryValues),
		flows: map[string][]*Flow{}, waiters: map[string]map[chan struct{}]bool{}}
}

// SetListener tells the service where its HTTP listener is reached
// (scheme://host:port, no path): the default callback URL is there.
func (s *Service) SetListener(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callback = strings.TrimSuffix(base, "/") + CallbackPath
}

// SetShared sets where the shared store is read from (Options.Shared).
func (s *Service) SetShared(shared func() grants.Backend) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shared = shared
}

// SharedState is the grant backend of a shared state store: its Redis,
// under its key prefix; nil for no store.
func SharedState(st *sharedstate.Store) grants.Backend {
	if st == nil {
		return nil
	}
	return &grants.Redis{Client: st.Client(), Prefix: st.Key("grants")}
}

// backend is where values are stored now.
func (s *Service) backend() grants.Backend {
	s.mu.Lock()
	shared := s.shared
	s.mu.Unlock()
	if shared != nil {
		if b := shared(); b != nil {
			return b
		}
	}
	return s.mem
}

// Shared reports whether grants are stored where other replicas see
// them.
func (s *Service) Shared() bool { return s.backend().Shared() }

// Check reports an upstream whose grants would be stored in Redis without
// a key of its own: a random key would seal grants no other replica (nor
// this one after a restart) can open. serve refuses to start on it.
func (s *Service) Check() error {
	if !s.Shared() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, fs := range s.flows {
		if fs[len(fs)-1].cfg.Key == nil {
			return fmt.Errorf("mcp_server %q: grants are stored in the shared state (Redis) and its identity block has no grant_key: set grant_key = env(\"MCPD_GRANT_KEY\") (32 random bytes, hex or base64; the same on every replica)", name)
		}
	}
	return nil
}

// Register adds the flow of cfg, replacing the upstream's earlier one (a
// reload); Flow.Close removes it.
func (s *Service) Register(cfg Config) (*Flow, error) {
	f, err := newFlow(s, cfg)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.flows[cfg.Upstream] = append(s.flows[cfg.Upstream], f)
	s.mu.Unlock()
	return f, nil
}

func (s *Service) flow(upstream string) *Flow {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fs := s.flows[upstream]; len(fs) > 0 {
		return fs[len(fs)-1]
	}
	return nil
}

func (s *Service) callbackURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callback
}

// Flow is one upstream's connect flow.
type Flow struct {
	svc    *Service
	cfg    Config
	sealer *grants.Sealer
	client *http.Client
	sf     singleflight.Group // refreshes, per principal
	disco  singleflight.Group

	mu      sync.Mutex
	meta    *metadata
	metaAt  time.Time
	metaErr error
	reg     *registration // the client mcpd registered, or the configured one
}

func newFlow(s *Service, cfg Config) (*Flow, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.GrantTTL <= 0 {
		cfg.GrantTTL = defaultGrantTTL
	}
	f := &Flow{svc: s, cfg: cfg}
	if cfg.Key != nil {
		sealer, err := grants.NewSealer(cfg.Key)
		if err != nil {
			return nil, err
		}
		f.sealer = sealer
	} else {
		f.sealer = grants.RandomSealer()
	}
	f.client = newClient(s.rt, cfg)
	return f, nil
}

// Close removes the flow from its service; the upstream's latest other
// open flow, if any, takes the callbacks. Grants stay.
func (f *Flow) Close() {
	f.svc.mu.Lock()
	defer f.svc.mu.Unlock()
	fs := f.svc.flows[f.cfg.Upstream]
	for i, g := range fs {
		if g == f {
			fs = append(fs[:i:i], fs[i+1:]...)
			break
		}
	}
	if len(fs) == 0 {
		delete(f.svc.flows, f.cfg.Upstream)
	} else {
		f.svc.flows[f.cfg.Upstream] = fs
	}
}

// Upstream is the name of the flow's mcp_server block.
func (f *Flow) Upstream() string { return f.cfg.Upstream }

func (f *Flow) vault() (grants.Vault, error) {
	b := f.svc.backend()
	if b.Shared() && f.cfg.Key == nil {
		return grants.Vault{}, fmt.Errorf("upstream %s: grants are stored in the shared state and the identity block has no grant_key", f.cfg.Upstream)
	}
	return grants.Vault{Backend: b, Sealer: f.sealer}, nil
}

// PrincipalKey names whose a grant is: the verified caller's method,
// issuer (for tokens) and name; "local" for a caller with no principal
// (stdio, or HTTP without auth: the one local user).
func PrincipalKey(p *principal.Principal) string {
	if p == nil {
		return "local"
	}
	iss, _ := p.Claims["iss"].(string)
	if p.Method == "oauth" && iss != "" {
		return p.Method + ":" + iss + ":" + p.Name
	}
	return p.Method + ":" + p.Name
}

// PrincipalKeyOf is PrincipalKey of ctx's principal.
func PrincipalKeyOf(ctx context.Context) string { return PrincipalKey(principal.FromContext(ctx)) }

// keys in the store. Parts are escaped so that a principal's colons never
// make two keys one.
func grantKey(upstream, principal string) string {
	return "grant:" + esc(upstream) + ":" + esc(principal)
}

func pendingKey(id string) string { return "pending:" + id }

func clientKey(upstream, issuer, redirect string) string {
	h := sha256.Sum256([]byte(issuer + "\x00" + redirect))
	return "client:" + esc(upstream) + ":" + base64.RawURLEncoding.EncodeToString(h[:12])
}

var escaper = strings.NewReplacer("%", "%25", ":", "%3A")

func esc(s string) string { return escaper.Replace(s) }

func unesc(s string) string {
	u, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}

// random returns n random bytes, base64url.
func random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// NeedAuthorization is the error of a call whose caller has not
// authorized mcpd at the upstream yet, or whose grant ended (revoked,
// refused, expired without a refresh token).
type NeedAuthorization struct {
	Upstream string
	Why      string // "" for no grant at all
}

func (e *NeedAuthorization) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("upstream %s needs your authorization again: %s", e.Upstream, e.Why)
	}
	return fmt.Sprintf("upstream %s needs your authorization first", e.Upstream)
}

// IsNeedAuthorization reports whether err is a *NeedAuthorization.
func IsNeedAuthorization(err error) bool {
	var na *NeedAuthorization
	return errors.As(err, &na)
}
