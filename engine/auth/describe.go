package auth

// Requirements is what a client must know of the auth block before it
// connects (the Server Card and server.json say it): how to send a
// credential and, with OAuth, where to get one. It holds no secret.
type Requirements struct {
	// Header is the extra header that carries an API key besides
	// Authorization: Bearer; "" for none.
	Header string
	// APIKeys is whether static API keys are accepted.
	APIKeys bool
	// Issuer is the OAuth authorization server; "" without oauth.
	Issuer string
	// Resource is the server's resource URI; MetadataURL its Protected
	// Resource Metadata (RFC 9728), "" without oauth.
	Resource, MetadataURL string
	// Scopes are required of every caller.
	Scopes []string
}

// Requirements describes c; the zero value for a nil c (auth off).
func (c *Config) Requirements() Requirements {
	if c == nil {
		return Requirements{}
	}
	r := Requirements{Header: c.header, APIKeys: c.hasKeys, Resource: c.resource, MetadataURL: c.prmURL, Scopes: c.scopes}
	if c.oauth != nil {
		r.Issuer = c.oauth.issuer
	}
	return r
}
