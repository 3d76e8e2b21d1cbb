package shape_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/funcs"
	"github.com/mcpd/mcpd/engine/shape"
)

// compileContent compiles the one content block of src against a scope
// with the param x.
func compileContent(t *testing.T, src string) (*shape.Content, *adapter.Scope, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var body struct {
		Contents []*config.Content `hcl:"content,block"`
	}
	if diags := gohcl.DecodeBody(f.Body, nil, &body); diags.HasErrors() || len(body.Contents) != 1 {
		t.Fatalf("decode: %v (%d blocks)", diags, len(body.Contents))
	}
	scope := &adapter.Scope{Dir: t.TempDir(), Functions: funcs.Table(t.TempDir()), Params: map[string]string{"x": "string"}}
	c, diags := shape.CompileContent(body.Contents[0], scope)
	return c, scope, diags
}

// A content block is checked at load (attributes by type, references,
// base64 of constants), built once when it uses no argument, and built per
// call from the call's arguments otherwise.
func TestCompileContent(t *testing.T) {
	tests := []struct {
		name, src string
		diag      string // a diagnostic's summary, when compiling fails
		static    bool
		args      map[string]any
		want      mcp.Content
		evalErr   string
	}{
		{name: "static text", src: `content "text" { text = "hi" }`, static: true, want: &mcp.TextContent{Text: "hi"}},
		{name: "text from args", src: `content "text" { text = "hi ${args.x}" }`, args: map[string]any{"x": "you"}, want: &mcp.TextContent{Text: "hi you"}},
		{name: "static image", src: `content "image" {
  data      = "aGVsbG8="
  mime_type = "image/png"
}`, static: true, want: &mcp.ImageContent{Data: []byte("hello"), MIMEType: "image/png"}},
		{name: "image from args, not base64", src: `content "image" {
  data      = args.x
  mime_type = "image/png"
}`, args: map[string]any{"x": "not base64!"}, evalErr: "image content, data: not valid base64"},
		{name: "static image, not base64", src: `content "image" {
  data      = "not base64!"
  mime_type = "image/png"
}`, diag: "Invalid content"},
		{name: "embedded blob", src: `content "resource" {
  uri  = "demo://b"
  blob = "aGk="
}`, static: true, want: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://b", Blob: []byte("hi")}}},
		{name: "embedded text", src: `content "resource" {
  uri       = "demo://t"
  text      = args.x
  mime_type = "text/plain"
}`, args: map[string]any{"x": "body"}, want: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "demo://t", Text: "body", MIMEType: "text/plain"}}},
		{name: "resource link", src: `content "resource_link" {
  uri   = "demo://l"
  name  = "l"
  title = "L"
}`, static: true, want: &mcp.ResourceLink{URI: "demo://l", Name: "l", Title: "L"}},
		{name: "resource without text or blob", src: `content "resource" { uri = "demo://x" }`, diag: "Resource content needs text or blob"},
		{name: "resource with text and blob", src: `content "resource" {
  uri  = "demo://x"
  text = "a"
  blob = "YQ=="
}`, diag: "Resource content needs text or blob"},
		{name: "attribute of another type", src: `content "text" {
  text = "a"
  uri  = "demo://x"
}`, diag: "Unsupported attribute"},
		{name: "missing attribute", src: `content "image" { data = "aGk=" }`, diag: "Missing required attribute"},
		{name: "undeclared param", src: `content "text" { text = args.nope }`, diag: "args.nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, scope, diags := compileContent(t, tc.src)
			if tc.diag != "" {
				if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.diag) {
					t.Fatalf("diagnostics %v, want %q", diags, tc.diag)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if c.Static() != tc.static {
				t.Errorf("Static() = %v, want %v", c.Static(), tc.static)
			}
			got, err := c.Eval(scope.CallContext(tc.args))
			if tc.evalErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.evalErr) {
					t.Fatalf("Eval error %v, want %q", err, tc.evalErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := got.MarshalJSON()
			wj, _ := tc.want.MarshalJSON()
			if string(gj) != string(wj) {
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

// A type config.Load already reported gets one diagnostic, not one per
// attribute; calling it fails rather than building something.
func TestCompileContentUnknownType(t *testing.T) {
	c, scope, diags := compileContent(t, `content "video" { text = "a" }`)
	if len(diags) != 0 || c == nil {
		t.Fatalf("got %v, %v; want no diagnostic", c, diags)
	}
	if _, err := c.Eval(scope.CallContext(nil)); err == nil || !strings.Contains(err.Error(), `unknown content type "video"`) {
		t.Fatalf("Eval error %v", err)
	}
}

func TestIsText(t *testing.T) {
	tests := []struct {
		mime string
		want bool
	}{
		{"text/plain", true},
		{"text/plain; charset=utf-8", true},
		{"Text/Markdown", true},
		{"application/sql", true},
		{"application/json", true},
		{"application/ld+json", true},
		{"image/svg+xml", true},
		{"application/vnd.api+yaml", true},
		{"application/x-yaml", true},
		{"application/toml", true},
		{"application/octet-stream", false},
		{"image/png", false},
		{"application/pdf", false},
		{"", false},
		{"text", false},
		{" TEXT/CSV ;;", true},
	}
	for _, tc := range tests {
		if got := shape.IsText(tc.mime); got != tc.want {
			t.Errorf("IsText(%q) = %v, want %v", tc.mime, got, tc.want)
		}
	}
}
