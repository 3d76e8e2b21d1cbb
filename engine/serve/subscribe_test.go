package serve_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session may hold 1024 resource subscriptions, known URIs or not; one
// more is refused with an error that says what to do, until it
// unsubscribes from one. Subscribing again to a URI it holds is no new
// subscription.
func TestSubscriptionsPerSessionBounded(t *testing.T) {
	e := newEnv(t)
	cs := inMemory(legacy)(t, e, nil)
	uri := func(i int) string { return fmt.Sprintf("docs://unknown/%d", i) }
	for i := range 1024 {
		if err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: uri(i)}); err != nil {
			t.Fatalf("subscription %d: %v", i+1, err)
		}
	}
	if err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: uri(7)}); err != nil {
		t.Errorf("subscribing again to a URI held: %v", err)
	}
	err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: uri(1024)})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "unsubscribe from one") {
		t.Fatalf("subscription 1025: %v, want invalid params saying to unsubscribe", err)
	}
	if err := cs.Unsubscribe(bounded(t), &mcp.UnsubscribeParams{URI: uri(0)}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(bounded(t), &mcp.SubscribeParams{URI: uri(1024)}); err != nil {
		t.Errorf("after an unsubscribe: %v", err)
	}
	// Another session has a bound of its own.
	other := inMemory(legacy)(t, e, nil)
	if err := other.Subscribe(bounded(t), &mcp.SubscribeParams{URI: uri(2000)}); err != nil {
		t.Errorf("another session: %v", err)
	}
}
