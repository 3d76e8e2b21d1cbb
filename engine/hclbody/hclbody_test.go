package hclbody_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/hclbody"
)

// shell is the schema of a block like the shell adapter's: one required
// argument, optional ones, a block.
var shell = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "command", Required: true}, {Name: "timeout"}, {Name: "env"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "progress"}},
}

// Every diagnostic is built here, with its text and range: none is HCL's
// message passed on or mended, so an HCL upgrade that rewords its own
// cannot change them. Each want is "line:col Summary: Detail".
func TestContent(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"valid", `command = ["true"]
progress {}`, nil},
		{"missing", `timeout = "1s"`, []string{
			`1:1 Missing required argument: The argument "command" is required, but no definition was found.`}},
		// A misspelling of a required argument is one mistake: no second
		// error that it is missing.
		{"misspelt required", `comand = ["true"]`, []string{
			`1:1 Unsupported argument: An argument named "comand" is not expected here. Did you mean "command"?`}},
		{"misspelt optional", `command = ["true"]
timeuot = "1s"`, []string{
			`2:1 Unsupported argument: An argument named "timeuot" is not expected here. Did you mean "timeout"?`}},
		// A name already set is not suggested again.
		{"set name not suggested", `command = ["true"]
commands = ["x"]`, []string{
			`2:1 Unsupported argument: An argument named "commands" is not expected here.`}},
		{"unknown, far from every name", `command = ["true"]
zzzzzz = 1`, []string{
			`2:1 Unsupported argument: An argument named "zzzzzz" is not expected here.`}},
		// In the order they are written (HCL's come in map order).
		{"source order", `eenv = {}
command = ["true"]
tiemout = "1s"
zz = 1`, []string{
			`1:1 Unsupported argument: An argument named "eenv" is not expected here. Did you mean "env"?`,
			`3:1 Unsupported argument: An argument named "tiemout" is not expected here. Did you mean "timeout"?`,
			`4:1 Unsupported argument: An argument named "zz" is not expected here.`}},
		{"block", `command = ["true"]
progres {}`, []string{
			`2:1 Unsupported block type: Blocks of type "progres" are not expected here. Did you mean "progress"?`}},
		{"block written as an argument", `command = ["true"]
progress = {}`, []string{
			`2:1 Unsupported argument: An argument named "progress" is not expected here. Did you mean to define a block of type "progress"?`}},
		{"argument written as a block", `command = ["true"]
env {}`, []string{
			`2:1 Unsupported block type: Blocks of type "env" are not expected here. Did you mean to define argument "env"? If so, use the equals sign to assign it a value.`}},
		// Label errors stay HCL's: it finds them.
		{"extraneous label", `command = ["true"]
progress "x" {}`, []string{
			`2:10 Extraneous label for progress: No labels are expected for progress blocks.`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := hclbody.Content(parse(t, tc.src), shell)
			check(t, diags, tc.want)
		})
	}
}

// The rest of a body's schema, decoded later by another, is known: its
// names are not unsupported, and are suggested for misspellings.
func TestPartialContent(t *testing.T) {
	tool := &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "description"}, {Name: "title"}}}
	adapters := &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "shell"}, {Type: "http"}}}
	body := parse(t, `descriptoin = "x"
shel {}
shell { command = ["true"] }
htp = 1
`)
	content, remain, diags := hclbody.PartialContent(body, tool, adapters)
	check(t, diags, []string{
		`1:1 Unsupported argument: An argument named "descriptoin" is not expected here. Did you mean "description"?`,
		`4:1 Unsupported argument: An argument named "htp" is not expected here. Did you mean to define a block of type "http"?`,
		`2:1 Unsupported block type: Blocks of type "shel" are not expected here. Did you mean "shell"?`,
	})
	if len(content.Attributes) != 0 {
		t.Errorf("content: %v", content.Attributes)
	}
	// The rest is left for its own decoder.
	rc, _, d := remain.PartialContent(adapters)
	if len(d) != 0 || len(rc.Blocks) != 1 || rc.Blocks[0].Type != "shell" {
		t.Errorf("remain: %v %v", rc.Blocks, d)
	}

	// What an earlier PartialContent took from a body is not unsupported
	// in what it left.
	_, left, _ := body.PartialContent(&hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "descriptoin"}, {Name: "htp"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "shel"}},
	})
	_, diags = hclbody.Content(left, adapters)
	check(t, diags, nil)
}

func parse(t *testing.T, src string) hcl.Body {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return f.Body
}

func check(t *testing.T, diags hcl.Diagnostics, want []string) {
	t.Helper()
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%d:%d %s: %s", d.Subject.Start.Line, d.Subject.Start.Column, d.Summary, d.Detail))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
