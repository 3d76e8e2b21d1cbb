package redact_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/redact"
)

// A result's text reaches the model redacted, its binary contents as they
// are; a content shared with other calls (built at load) is replaced,
// never modified.
func TestResult(t *testing.T) {
	const secret = "s3cret-value"
	r := redact.New([]string{secret})
	shared := &mcp.TextContent{Text: "key " + secret}
	blob := &mcp.ResourceContents{URI: "demo://b", Blob: []byte(secret)}
	res := &mcp.CallToolResult{
		Content: []mcp.Content{
			shared,
			&mcp.TextContent{Text: "nothing to hide"},
			&mcp.ImageContent{Data: []byte(secret), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://t", Text: secret}},
			&mcp.EmbeddedResource{Resource: blob},
			&mcp.ResourceLink{URI: "demo://" + secret, Name: "n", Title: secret, Description: "d " + secret},
		},
		StructuredContent: map[string]any{"token": secret, secret: "as a key"},
		IsError:           true,
	}
	got := r.Result(res)
	b, _ := json.Marshal(got)
	want := `{"content":[{"type":"text","text":"key [redacted]"},{"type":"text","text":"nothing to hide"},` +
		`{"type":"image","mimeType":"image/png","data":"czNjcmV0LXZhbHVl"},` +
		`{"type":"resource","resource":{"uri":"demo://t","text":"[redacted]"}},` +
		`{"type":"resource","resource":{"uri":"demo://b","blob":"czNjcmV0LXZhbHVl"}},` +
		`{"type":"resource_link","uri":"demo://[redacted]","name":"n","title":"[redacted]","description":"d [redacted]"}],` +
		`"structuredContent":{"[redacted]":"as a key","token":"[redacted]"},"isError":true}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if shared.Text != "key "+secret || got.Content[0] == mcp.Content(shared) {
		t.Errorf("a shared content was modified in place: %q", shared.Text)
	}
	if got.Content[4].(*mcp.EmbeddedResource).Resource != blob {
		t.Error("a blob was copied")
	}
	clean := &mcp.TextContent{Text: "clean"}
	if r.Content(clean) != mcp.Content(clean) {
		t.Error("a content without secrets was copied")
	}
	var none *redact.Redactor
	if none.Result(res) != res || none.Result(nil) != nil || r.Result(nil) != nil {
		t.Error("a nil redactor or result is not returned as it is")
	}
}

func TestResourceContentsAndError(t *testing.T) {
	const secret = "s3cret-value"
	r := redact.New([]string{secret})
	if r.ResourceContents(nil) != nil {
		t.Error("nil contents")
	}
	rc := &mcp.ResourceContents{URI: "demo://t", Text: "a " + secret}
	if got := r.ResourceContents(rc); got.Text != "a [redacted]" || rc.Text != "a "+secret {
		t.Errorf("got %q, original %q", got.Text, rc.Text)
	}
	plain := errors.New("backend down")
	if r.Error(plain) != plain || r.Error(nil) != nil {
		t.Error("an error without secrets is not returned as it is")
	}
	if got := r.Error(errors.New("token " + secret)); got.Error() != "token [redacted]" {
		t.Errorf("error = %q", got)
	}
	var none *redact.Redactor
	if err := errors.New(secret); none.Error(err) != err {
		t.Error("a nil redactor changed an error")
	}
}

// The values of sensitive arguments leave error results (a backend may
// echo them), whatever their JSON type; other results are the tool's
// output and stay whole.
func TestArgs(t *testing.T) {
	sensitive := map[string]bool{"password": true, "pin": true, "list": true}
	raw := json.RawMessage(`{"password":"hunter22","pin":12345678,"list":["first-secret",{"k":"nested-secret"}],"user":"alice-public"}`)
	errRes := func() *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{
			Text: "login hunter22 pin 12345678 first-secret nested-secret alice-public"}}}
	}
	tests := []struct {
		name  string
		names map[string]bool
		raw   json.RawMessage
		res   *mcp.CallToolResult
		want  string
	}{
		{"error result", sensitive, raw, errRes(), "login [redacted] pin [redacted] [redacted] [redacted] alice-public"},
		{"not an error", sensitive, raw, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hunter22"}}}, "hunter22"},
		{"no sensitive args", nil, raw, errRes(), "login hunter22 pin 12345678 first-secret nested-secret alice-public"},
		{"args not an object", sensitive, json.RawMessage(`[1]`), errRes(), "login hunter22 pin 12345678 first-secret nested-secret alice-public"},
		{"no args", sensitive, nil, errRes(), "login hunter22 pin 12345678 first-secret nested-secret alice-public"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.Args(tc.names, tc.raw, tc.res)
			if text := got.Content[0].(*mcp.TextContent).Text; text != tc.want {
				t.Errorf("got  %q\nwant %q", text, tc.want)
			}
		})
	}
	if redact.ForArgs(nil, raw) != nil || redact.ForArgs(map[string]bool{"short": true}, json.RawMessage(`{"short":"abc"}`)) != nil {
		t.Error("a redactor for no value to find")
	}
	if got := redact.ForArgs(sensitive, raw).String("pw hunter22"); got != "pw [redacted]" {
		t.Errorf("ForArgs: %q", got)
	}
}
