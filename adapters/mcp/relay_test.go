package mcpadapter

import (
	"context"
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

func TestRelayTarget(t *testing.T) {
	elicit := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	for _, tc := range []struct {
		name    string
		clients []*fakeClient // calls in flight; nil entry: a caller that cannot be asked
		inCall  bool          // the request arrives within the first call's context
		want    string        // error substring; "" relays to the first call's client
	}{
		{name: "no call in flight", want: "none does"},
		{name: "one call", clients: []*fakeClient{{caps: elicit}}},
		{name: "two calls, from outside", clients: []*fakeClient{{caps: elicit}, {caps: elicit}}, want: "2 of its tool calls and prompt gets are in flight"},
		{name: "two calls, within the first", clients: []*fakeClient{{caps: elicit}, {caps: elicit}}, inCall: true},
		{name: "no capability", clients: []*fakeClient{{caps: &mcp.ClientCapabilities{}}}, want: "did not declare the elicitation capability"},
		{name: "url without url capability", clients: []*fakeClient{{caps: elicit}}, want: "elicitation.url"},
		{name: "a caller that cannot be asked", clients: []*fakeClient{nil}, want: "cannot be asked while a tool or prompt runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &upstream{cfg: &serverConfig{name: "up"}}
			var first context.Context
			for i, c := range tc.clients {
				var ctx context.Context
				var forget func()
				if c == nil {
					ctx, forget = u.withRelay(context.Background(), nil, nil, nil, nil)
				} else {
					ctx, forget = u.withRelay(context.Background(), c, nil, nil, nil)
				}
				defer forget()
				if i == 0 {
					first = ctx
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
			res, err := u.onElicit(ctx, &mcp.ElicitRequest{Params: params})
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				for _, c := range tc.clients {
					if c != nil && len(c.asked) != 0 {
						t.Errorf("a client was asked: %v", c.asked)
					}
				}
				return
			}
			if err != nil || res.Action != "accept" {
				t.Fatalf("onElicit: %v %+v", err, res)
			}
			if len(tc.clients[0].asked) != 1 || tc.clients[0].asked[0] != mcp.InputRequest(params) {
				t.Errorf("first client asked %v", tc.clients[0].asked)
			}
			for _, c := range tc.clients[1:] {
				if len(c.asked) != 0 {
					t.Errorf("another client was asked: %v", c.asked)
				}
			}
		})
	}
}

// After the call ends, its entry is gone: a late request is refused.
func TestRelayForget(t *testing.T) {
	u := &upstream{cfg: &serverConfig{name: "up"}}
	c := &fakeClient{caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}
	_, forget := u.withRelay(context.Background(), c, nil, nil, nil)
	forget()
	if _, err := u.onElicit(context.Background(), &mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "late"}}); err == nil || len(c.asked) != 0 {
		t.Fatalf("a request after the call: %v, asked %v", err, c.asked)
	}
}

// A call on a session of its own (held for a 2026-07-28 client) gets the
// requests that come on that session, and is not counted among the calls
// a request on the shared session may belong to.
func TestRelayOwnSession(t *testing.T) {
	u := &upstream{cfg: &serverConfig{name: "up"}}
	elicit := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	own := &mcp.ClientSession{}
	held := &heldCall{caps: elicit}
	_, forget := u.withRelay(context.Background(), nil, held, own, nil)
	defer forget()
	shared := &fakeClient{caps: elicit}
	_, forget = u.withRelay(context.Background(), shared, nil, nil, nil)
	defer forget()

	c, err := u.target(context.Background(), "elicitation/create", own)
	if err != nil || c.held != held {
		t.Errorf("a request on the call's own session went to %+v (%v)", c, err)
	}
	c, err = u.target(context.Background(), "elicitation/create", nil)
	if err != nil || c.client != shared {
		t.Errorf("a request on the shared session went to %+v (%v)", c, err)
	}
	// A pooled session between calls belongs to no call, not even the
	// one call on the shared session.
	c, err = u.target(context.Background(), "elicitation/create", &mcp.ClientSession{})
	if err == nil || !strings.Contains(err.Error(), "no tool call of it runs on the session") {
		t.Errorf("a request on an idle session went to %+v (%v)", c, err)
	}
}
