package snapshot

// RelaysOnly reports whether the only questions a call of the tool may
// put to its client are its handler's relayed ones
// (Traits.RelaysClientRequests; no ask block of its own). A relaying
// handler asks a client only what the client declared it can answer
// (adapter.ClientAsker), so such a call of a client that declared nothing
// asks nothing: the 2025-11-25 fast path serves it (engine/serve,
// fastrelay.go).
func (t *Tool) RelaysOnly() bool { return t.asks == nil && t.traits.RelaysClientRequests }
