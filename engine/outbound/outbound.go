// Package outbound is mcpd's policy for the HTTP requests it sends to
// other servers: MCP upstreams, HTTP backends, token endpoints, JWKS and
// introspection endpoints, OpenAPI documents. One rule, in one place:
// credentials configured for a server are sent to that server's origin
// (scheme, host and port) and nowhere else, and what another origin
// answers is never taken for that server's answer.
//
// A redirect is where both would break. net/http follows redirects by
// default and copies the request's headers to the next hop (it drops
// Authorization and Cookie only when the host name changes, so neither a
// custom header such as X-Api-Key nor a different port on the same host
// is protected), and a RoundTripper that adds headers adds them to every
// hop. So the clients built here either never follow a redirect
// (RefuseRedirects), or follow it only within the origin of the first
// request (SameOriginRedirects); either way a refused redirect is an
// error that names what was being reached and where the redirect pointed,
// so that the operator can set the final address in the config.
package outbound

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// RedirectError is a redirect mcpd refused to follow.
type RedirectError struct {
	// Who is what was being reached, as the config names it
	// (`upstream "x"`, `http_backend "api"`, `the JWKS endpoint`).
	Who string
	// Location is where the redirect pointed, without user info and
	// query string (either may hold a secret).
	Location string
	Status   int    // the redirect's status code (0: unknown)
	Reason   string // why it is not followed, and what to do
}

func (e *RedirectError) Error() string {
	status := ""
	if e.Status != 0 {
		status = fmt.Sprintf(" (status %d)", e.Status)
	}
	return fmt.Sprintf("%s: redirected to %s%s; %s", e.Who, e.Location, status, e.Reason)
}

// CheckRedirect is the type of http.Client.CheckRedirect.
type CheckRedirect = func(req *http.Request, via []*http.Request) error

// RefuseRedirects is the policy of a client that never follows a
// redirect: the request fails with a *RedirectError that names who and
// the Location, and nothing is sent to it. hint says what to do instead;
// "" is "set url to the final address".
func RefuseRedirects(who, hint string) CheckRedirect {
	if hint == "" {
		hint = "set url to the final address"
	}
	return func(req *http.Request, _ []*http.Request) error {
		return &RedirectError{Who: who, Location: Shown(req.URL), Status: status(req),
			Reason: "mcpd does not follow redirects: " + hint}
	}
}

// SameOriginRedirects is the policy of a client that follows at most max
// redirects, and only to the origin of the first request: scheme, host
// and port (so neither another host nor a downgrade from https to http).
// net/http returns the error in a *url.Error that shows the Location in
// full: callers show the *RedirectError (errors.As).
func SameOriginRedirects(who string, max int) CheckRedirect {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if !SameOrigin(req.URL, first) {
			return &RedirectError{Who: who, Location: Shown(req.URL), Status: status(req),
				Reason: fmt.Sprintf("mcpd follows redirects within %s only", Origin(first))}
		}
		if len(via) >= max {
			return &RedirectError{Who: who, Location: Shown(req.URL), Status: status(req),
				Reason: fmt.Sprintf("stopped after %d redirects", max)}
		}
		return nil
	}
}

// Client is an http.Client over rt (nil: http.DefaultTransport) that never
// follows a redirect, for a server whose address is configured:
// Refusing(&http.Client{Transport: rt}, who, "").
func Client(who string, rt http.RoundTripper) *http.Client {
	return Refusing(&http.Client{Transport: rt}, who, "")
}

// Refusing is a copy of c (nil: a new client) that never follows a
// redirect: a redirect's answer fails the request with a *RedirectError
// that names who and the Location, and hint says what to do ("": "set
// url to the final address"). It is refused as the answer arrives, before
// net/http's redirect logic (CheckRedirect is a second guard), so that
// the error net/http returns shows the request's own URL and not the
// Location's query string.
func Refusing(c *http.Client, who, hint string) *http.Client {
	if hint == "" {
		hint = "set url to the final address"
	}
	var cp http.Client
	if c != nil {
		cp = *c
	}
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = &refusing{who: who, hint: hint, base: base}
	cp.CheckRedirect = RefuseRedirects(who, hint)
	return &cp
}

// refusing turns a redirect's answer into a *RedirectError.
type refusing struct {
	who, hint string
	base      http.RoundTripper
}

func (t *refusing) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || !isRedirect(resp.StatusCode) {
		return resp, err
	}
	loc := resp.Header.Get("Location")
	resp.Body.Close()
	shown := "no Location"
	if loc != "" {
		shown = "a Location that is not a URL"
		if u, perr := r.URL.Parse(loc); perr == nil {
			shown = Shown(u)
		}
	}
	return nil, &RedirectError{Who: t.who, Location: shown, Status: resp.StatusCode,
		Reason: "mcpd does not follow redirects: " + t.hint}
}

// CloseIdleConnections closes the idle connections of the transport
// underneath (http.Client.CloseIdleConnections asks for it).
func (t *refusing) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// isRedirect reports whether net/http's client would follow an answer
// of status code.
func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// status is the code of the redirect that made req (net/http sets
// req.Response on the request it would send next).
func status(req *http.Request) int {
	if req.Response != nil {
		return req.Response.StatusCode
	}
	return 0
}

// Origin is scheme://host[:port] of u, lower-case, with the scheme's
// default port left out, as a person would write it.
func Origin(u *url.URL) string {
	scheme, host, port := originParts(u)
	if port != defaultPort(scheme) {
		host += ":" + port
	}
	return scheme + "://" + host
}

// SameOrigin reports whether a and b have the same scheme, host and port
// (https://h and https://H:443 are the same).
func SameOrigin(a, b *url.URL) bool {
	as, ah, ap := originParts(a)
	bs, bh, bp := originParts(b)
	return as == bs && ah == bh && ap == bp
}

func originParts(u *url.URL) (scheme, host, port string) {
	scheme = strings.ToLower(u.Scheme)
	port = u.Port()
	if port == "" {
		port = defaultPort(scheme)
	}
	return scheme, strings.ToLower(u.Hostname()), port
}

func defaultPort(scheme string) string {
	switch scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	}
	return ""
}

// Shown is u as an error may show it: without user info, query string
// and fragment, which may carry secrets, and at most maxShown bytes (a
// Location is the other server's text).
func Shown(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	s := c.String()
	if len(s) > maxShown {
		s = strings.ToValidUTF8(s[:maxShown], "") + "..."
	}
	return s
}

// maxShown is the most of a URL an error shows.
const maxShown = 256
