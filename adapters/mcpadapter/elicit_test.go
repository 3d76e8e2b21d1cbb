package mcpadapter

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's form elicitation reaches the client as it is, whatever the
// SDK's own schema check thinks of it: here examples/conformance's SEP-1330
// titled multi-select, which the SDK's client refused (-32602) before the
// gateway could relay it. Other methods go on to the SDK.
func TestRelayElicitPassesSchemaThrough(t *testing.T) {
	var schema any
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{"titledMulti":{"type":"array","minItems":1,"items":{"type":"string","anyOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"}]}}}}`), &schema); err != nil {
		t.Fatal(err)
	}
	u := testUpstream("up")
	c := &fakeClient{caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}}
	ctx, forget := u.relay.withRelay(context.Background(), &relayCall{client: c})
	defer forget()

	nextCalled := ""
	h := u.relay.relayElicit(func(_ context.Context, method string, _ mcp.Request) (mcp.Result, error) {
		nextCalled = method
		return nil, nil
	})
	params := &mcp.ElicitParams{Message: "Test enum schemas", RequestedSchema: schema}
	res, err := h(ctx, "elicitation/create", &mcp.ElicitRequest{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := res.(*mcp.ElicitResult); !ok || r.Action != "accept" {
		t.Fatalf("result %#v", res)
	}
	if nextCalled != "" || len(c.asked) != 1 || c.asked[0] != mcp.InputRequest(params) {
		t.Fatalf("next %q, asked %v", nextCalled, c.asked)
	}
	if _, err := h(ctx, "ping", &mcp.ElicitRequest{Params: params}); err != nil || nextCalled != "ping" {
		t.Fatalf("ping: next %q, %v", nextCalled, err)
	}
}
