package mcpadapter

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeClient stands for the engine's ClientAsker (the real one is tested
// end to end in cmd/mcpd's gateway relay tests); it records what it was
// asked.
type fakeClient struct {
	caps  *mcp.ClientCapabilities
	asked []mcp.InputRequest
}

func (f *fakeClient) Capabilities() *mcp.ClientCapabilities { return f.caps }

func (f *fakeClient) Ask(_ context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	f.asked = append(f.asked, req)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

// testUpstream is an upstream to try the relay on, not connected.
func testUpstream(name string) *upstream {
	u := &upstream{cfg: &serverConfig{name: name}, log: slog.New(slog.DiscardHandler)}
	u.gate = &admitter{name: name, log: u.log}
	u.relay = newRelays(name, u.log, u.redact, u.gate.checkForm)
	u.conn = newConnection(u.cfg, u.log, context.Background())
	u.catalog = &catalog{cfg: u.cfg, log: u.log, gate: u.gate, session: u.conn.current}
	return u
}

func TestRelayTarget(t *testing.T) {
	elicit := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	type call struct {
		owner  string
		client *fakeClient // nil: a caller that cannot be asked
		ended  bool        // it ended before the request came
	}
	for _, tc := range []struct {
		name    string
		calls   []call
		inCall  bool   // the request arrives within the first call's context
		want    string // error substring; "" relays to the first call's client
		dropped int64  // counted as unattributed
	}{
		{name: "no call in flight", want: "none of its tool calls or prompt gets is in flight", dropped: 1},
		{name: "one call", calls: []call{{client: &fakeClient{caps: elicit}}}},
		{name: "two calls, from outside", calls: []call{{client: &fakeClient{caps: elicit}}, {client: &fakeClient{caps: elicit}}}, want: "2 of its tool calls and prompt gets are in flight", dropped: 1},
		{name: "two calls, within the first", calls: []call{{client: &fakeClient{caps: elicit}}, {client: &fakeClient{caps: elicit}}}, inCall: true},
		{name: "no capability", calls: []call{{client: &fakeClient{caps: &mcp.ClientCapabilities{}}}}, want: "did not declare the elicitation capability"},
		{name: "url without url capability", calls: []call{{client: &fakeClient{caps: elicit}}}, want: "elicitation.url"},
		{name: "a caller that cannot be asked", calls: []call{{}}, want: "cannot be asked while a tool or prompt runs"},
		// A request that comes after its call ended, while another
		// caller's call is in flight, may be the ended call's.
		{name: "another caller's call ended", calls: []call{{owner: "bob", client: &fakeClient{caps: elicit}}, {owner: "alice", ended: true}},
			want: "has served the calls of more than one caller", dropped: 1},
		{name: "another caller's call ended, within the call", calls: []call{{owner: "bob", client: &fakeClient{caps: elicit}}, {owner: "alice", ended: true}}, inCall: true},
		{name: "the same caller's call ended", calls: []call{{owner: "bob", client: &fakeClient{caps: elicit}}, {owner: "bob", ended: true}}},
		{name: "two callers in flight", calls: []call{{owner: "bob", client: &fakeClient{caps: elicit}}, {owner: "alice", client: &fakeClient{caps: elicit}}},
			want: "has served the calls of more than one caller", dropped: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := testUpstream("up")
			var first context.Context
			// The ended calls first: they ran before.
			for _, ended := range []bool{true, false} {
				for i, c := range tc.calls {
					if c.ended != ended {
						continue
					}
					rc := &relayCall{owner: c.owner}
					if c.client != nil {
						rc.client = c.client
					}
					ctx, forget := u.relay.withRelay(context.Background(), rc)
					if ended {
						forget()
					} else {
						defer forget()
					}
					if i == 0 {
						first = ctx
					}
				}
			}
			ctx := context.Background()
			if tc.inCall {
				ctx = first
			}
			params := &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}}
			if strings.Contains(tc.name, "url") {
				params = &mcp.ElicitParams{Mode: "url", Message: "open", URL: "https://example.com/x", ElicitationID: "1"}
			}
			res, err := u.relay.onElicit(ctx, &mcp.ElicitRequest{Params: params})
			if got := u.ServiceStatus().UnattributedRequests; got != tc.dropped {
				t.Errorf("dropped %d, want %d", got, tc.dropped)
			}
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				for _, c := range tc.calls {
					if c.client != nil && len(c.client.asked) != 0 {
						t.Errorf("a client was asked: %v", c.client.asked)
					}
				}
				return
			}
			if err != nil || res.Action != "accept" {
				t.Fatalf("onElicit: %v %+v", err, res)
			}
			if asked := tc.calls[0].client.asked; len(asked) != 1 || asked[0] != mcp.InputRequest(params) {
				t.Errorf("first client asked %v", asked)
			}
			for _, c := range tc.calls[1:] {
				if c.client != nil && len(c.client.asked) != 0 {
					t.Errorf("another client was asked: %v", c.client.asked)
				}
			}
		})
	}
}

// After the call ends, its entry is gone: a late request is refused.
func TestRelayForget(t *testing.T) {
	u := testUpstream("up")
	c := &fakeClient{caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}
	_, forget := u.relay.withRelay(context.Background(), &relayCall{client: c})
	forget()
	if _, err := u.relay.onElicit(context.Background(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "late"}}); err == nil || len(c.asked) != 0 {
		t.Fatalf("a request after the call: %v, asked %v", err, c.asked)
	}
}

// A call on a session of its own (held for a 2026-07-28 client) gets the
// requests that come on that session, and is not counted among the calls
// a request on the shared session may belong to.
func TestRelayOwnSession(t *testing.T) {
	u := testUpstream("up")
	elicit := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	own := &mcp.ClientSession{}
	held := &heldCall{caps: elicit}
	_, forget := u.relay.withRelay(context.Background(), &relayCall{held: held, session: own, own: true})
	defer forget()
	shared := &fakeClient{caps: elicit}
	_, forget = u.relay.withRelay(context.Background(), &relayCall{client: shared})
	defer forget()

	c, err := u.relay.target(context.Background(), "elicitation/create", own)
	if err != nil || c.held != held {
		t.Errorf("a request on the call's own session went to %+v (%v)", c, err)
	}
	c, err = u.relay.target(context.Background(), "elicitation/create", nil)
	if err != nil || c.client != shared {
		t.Errorf("a request on the shared session went to %+v (%v)", c, err)
	}
	// A pooled session between calls belongs to no call, not even the
	// one call on the shared session.
	c, err = u.relay.target(context.Background(), "elicitation/create", &mcp.ClientSession{})
	if err == nil || !strings.Contains(err.Error(), "none of its tool calls or prompt gets is in flight on the session") {
		t.Errorf("a request on an idle session went to %+v (%v)", c, err)
	}
}
