package snapshot_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/snapshot"
)

const templates = `
resource_template "segment" {
  uri_template = "seg://{name}"
  text         = "name=${args.name}"
}

resource_template "path" {
  uri_template = "path://{+path}"
  text         = "path=${args.path}"
}

resource_template "relaxed" {
  uri_template = "relaxed://{+path}"
  param "path" {
    allow_slash        = true
    allow_dot_segments = true
  }
  text = "path=${args.path}"
}

resource_template "typed" {
  uri_template = "typed://{id}/{flag}{?ratio,tag}"
  param "id" {
    type    = "integer"
    maximum = 9007199254740993
  }
  param "flag" {
    type = "boolean"
  }
  param "ratio" {
    type    = "number"
    default = 0.5
  }
  text = "id=${args.id + 0} flag=${args.flag ? "on" : "off"} ratio=${args.ratio} tag=${args.tag == null ? "-" : args.tag}"
}

resource_template "colour" {
  uri_template = "colour://{c}"
  param "c" {
    enum = ["red", "green", "grey"]
  }
  text = "c=${args.c}"
}
`

// Template variables are checked before the read: path rules by the
// variable's operator, then the type and constraints of its param block.
func TestTemplateVariables(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"t.hcl": templates})
	for _, tc := range []struct {
		uri, want string
		bad       bool
	}{
		{"seg://plain.txt", "name=plain.txt", false},
		{"seg://a%20b", "name=a b", false},
		{"seg://..%2Fsecret.txt", `argument "name" must not contain "/"`, true},
		{"seg://%2Fetc%2Fhostname", `argument "name" must not contain "/"`, true},
		{"seg://..", `argument "name" must not contain a ".." path segment`, true},
		{"seg://.", `argument "name" must not contain a "." path segment`, true},
		{"seg://..%5Cx", `argument "name" must not contain a ".." path segment`, true},
		{"seg://a%00b", `argument "name" must not contain control characters such as NUL, got "a\x00b"`, true},
		{"seg://a%0Ab", `argument "name" must not contain control characters`, true},
		{"seg://%FF", `argument "name" must be valid UTF-8 text, got "\xff"`, true},
		{"path://a/b/c.txt", "path=a/b/c.txt", false},
		{"path://a/..%2Fb", `argument "path" must not contain a ".." path segment, got "a/../b"`, true},
		{"path://a/../b", `argument "path" must not contain a ".." path segment`, true},
		{"path:///etc/hostname", `argument "path" must not start with "/"`, true},
		{"path://a%00", `argument "path" must not contain control characters`, true},
		{"relaxed:///etc/../hostname", "path=/etc/../hostname", false},
		{"relaxed://a%00", `argument "path" must not contain control characters`, true},
		{"typed://9007199254740993/true", "id=9007199254740993 flag=on ratio=0.5 tag=-", false},
		{"typed://-0/false?ratio=-0.0&tag=x", "id=0 flag=off ratio=0 tag=x", false},
		{"typed://9007199254740994/true", `argument "id" must be at most 9007199254740993, got 9007199254740994`, true},
		{"typed://0x10/true", `argument "id" must be an integer, got string "0x10"`, true},
		{"typed://1/yes", `argument "flag" must be a boolean, got string "yes"`, true},
		{"typed://1/true?ratio=Inf", `argument "ratio" must be a number, got string "Inf"`, true},
		{"typed://1/true?ratio=1e400", `argument "ratio" must be a number, got string "1e400"`, true},
		{"colour://grey", "c=grey", false},
		{"colour://blue", `argument "c" must be one of "red", "green", "grey", got "blue"`, true},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			res, found, err := s.ReadResource(context.Background(), &snapshot.ReadRequest{URI: tc.uri})
			if !found {
				t.Fatal("not found")
			}
			if tc.bad {
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !contains(we.Message, tc.want) {
					t.Fatalf("err = %v, want -32602 with %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Contents[0].Text; got != tc.want {
				t.Errorf("text = %q, want %q", got, tc.want)
			}
		})
	}

	// A declared enum is what completion offers.
	got := s.Complete(context.Background(), &adapter.CompleteRequest{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "colour://{c}"}, Argument: "c", Value: "gr"})
	if want := []string{"green", "grey"}; !reflect.DeepEqual(got.Values, want) {
		t.Errorf("completions = %v, want %v", got.Values, want)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
