package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/engine/lifetime"
	"github.com/mcpd/mcpd/engine/outbound"
)

// maxAnswer bounds one answer of an authorization server or of an
// upstream's metadata; maxToken one token in it.
const (
	maxAnswer = 64 << 10
	maxToken  = 16 << 10
	maxShown  = 200
)

func newClient(rt http.RoundTripper, cfg Config) *http.Client {
	return outbound.Refusing(&http.Client{Transport: rt, Timeout: cfg.Timeout},
		fmt.Sprintf("the authorization server of upstream %q", cfg.Upstream),
		"set issuer to the final address of the authorization server")
}

// metadata is what discovery found: the resource indicator and the
// authorization server's endpoints.
type metadata struct {
	resource   string
	issuer     string
	authorize  string
	token      string
	register   string // "": no dynamic registration
	revoke     string // "": no revocation endpoint
	scopes     []string
	authBasic  bool // the token endpoint takes client_secret_basic
	authPost   bool // ... client_secret_post
	authNone   bool // ... public clients
	registered bool
}

// discover returns the flow's metadata, reading it again after
// discoveryTTL, and at most every discoveryRetry after a failure.
func (f *Flow) discover(ctx context.Context) (*metadata, error) {
	f.mu.Lock()
	meta, at, merr := f.meta, f.metaAt, f.metaErr
	f.mu.Unlock()
	switch {
	case meta != nil && time.Since(at) < discoveryTTL:
		return meta, nil
	case merr != nil && time.Since(at) < discoveryRetry:
		return nil, merr
	}
	ch := f.disco.DoChan("", func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*f.cfg.Timeout)
		defer cancel()
		m, err := f.discoverNow(dctx)
		f.mu.Lock()
		f.meta, f.metaAt, f.metaErr = m, time.Now(), err
		if err != nil && meta != nil {
			f.meta = meta // keep what worked; asked again after discoveryRetry
		}
		f.mu.Unlock()
		if err != nil && meta != nil {
			return meta, nil
		}
		return m, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*metadata), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *Flow) discoverNow(ctx context.Context) (*metadata, error) {
	m := &metadata{resource: f.cfg.Resource, issuer: f.cfg.Issuer}
	if m.issuer == "" {
		prm, err := f.protectedResource(ctx)
		if err != nil {
			return nil, fmt.Errorf("upstream %s: reading its protected-resource metadata (RFC 9728): %w", f.cfg.Upstream, err)
		}
		m.resource, m.issuer, m.scopes = prm.Resource, prm.AuthorizationServers[0], prm.ScopesSupported
	}
	if err := f.authServer(ctx, m); err != nil {
		return nil, fmt.Errorf("upstream %s: reading the metadata of its authorization server %s: %w", f.cfg.Upstream, shown(m.issuer), err)
	}
	return m, nil
}

type protectedResource struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

var resourceMetadataParam = regexp.MustCompile(`resource_metadata="([^"]{1,1000})"`)

// protectedResource reads the upstream's protected-resource metadata:
// where its 401 says (WWW-Authenticate resource_metadata), else at the
// well-known URLs for its endpoint's path and for its origin.
func (f *Flow) protectedResource(ctx context.Context) (*protectedResource, error) {
	endpoint, err := url.Parse(f.cfg.Resource)
	if err != nil {
		return nil, err
	}
	var candidates []string
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.cfg.Resource, nil)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if res, err := f.client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxAnswer))
		res.Body.Close()
		if res.StatusCode == http.StatusUnauthorized {
			for _, h := range res.Header.Values("WWW-Authenticate") {
				if m := resourceMetadataParam.FindStringSubmatch(h); m != nil {
					candidates = append(candidates, m[1])
				}
			}
		}
	}
	origin := outbound.Origin(endpoint)
	if p := strings.TrimSuffix(endpoint.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")
	var errs []string
	for _, c := range candidates {
		var prm protectedResource
		if err := f.getJSON(ctx, c, &prm); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			errs = append(errs, shown(c)+" names no authorization_servers")
			continue
		}
		if err := sameResource(prm.Resource, endpoint); err != nil {
			errs = append(errs, shown(c)+": "+err.Error())
			continue
		}
		if err := endpointOK(prm.AuthorizationServers[0]); err != nil {
			errs = append(errs, shown(c)+": authorization server "+err.Error())
			continue
		}
		return &prm, nil
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

// sameResource checks that the metadata is about the upstream: its
// resource is the endpoint, or a URL of the same origin whose path the
// endpoint's path begins with (a server's base URL).
func sameResource(resource string, endpoint *url.URL) error {
	r, err := url.Parse(resource)
	if err != nil || resource == "" {
		return errors.New("its resource is not a URL")
	}
	if !outbound.SameOrigin(r, endpoint) || !strings.HasPrefix(endpoint.Path, strings.TrimSuffix(r.Path, "/")) {
		return fmt.Errorf("its resource %s is not the upstream's endpoint %s", shown(resource), shown(endpoint.String()))
	}
	return nil
}

type asMetadata struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	RevocationEndpoint    string   `json:"revocation_endpoint"`
	ScopesSupported       []string `json:"scopes_supported"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
}

// authServer reads the authorization server's metadata at the RFC 8414
// and OpenID Connect well-known URLs, in the order the MCP authorization
// spec gives.
func (f *Flow) authServer(ctx context.Context, m *metadata) error {
	iss, err := url.Parse(m.issuer)
	if err != nil || iss.Host == "" {
		return errors.New("the issuer is not a URL")
	}
	origin, p := outbound.Origin(iss), strings.TrimSuffix(iss.EscapedPath(), "/")
	var candidates []string
	if p != "" {
		candidates = []string{origin + "/.well-known/oauth-authorization-server" + p, origin + "/.well-known/openid-configuration" + p, origin + p + "/.well-known/openid-configuration"}
	} else {
		candidates = []string{origin + "/.well-known/oauth-authorization-server", origin + "/.well-known/openid-configuration"}
	}
	var errs []string
	for _, c := range candidates {
		var md asMetadata
		if err := f.getJSON(ctx, c, &md); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if strings.TrimSuffix(md.Issuer, "/") != strings.TrimSuffix(m.issuer, "/") {
			errs = append(errs, fmt.Sprintf("%s: its issuer %s is not %s", shown(c), shown(md.Issuer), shown(m.issuer)))
			continue
		}
		if !contains(md.CodeChallengeMethods, "S256") {
			return fmt.Errorf("%s: the server does not declare PKCE with S256 (code_challenge_methods_supported); mcpd does not authorize without it", shown(c))
		}
		for name, e := range map[string]string{"authorization_endpoint": md.AuthorizationEndpoint, "token_endpoint": md.TokenEndpoint} {
			if err := endpointOK(e); err != nil {
				return fmt.Errorf("%s: %s %w", shown(c), name, err)
			}
		}
		for name, e := range map[string]*string{"registration_endpoint": &md.RegistrationEndpoint, "revocation_endpoint": &md.RevocationEndpoint} {
			if *e != "" && endpointOK(*e) != nil {
				f.svc.log.Warn("authorization server metadata: endpoint ignored", "upstream", f.cfg.Upstream, "endpoint", name, "url", shown(*e))
				*e = ""
			}
		}
		m.authorize, m.token, m.register, m.revoke = md.AuthorizationEndpoint, md.TokenEndpoint, md.RegistrationEndpoint, md.RevocationEndpoint
		if len(m.scopes) == 0 && f.cfg.Issuer == "" {
			m.scopes = md.ScopesSupported
		}
		methods := md.TokenAuthMethods
		if len(methods) == 0 {
			methods = []string{"client_secret_basic"} // RFC 8414's default
		}
		m.authBasic, m.authPost, m.authNone = contains(methods, "client_secret_basic"), contains(methods, "client_secret_post"), contains(methods, "none")
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// getJSON GETs a metadata document, bounded.
func (f *Flow) getJSON(ctx context.Context, u string, out any) error {
	if err := endpointOK(u); err != nil {
		return fmt.Errorf("%s %w", shown(u), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	res, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %s", shown(u), failure(err))
	}
	defer res.Body.Close()
	body, err := readBounded(res.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", shown(u), err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", shown(u), res.StatusCode)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s is not JSON metadata: %s", shown(u), clean(err.Error()))
	}
	return nil
}

func readBounded(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %s", failure(err))
	}
	if len(b) > maxAnswer {
		return nil, fmt.Errorf("the answer is over %d bytes", maxAnswer)
	}
	return b, nil
}

// CheckEndpoint refuses an authorization server's or metadata URL that
// is not https (http only on a loopback address, for a server on the same
// machine), for the config's issuer as for what a peer names.
func CheckEndpoint(raw string) error { return endpointOK(raw) }

// endpointOK refuses an endpoint a peer named that is not https (http
// only on a loopback address, for a server on the same machine).
func endpointOK(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "" || err != nil || u.Host == "":
		return errors.New("is not an absolute URL")
	case u.User != nil:
		return errors.New("carries credentials")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%s is not https (http is allowed on loopback only)", shown(raw))
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// registration is a client of the authorization server: configured, or
// registered by mcpd (RFC 7591), kept in the store for every replica.
type registration struct {
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	Redirect     string    `json:"redirect"`
	Issuer       string    `json:"issuer"`
	Expires      time.Time `json:"expires,omitempty"`
}

// client returns the client to authorize with for redirect.
func (f *Flow) clientFor(ctx context.Context, m *metadata, redirect string) (*registration, error) {
	if f.cfg.ClientID != "" {
		return &registration{ClientID: f.cfg.ClientID, ClientSecret: f.cfg.ClientSecret, Redirect: redirect, Issuer: m.issuer}, nil
	}
	f.mu.Lock()
	reg := f.reg
	f.mu.Unlock()
	if reg != nil && reg.Redirect == redirect && reg.Issuer == m.issuer && (reg.Expires.IsZero() || time.Now().Before(reg.Expires)) {
		return reg, nil
	}
	v, err := f.vault()
	if err != nil {
		return nil, err
	}
	key := clientKey(f.cfg.Upstream, m.issuer, redirect)
	var stored registration
	switch err := v.Get(ctx, key, &stored); {
	case err == nil && stored.Redirect == redirect && stored.Issuer == m.issuer:
		f.mu.Lock()
		f.reg = &stored
		f.mu.Unlock()
		return &stored, nil
	case err != nil && !errors.Is(err, grants.ErrNotFound):
		f.svc.log.Warn("a stored client registration does not open; registering again", "upstream", f.cfg.Upstream, "err", err.Error())
	}
	if m.register == "" {
		return nil, fmt.Errorf("upstream %s: its authorization server offers no dynamic client registration; register mcpd there (redirect URI %s) and set client_id (and client_secret) in the identity block", f.cfg.Upstream, redirect)
	}
	reg, err = f.registerClient(ctx, m, redirect)
	if err != nil {
		return nil, err
	}
	ttl := defaultGrantTTL
	if !reg.Expires.IsZero() {
		ttl = time.Until(reg.Expires)
	}
	if err := v.Put(ctx, key, reg, ttl); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.reg = reg
	f.mu.Unlock()
	return reg, nil
}

func (f *Flow) registerClient(ctx context.Context, m *metadata, redirect string) (*registration, error) {
	method := "none"
	if !m.authNone && (m.authBasic || m.authPost) {
		method = "client_secret_basic"
		if !m.authBasic {
			method = "client_secret_post"
		}
	}
	body, _ := json.Marshal(map[string]any{
		"client_name": "mcpd", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": method,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.register, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: registering mcpd at its authorization server: %s", f.cfg.Upstream, failure(err))
	}
	defer res.Body.Close()
	b, err := readBounded(res.Body)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: registering mcpd: %w", f.cfg.Upstream, err)
	}
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("upstream %s: its authorization server refused to register mcpd: %s", f.cfg.Upstream, oauthErrorText(res.StatusCode, b))
	}
	var r struct {
		ClientID  string  `json:"client_id"`
		Secret    string  `json:"client_secret"`
		ExpiresAt float64 `json:"client_secret_expires_at"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ClientID == "" || len(r.ClientID) > maxToken || len(r.Secret) > maxToken {
		return nil, fmt.Errorf("upstream %s: the registration answer has no usable client_id", f.cfg.Upstream)
	}
	reg := &registration{ClientID: r.ClientID, ClientSecret: r.Secret, Redirect: redirect, Issuer: m.issuer}
	if r.ExpiresAt > 0 {
		if d, ok := lifetime.Until(time.Now(), r.ExpiresAt); ok {
			reg.Expires = time.Now().Add(d)
		}
	}
	return reg, nil
}

// oauthErrorText is what an OAuth error answer says (RFC 6749 §5.2),
// shortened and without control characters: the server's text is
// untrusted.
func oauthErrorText(status int, body []byte) string {
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return fmt.Sprintf("status %d", status)
	}
	s := clean(e.Error)
	if e.Description != "" {
		s += " (" + clean(e.Description) + ")"
	}
	return s
}

// clean shortens a peer's text and drops its control characters.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	if len(s) > maxShown {
		s = strings.ToValidUTF8(s[:maxShown], "") + "..."
	}
	return s
}

// shown is a URL as an error shows it (outbound.Shown).
func shown(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return clean(raw)
	}
	return outbound.Shown(u)
}

// failure is a transport error without the URL's query (which may carry
// a code or a token).
func failure(err error) string {
	var rerr *outbound.RedirectError
	if errors.As(err, &rerr) {
		return rerr.Error()
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return clean(uerr.Err.Error())
	}
	return clean(err.Error())
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
