// Ask blocks through Tool.Call: questions compiled from HCL (forms, confirm,
// derived confirmations) and answered by rounds or by an Answerer; the ask
// stage needs a compiled tool to run.

package snapshot_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/snapshot"
)

const askFormConfig = `
tool "pick" {
  description = "Asks for a choice."
  ask "form" {
    elicit = "Pick"
    field "single" {
      type        = "string"
      enum        = ["a", "b"]
      enum_titles = ["Option A", "Option B"]
    }
    field "multi" {
      type        = "array"
      items       = { type = "string", enum = ["x", "y"] }
      enum_titles = ["X", "Y"]
      required    = false
    }
    field "n" {
      type    = "integer"
      minimum = 1
      default = 2
    }
  }
  result {
    content "text" {
      text = "${inputs.form.single} ${jsonencode(inputs.form.multi)} ${inputs.form.n}"
    }
  }
}
`

var elicitCaps = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}

// The form is compiled as params are, enum titles and defaults included,
// and every answer is checked against it: one that does not fit is asked
// again; keys that are not fields are dropped.
func TestAskForm(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": askFormConfig})
	tl := tool(t, s, "pick")
	sealer := requeststate.MustRandomSealer()
	first, err := tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Caps: elicitCaps, Sealer: sealer}})
	if err != nil || first.InputRequests == nil {
		t.Fatalf("first call: %v %+v", err, first)
	}
	got, _ := json.Marshal(first.InputRequests["form"].(*mcp.ElicitParams).RequestedSchema)
	want := `{"properties":{"multi":{"items":{"anyOf":[{"const":"x","title":"X"},{"const":"y","title":"Y"}],"type":"string"},"type":"array"},` +
		`"n":{"default":2,"minimum":1,"type":"integer"},"single":{"oneOf":[{"const":"a","title":"Option A"},{"const":"b","title":"Option B"}],"type":"string"}},` +
		`"required":["single"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("requested schema\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct {
		name    string
		content map[string]any
		want    string // "" : asked again
	}{
		{"valid, default filled", map[string]any{"single": "b", "extra": "dropped"}, "b null 2"},
		{"valid multi", map[string]any{"single": "a", "multi": []any{"y"}, "n": 5}, `a ["y"] 5`},
		{"not an enum value", map[string]any{"single": "c"}, ""},
		{"missing required key", map[string]any{"n": 3}, ""},
		{"below minimum", map[string]any{"single": "a", "n": 0}, ""},
		{"wrong type", map[string]any{"single": 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Caps: elicitCaps, Sealer: sealer, State: first.RequestState,
				Responses: mcp.InputResponseMap{"form": &mcp.ElicitResult{Action: "accept", Content: tc.content}}}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if res.InputRequests["form"] == nil {
					t.Fatalf("not asked again: %s", render(res))
				}
				return
			}
			if res.InputRequests != nil || !strings.Contains(render(res), tc.want) {
				t.Fatalf("result %s, want %q", render(res), tc.want)
			}
		})
	}
}

// Optional questions are skipped for a client that cannot answer them;
// others refuse the call.
func TestAskCapabilities(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": `
tool "t" {
  description = "d"
  ask "name" {
    elicit   = "Name?"
    optional = true
    field "name" { type = "string" }
  }
  ask "roots" { roots = true }
  result {
    text = "(inputs.name == nil ? 'anon' : inputs.name.name) + ' sees ' + inputs.roots[0].uri"
  }
}
`})
	tl := tool(t, s, "t")
	sealer := requeststate.MustRandomSealer()
	_, err := tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Sealer: sealer, Caps: &mcp.ClientCapabilities{}}})
	var me *ask.MissingCapabilityError
	if !errors.As(err, &me) || !slices.Equal(me.Capabilities, []string{"roots"}) {
		t.Fatalf("err = %v, want roots missing only", err)
	}
	caps := &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}}
	res, err := tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Sealer: sealer, Caps: caps}})
	if err != nil || len(res.InputRequests) != 1 || res.InputRequests["roots"] == nil {
		t.Fatalf("with roots only: %v %+v", err, res)
	}
	res, err = tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Sealer: sealer, Caps: caps, State: res.RequestState,
		Responses: mcp.InputResponseMap{"roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///work", Name: "work"}}}}}})
	if err != nil || render(res) != "text:anon sees file:///work" {
		t.Fatalf("answered: %v %q", err, render(res))
	}
}

// confirm = true derives its message from the tool and its arguments,
// sensitive ones hidden.
func TestAskDerivedConfirmation(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": `
tool "deploy" {
  title       = "Deploy"
  description = "Deploys the app."
  confirm     = true
  param "env" { type = "string" }
  param "token" {
    type      = "string"
    sensitive = true
  }
}
`})
	res, err := tool(t, s, "deploy").Call(context.Background(), &snapshot.CallRequest{Args: json.RawMessage(`{"env":"prod","token":"s3cret"}`), Answers: ask.Answers{Caps: elicitCaps, Sealer: requeststate.MustRandomSealer()}})
	if err != nil || res.InputRequests["confirm"] == nil {
		t.Fatalf("%v %+v", err, res)
	}
	msg := res.InputRequests["confirm"].(*mcp.ElicitParams).Message
	if want := `Allow "Deploy" to run with {"env":"prod","token":"(hidden)"}? It deploys the app.`; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
}

// With an Answerer the one ask loop asks round after round within the
// call, with no requestState; an answer that does not fit is asked again,
// up to a bound.
func TestAskAnswerer(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": `
tool "two" {
  description = "d"
  ask "first" {
    elicit = "Name?"
    field "name" { type = "string" }
  }
  ask "second" {
    round  = 2
    elicit = "Colour, ${inputs.first.name}?"
    field "color" { type = "string" }
  }
  result {
    text = "inputs.first.name + ' likes ' + inputs.second.color"
  }
}
`})
	tl := tool(t, s, "two")
	var asked []string
	byQuestion := ask.AnswerFunc(func(_ context.Context, q mcp.InputRequestMap) (mcp.InputResponseMap, error) {
		out := mcp.InputResponseMap{}
		for id, r := range q {
			asked = append(asked, r.(*mcp.ElicitParams).Message)
			switch id {
			case "first":
				out[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}
			case "second":
				out[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "blue"}}
			}
		}
		return out, nil
	})
	res, err := tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Caps: elicitCaps, Answerer: byQuestion}})
	if err != nil || render(res) != "text:Ann likes blue" {
		t.Fatalf("%v %q", err, render(res))
	}
	if !slices.Equal(asked, []string{"Name?", "Colour, Ann?"}) {
		t.Fatalf("asked %q", asked)
	}
	asked = nil
	invalid := ask.AnswerFunc(func(_ context.Context, q mcp.InputRequestMap) (mcp.InputResponseMap, error) {
		asked = append(asked, "again")
		return mcp.InputResponseMap{"first": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": 7}}}, nil
	})
	res, err = tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Caps: elicitCaps, Answerer: invalid}})
	if err != nil || !res.IsError || !strings.Contains(render(res), "no valid answer after 10 questions; it did not run") || len(asked) != 9 {
		t.Fatalf("%v %q, asked %d times", err, render(res), len(asked))
	}
	failing := ask.AnswerFunc(func(context.Context, mcp.InputRequestMap) (mcp.InputResponseMap, error) {
		return nil, errors.New("connection lost")
	})
	res, err = tl.Call(context.Background(), &snapshot.CallRequest{Answers: ask.Answers{Caps: elicitCaps, Answerer: failing}})
	if err != nil || render(res) != "ERROR\ntext:tool two did not run: asking the user failed: connection lost" {
		t.Fatalf("%v %q", err, render(res))
	}
}

// A tool or prompt that asks says so in its definition's _meta, so that a
// client (mcpd's console) can mark it before the first call; one that asks
// nothing carries no _meta at all.
func TestAsksMeta(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": askFormConfig + `
tool "plain" {
  description = "Asks nothing."
  result {
    content "text" {
      text = "ok"
    }
  }
}
prompt "confirmed" {
  description = "Asks before it renders."
  ask "ctx" {
    elicit = "Which context?"
    field "context" { type = "string" }
  }
  message {
    role = "user"
    text = "Context: ${inputs.ctx.context}"
  }
}
`})
	if got := tool(t, s, "pick").Def.Meta[snapshot.AsksMetaKey]; got != true {
		t.Errorf("pick: _meta[%q] = %v, want true", snapshot.AsksMetaKey, got)
	}
	if m := tool(t, s, "plain").Def.Meta; m != nil {
		t.Errorf("plain: _meta = %v, want none", m)
	}
	p, ok := s.Prompt("confirmed")
	if !ok {
		t.Fatal("prompt confirmed not compiled")
	}
	if got := p.Def.Meta[snapshot.AsksMetaKey]; got != true {
		t.Errorf("prompt: _meta[%q] = %v, want true", snapshot.AsksMetaKey, got)
	}
}
