// Package discovery describes a loaded config to clients before they
// connect: the Server Card of each HTTP endpoint (SEP-2127, the MCP Server
// Card extension, served at <endpoint>/server-card) and the MCP Registry's
// server.json (`mcpd server-json`). Both are built from one snapshot, so
// they say what the server serves now, and a reload changes them.
//
// A Server Card describes identity and connection only: it lists no tools,
// resources or prompts (those stay subject to runtime listing), and it is
// advisory: clients check it against the live connection.
package discovery

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/auth"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/snapshot"
)

const (
	// CardSchema is the $schema of a Server Card (the experimental
	// extension's v1 family).
	CardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
	// CardMediaType is the Server Card's media type.
	CardMediaType = "application/mcp-server-card+json"
	// CardSuffix is appended to an endpoint's path for its card.
	CardSuffix = "/server-card"
	// ServerJSONSchema is the $schema of the MCP Registry's server.json
	// (its latest published version).
	ServerJSONSchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
	// MetaAuth is the _meta key of the card's auth details (the card
	// format has no field for them).
	MetaAuth = "mcpd/auth"
	// MetaToolset is the _meta key naming the toolset a card describes.
	MetaToolset = "mcpd/toolset"
)

// Card is a Server Card.
type Card struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Version     string         `json:"version"`
	Description string         `json:"description"`
	Title       string         `json:"title,omitempty"`
	WebsiteURL  string         `json:"websiteUrl,omitempty"`
	Repository  *Repository    `json:"repository,omitempty"`
	Icons       []mcp.Icon     `json:"icons,omitempty"`
	Remotes     []Remote       `json:"remotes,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// ServerJSON is the MCP Registry's server.json of a remote server.
type ServerJSON struct {
	Schema      string      `json:"$schema"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	Title       string      `json:"title,omitempty"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Icons       []mcp.Icon  `json:"icons,omitempty"`
	Remotes     []Remote    `json:"remotes"`
}

// Remote is one endpoint a client connects to.
type Remote struct {
	Type    string   `json:"type"`
	URL     string   `json:"url"`
	Headers []Header `json:"headers,omitempty"`
	// SupportedProtocolVersions is the card's only (server.json has none).
	SupportedProtocolVersions []string `json:"supportedProtocolVersions,omitempty"`
}

// Header is an HTTP header a client sends (the schemas' KeyValueInput).
type Header struct {
	Name        string           `json:"name"`
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	IsSecret    bool             `json:"isSecret,omitempty"`
	Value       string           `json:"value,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// Input is a value the user supplies.
type Input struct {
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired,omitempty"`
	IsSecret    bool   `json:"isSecret,omitempty"`
}

// Repository is where the server's source is.
type Repository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// CardFor returns the Server Card of the endpoint of toolset ("" for
// /mcp) as served at endpointURL, from snap. ok is false when snap has no
// such toolset.
func CardFor(snap *snapshot.Snapshot, toolset, endpointURL string) (card *Card, ok bool) {
	info := snap.Server
	c := &Card{
		Schema:      CardSchema,
		Name:        CardName(info.Name, hostOf(endpointURL)),
		Version:     info.Version,
		Description: describe(info),
		Title:       clip(info.Title),
		WebsiteURL:  info.WebsiteURL,
		Icons:       info.Icons,
	}
	remote := Remote{Type: "streamable-http", URL: endpointURL, SupportedProtocolVersions: mcp.SupportedProtocolVersions()}
	req := snap.Auth.Requirements()
	remote.Headers = authHeaders(snap.Auth != nil, req)
	meta := map[string]any{}
	if snap.Auth != nil {
		meta[MetaAuth] = authMeta(req, nil)
	}
	if toolset != "" {
		ts, found := snap.Toolset(toolset)
		if !found {
			return nil, false
		}
		c.Name = toolsetName(c.Name, toolset)
		if ts.Description != "" {
			c.Description = clip(ts.Description)
		}
		if c.Title != "" {
			c.Title = clip(c.Title + " (" + toolset + ")")
		}
		meta[MetaToolset] = toolset
		if snap.Auth != nil {
			meta[MetaAuth] = authMeta(req, ts.Scopes)
		}
	}
	c.Remotes = []Remote{remote}
	if len(meta) > 0 {
		c.Meta = meta
	}
	return c, true
}

// ServerJSONOptions are what server.json needs that a config does not say.
type ServerJSONOptions struct {
	// Name overrides the server's registry name (server.name).
	Name string
	// URLs are the public streamable-HTTP URLs of the server; at least one.
	URLs []string
	// Repository is the URL of the server's source, if public.
	Repository string
	// DefaultVersion is the version a server block without one gets
	// (mcpd's own): server.json points it out.
	DefaultVersion string
}

// ServerJSONFor returns the server.json of snap's server. notes are what
// was left out and why (icons the registry does not take); err says what
// is missing or invalid, naming the flag or attribute that fixes it.
func ServerJSONFor(snap *snapshot.Snapshot, opts ServerJSONOptions) (sj *ServerJSON, notes []string, err error) {
	info := snap.Server
	if len(opts.URLs) == 0 {
		return nil, nil, fmt.Errorf("give the server's public URL with --url (e.g. --url https://mcp.example.com/mcp): the registry lists remote servers by URL")
	}
	name := opts.Name
	if name == "" {
		name = info.Name
	}
	if !config.RegistryName(name) {
		host := hostOf(opts.URLs[0])
		return nil, nil, fmt.Errorf("%q is not a registry name, which is a reverse-DNS namespace you can prove you own, one slash, and a name (such as %q, or io.github.USER/%s): set server.name or give --name",
			name, CardName(name, host), sanitize(baseName(name)))
	}
	sj = &ServerJSON{
		Schema:      ServerJSONSchema,
		Name:        name,
		Description: describe(info),
		Version:     info.Version,
		Title:       clip(info.Title),
		WebsiteURL:  info.WebsiteURL,
	}
	if opts.DefaultVersion != "" && info.Version == opts.DefaultVersion {
		notes = append(notes, fmt.Sprintf("server.version is not set: the version is mcpd's own, %q; give the server's version, which the registry keeps one entry per", info.Version))
	}
	if info.Description == "" {
		notes = append(notes, fmt.Sprintf("server.description is not set: the description is %q; say in a sentence what the server does", sj.Description))
	}
	if opts.Repository != "" {
		sj.Repository = repository(opts.Repository)
		if sj.Repository == nil {
			return nil, nil, fmt.Errorf("--repository %q is not an https URL of a repository", opts.Repository)
		}
	}
	for _, ic := range info.Icons {
		switch {
		case !strings.HasPrefix(ic.Source, "https:"):
			notes = append(notes, "an icon given as a data: URI is left out: the registry takes https URLs only")
		case len(ic.Source) > 255:
			notes = append(notes, fmt.Sprintf("icon %s is left out: the registry takes URLs of at most 255 characters", ic.Source))
		default:
			sj.Icons = append(sj.Icons, ic)
		}
	}
	headers := authHeaders(snap.Auth != nil, snap.Auth.Requirements())
	for _, u := range opts.URLs {
		if !remoteURL.MatchString(u) {
			return nil, nil, fmt.Errorf("--url %q is not an http(s) URL", u)
		}
		if !strings.HasPrefix(u, "https://") {
			notes = append(notes, fmt.Sprintf("--url %s is not https: the official registry expects public https endpoints", u))
		}
		sj.Remotes = append(sj.Remotes, Remote{Type: "streamable-http", URL: u, Headers: headers})
	}
	return sj, notes, nil
}

var remoteURL = regexp.MustCompile(`^https?://[^\s]+$`)

// CardName is the card's name for a server named name reached at host:
// name itself when it is a registry name (server.name =
// "com.example/tickets"); otherwise the host's reverse DNS as namespace
// ("mcp.example.com" gives "com.example.mcp/tickets"), since the card
// needs one and the host is what the client already trusts.
func CardName(name, host string) string {
	if config.RegistryName(name) {
		return name
	}
	ns := "localhost"
	if host != "" {
		ns = host
		if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
			ns = strings.ReplaceAll(host, ":", "-")
			if ip.IsLoopback() {
				ns = "localhost"
			}
		} else if ip == nil {
			labels := strings.Split(host, ".")
			slices.Reverse(labels)
			ns = strings.Join(labels, ".")
		}
	}
	ns = strings.Trim(invalidNS.ReplaceAllString(ns, "-"), ".-")
	if ns == "" {
		ns = "localhost"
	}
	return ns + "/" + sanitize(baseName(name))
}

var (
	invalidNS   = regexp.MustCompile(`[^a-zA-Z0-9.-]+`)
	invalidName = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)
)

func baseName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func sanitize(name string) string {
	s := strings.Trim(invalidName.ReplaceAllString(name, "-"), "-")
	if s == "" {
		return "mcpd"
	}
	return s
}

// toolsetName is the card name of a toolset's endpoint: the server's, with
// the toolset's name after a hyphen.
func toolsetName(name, toolset string) string {
	return name + "-" + sanitize(toolset)
}

// describe is the server's description for a card: the one declared, or
// else its title, or else its name (the schemas require one, of 1 to 100
// characters).
func describe(info snapshot.ServerInfo) string {
	for _, d := range []string{info.Description, info.Title} {
		if d != "" {
			return clip(d)
		}
	}
	return clip("MCP server " + info.Name)
}

// clip shortens s to the schemas' 100 characters.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 100 {
		return s
	}
	r := []rune(s)
	return string(r[:99]) + "…"
}

// authHeaders are the headers a client must send when auth is on: a bearer
// token (an OAuth access token or an API key) in Authorization.
func authHeaders(on bool, req auth.Requirements) []Header {
	if !on {
		return nil
	}
	desc := "Bearer token"
	switch {
	case req.Issuer != "" && req.APIKeys:
		desc = "An OAuth access token from " + req.Issuer + " or an API key, as a bearer token"
	case req.Issuer != "":
		desc = "An OAuth access token from " + req.Issuer + " (discovery: " + req.MetadataURL + ")"
	case req.APIKeys:
		desc = "An API key issued by the server's operator, as a bearer token"
	}
	if req.Header != "" {
		desc += "; an API key may instead be sent in " + req.Header
	}
	return []Header{{
		Name: "Authorization", Description: desc, IsRequired: true, IsSecret: true,
		Value:     "Bearer {token}",
		Variables: map[string]Input{"token": {Description: "The access token or API key", IsRequired: true, IsSecret: true}},
	}}
}

// authMeta is the card's _meta auth entry: what the header alone cannot
// say (OAuth discovery, scopes). toolsetScopes are required on top of the
// server's.
func authMeta(req auth.Requirements, toolsetScopes []string) map[string]any {
	m := map[string]any{"required": true}
	var methods []string
	if req.Issuer != "" {
		methods = append(methods, "oauth2")
		m["authorizationServers"] = []string{req.Issuer}
		if req.MetadataURL != "" {
			m["protectedResourceMetadata"] = req.MetadataURL
		}
		if req.Resource != "" {
			m["resource"] = req.Resource
		}
	}
	if req.APIKeys {
		methods = append(methods, "api_key")
	}
	m["methods"] = methods
	if req.Header != "" {
		m["apiKeyHeader"] = req.Header
	}
	scopes := append(slices.Clone(req.Scopes), toolsetScopes...)
	if len(scopes) > 0 {
		m["scopes"] = scopes
	}
	return m
}

func hostOf(rawURL string) string {
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return ""
	}
	hostport, _, _ := strings.Cut(rest, "/")
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

// repository describes a repository URL; nil when it is not https.
func repository(u string) *Repository {
	host := hostOf(u)
	if !strings.HasPrefix(u, "https://") || host == "" {
		return nil
	}
	source := strings.TrimPrefix(host, "www.")
	if i := strings.IndexByte(source, '.'); i > 0 {
		source = source[:i] // github.com → github, gitlab.com → gitlab
	}
	return &Repository{URL: u, Source: source}
}
