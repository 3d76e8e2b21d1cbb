package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/lifetime"
	"github.com/mcpd/mcpd/engine/outbound"
	"github.com/mcpd/mcpd/engine/principal"
)

// introspector asks the authorization server about opaque tokens (RFC
// 7662), authenticating as a client with HTTP Basic. Every request that
// carries an opaque token costs one introspection call: there is no cache,
// so a revoked token stops working at once.
type introspector struct {
	url                    string
	clientID, clientSecret string
	client                 *http.Client
}

func (e *evaluator) introspection(o *config.OAuth, opts Options) *introspector {
	// A redirect would take the client's credentials (and the caller's
	// token, in a 307's body) elsewhere, and mcpd would trust the answer
	// from there: never followed.
	in := &introspector{client: outbound.Refusing(opts.HTTPClient, "introspection_url", "set introspection_url to the final address")}
	ok := true
	if s, good := e.str(o.IntrospectionURL); good {
		if err := checkURL(s); err != nil {
			e.errorf(o.IntrospectionURL.Expr.Range(), "Invalid introspection_url", "introspection_url: %s.", err)
			ok = false
		}
		in.url = s
	} else {
		ok = false
	}
	in.clientID, _ = e.str(o.ClientID)
	in.clientSecret, _ = e.str(o.ClientSecret)
	if in.clientID == "" || in.clientSecret == "" {
		e.errorf(o.IntrospectionURL.NameRange, "Missing client credentials", "introspection_url needs client_id and client_secret (e.g. client_secret = env(\"MCPD_INTROSPECTION_SECRET\")): the authorization server only answers known clients.")
		ok = false
	}
	if !ok {
		return nil
	}
	return in
}

// introspection is the part of an RFC 7662 answer mcpd reads.
type introspection struct {
	Active   bool            `json:"active"`
	Scope    string          `json:"scope"`
	Sub      string          `json:"sub"`
	Username string          `json:"username"`
	Exp      int64           `json:"exp"`
	Nbf      int64           `json:"nbf"`
	Iss      string          `json:"iss"`
	Aud      json.RawMessage `json:"aud"`
}

func (in *introspector) verify(ctx context.Context, token string, v *oauthVerifier) (*principal.Principal, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.url, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: %v", errUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.clientID), url.QueryEscape(in.clientSecret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: introspecting: %v", errUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, fmt.Errorf("%w: %s answered %s", errUnavailable, in.url, resp.Status)
	}
	var r introspection
	var all map[string]any
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: %s: %v", errUnavailable, in.url, err)
	}
	_ = json.Unmarshal(body, &all)
	if !r.Active {
		return nil, time.Time{}, errors.New("the token is not active")
	}
	now := v.now()
	var exp time.Time
	if r.Exp != 0 {
		// The AS's exp, bounded like every lifetime from a peer: at most
		// lifetime.Max ahead (time.Unix of a huge exp overflows into the
		// past), so that what mcpd keeps for the token's life ends.
		exp = time.Unix(min(r.Exp, now.Unix()+int64(lifetime.Max/time.Second)), 0)
		if now.After(exp.Add(v.leeway)) {
			return nil, time.Time{}, errors.New("the token is expired")
		}
	}
	if r.Nbf != 0 && now.Add(v.leeway).Unix() < r.Nbf { // in seconds: time.Unix of a huge nbf overflows into the past
		return nil, time.Time{}, errors.New("the token is not valid yet")
	}
	if r.Iss != "" && r.Iss != v.issuer {
		return nil, time.Time{}, fmt.Errorf("the token was issued by %q", r.Iss)
	}
	if len(r.Aud) > 0 {
		var one string
		var many []string
		if json.Unmarshal(r.Aud, &one) == nil {
			many = []string{one}
		} else if json.Unmarshal(r.Aud, &many) != nil {
			return nil, time.Time{}, errors.New("the token's aud is malformed")
		}
		if !slices.Contains(many, v.audience) {
			return nil, time.Time{}, errors.New("the token is not for this server (aud)")
		}
	}
	name := r.Sub
	if name == "" {
		name = r.Username
	}
	if name == "" {
		return nil, time.Time{}, errors.New("the introspected token has no sub")
	}
	return &principal.Principal{Name: name, Method: "oauth", Claims: all, Scopes: scopesOf(all[v.scopesClaim])}, exp, nil
}
