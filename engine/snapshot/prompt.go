package snapshot

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/shape"
)

// Prompt is one compiled prompt.
type Prompt struct {
	Def         *mcp.Prompt
	scope       *adapter.Scope
	messages    []promptMessage
	completions map[string][]string
	redact      *redact.Redactor // nil: no secrets
	asks        *ask.Asker       // nil: the prompt asks nothing
	scopes      []string         // required to list and get it
	// remote gets a prompt a backend contributes (contributed.go, and
	// getRemote in rounds.go).
	remote func(ctx context.Context, req *adapter.PromptRequest) (*adapter.PromptOutput, error)
	from   *contribution // nil: the config's own
}

type promptMessage struct {
	role    mcp.Role
	text    hcl.Expression // or
	content *shape.Content
}

func compilePrompt(pc *config.Prompt, ft funcTables) (*Prompt, hcl.Diagnostics) {
	params := map[string]string{}
	def := &mcp.Prompt{Name: pc.Name, Title: pc.Title, Description: pc.Description, Arguments: []*mcp.PromptArgument{}, Icons: mcpIcons(pc.Icons)}
	for _, a := range pc.Arguments {
		params[a.Name] = "string"
		def.Arguments = append(def.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
	}
	scope := &adapter.Scope{Dir: pc.Dir, Functions: ft.get(pc.Dir), Params: params}
	p := &Prompt{Def: def, scope: scope, completions: map[string][]string{}}
	asks, diags := compileAsks("prompt", pc.Name, pc.Asks, scope)
	if asks != nil {
		p.asks, scope.Inputs = asks, asks.Scope.Inputs
		def.Meta = mcp.Meta{AsksMetaKey: true}
	}
	for _, a := range pc.Arguments {
		if a.Completions == nil {
			continue
		}
		v, d := a.Completions.Expr.Value(scope.EvalContext())
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		g, err := adapter.ToGo(v)
		vals, ok := stringList(g)
		if err != nil || !ok {
			diags = append(diags, attrDiag(a.Completions, "completions must be a list of strings"))
			continue
		}
		p.completions[a.Name] = vals
	}
	for _, m := range pc.Messages {
		pm := promptMessage{role: mcp.Role(m.Role)}
		if m.Text != nil {
			diags = append(diags, scope.Check(m.Text.Expr)...)
			pm.text = m.Text.Expr
		} else if len(m.Contents) == 1 {
			ct, d := shape.CompileContent(m.Contents[0], scope)
			diags = append(diags, d...)
			pm.content = ct
		}
		p.messages = append(p.messages, pm)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return p, diags
}

// Get renders the prompt with the request's arguments, its messages and
// errors redacted, after asking what its ask blocks ask (see Tool.Call
// and Answers: the result is input_required, InputRequests set, until
// every question is answered). A missing required argument or an unknown
// one, a declined question or no valid answer is an error the client sees
// as invalid params; a refused state is a *StateError, a question the
// client cannot answer a *MissingCapabilityError, and an Answerer that
// failed an *AnswerError.
func (p *Prompt) Get(ctx context.Context, req *GetRequest) (*mcp.GetPromptResult, error) {
	res, err := p.get(ctx, req)
	if res != nil && p.redact != nil {
		for i, m := range res.Messages {
			if c := p.redact.Content(m.Content); c != m.Content {
				cp := *m
				cp.Content = c
				res.Messages[i] = &cp
			}
		}
	}
	return res, p.redact.Error(err)
}

func (p *Prompt) get(ctx context.Context, req *GetRequest) (*mcp.GetPromptResult, error) {
	if p.remote != nil {
		return p.getRemote(ctx, req)
	}
	args := req.Args
	var missing []string
	for _, a := range p.Def.Arguments {
		if _, ok := args[a.Name]; !ok && a.Required {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("prompt %s: missing required argument(s) %s", p.Def.Name, strings.Join(missing, ", "))
	}
	var unknown []string
	for k := range args {
		if _, ok := p.scope.Params[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("prompt %s: unknown argument(s) %s", p.Def.Name, strings.Join(unknown, ", "))
	}
	goArgs := anyArgs(args)
	var inputs map[string]any
	if p.asks != nil {
		bind := requeststate.BindCaller("prompt", p.Def.Name, goArgs, callerID(req.Caller), nil)
		out, err := p.asks.Resolve(ctx, goArgs, bind, &req.Answers)
		var ae *ask.AnswerError
		var nv *ask.NoValidAnswer
		switch {
		case errors.As(err, &ae):
			return nil, &ask.AnswerError{What: "prompt " + p.Def.Name, Err: ae.Err}
		case errors.As(err, &nv):
			return nil, fmt.Errorf("prompt %s: %v", p.Def.Name, err)
		case err != nil:
			return nil, err
		case out.Declined != "":
			return nil, fmt.Errorf("prompt %s: %s", p.Def.Name, out.Declined)
		case out.Requests != nil:
			return &mcp.GetPromptResult{InputRequests: out.Requests, RequestState: out.State}, nil
		}
		inputs = out.Inputs
	}
	ectx := p.scope.CallContextInputs(goArgs, inputs)
	res := &mcp.GetPromptResult{Description: p.Def.Description}
	for _, m := range p.messages {
		var c mcp.Content
		if m.text != nil {
			s, err := adapter.EvalString(m.text, ectx)
			if err != nil {
				return nil, fmt.Errorf("prompt %s: %v", p.Def.Name, err)
			}
			c = &mcp.TextContent{Text: s}
		} else {
			var err error
			if c, err = m.content.Eval(ectx); err != nil {
				return nil, fmt.Errorf("prompt %s: %v", p.Def.Name, err)
			}
		}
		res.Messages = append(res.Messages, &mcp.PromptMessage{Role: m.role, Content: c})
	}
	return res, nil
}

// anyArgs are a prompt's arguments as a tool's are decoded from JSON.
func anyArgs(args map[string]string) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		out[k] = v
	}
	return out
}

// complete filters candidates by the prefix typed so far, case-insensitively,
// returning at most 100 as the protocol allows.
func complete(candidates []string, prefix string) *mcp.CompletionResultDetails {
	out := []string{}
	lp := strings.ToLower(prefix)
	for _, c := range candidates {
		if strings.HasPrefix(strings.ToLower(c), lp) {
			out = append(out, c)
		}
	}
	total := len(out)
	more := false
	if len(out) > 100 {
		out, more = out[:100], true
	}
	return &mcp.CompletionResultDetails{Values: out, Total: total, HasMore: more}
}
