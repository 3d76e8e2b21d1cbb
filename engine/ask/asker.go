package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/schema"
)

// The ask state machine: the compiled ask blocks of a tool or prompt
// (Asker, Spec; engine/snapshot compiles them) and the one loop that
// resolves them (Asker.Resolve), round by round: the questions of a round
// go to the request's Answerer when it has one (a 2025-11-25 session, the
// CLI), or become the InputRequests of an input_required result, with a
// requestState (engine/requeststate) to retry with (2026-07-28).

// Kind is the kind of an ask block.
type Kind int

const (
	KindConfirm Kind = iota
	KindElicit
	KindSample
	KindRoots
)

// kindNames are the kinds as the config and the errors name them.
var kindNames = [...]string{"confirm", "elicit", "sample", "roots"}

// Spec is one compiled ask block.
type Spec struct {
	Name     string
	Round    int
	Kind     Kind
	Optional bool
	// Message renders the question (nil for roots).
	Message func(ectx *hcl.EvalContext, args map[string]any) (string, error)
	// Requested is the elicitation form sent (confirm: an empty form).
	Requested map[string]any
	Fields    []string
	Validator *schema.Validator // elicit only
	MaxTokens int64
	System    hcl.Expression // sample only; nil: none
}

// Asker is every ask block of one tool or prompt.
type Asker struct {
	Kind, Name string // "tool" or "prompt", and its name
	Asks       []*Spec
	Rounds     int
	Scope      *adapter.Scope // Inputs holds every ask
}

// Outcome is one step of resolving the asks: the inputs (all answered),
// the questions still open, or the user's refusal.
type Outcome struct {
	Inputs   map[string]any
	Requests mcp.InputRequestMap
	State    string
	Declined string
}

// supported reports whether caps let the client answer q.
func (q *Spec) supported(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	switch q.Kind {
	case KindSample:
		return caps.Sampling != nil
	case KindRoots:
		return caps.RootsV2 != nil || caps.Roots.ListChanged
	}
	return caps.Elicitation != nil
}

func (q *Spec) request(ectx *hcl.EvalContext, args map[string]any) (mcp.InputRequest, error) {
	if q.Kind == KindRoots {
		return &mcp.ListRootsParams{}, nil
	}
	msg, err := q.Message(ectx, args)
	if err != nil {
		return nil, fmt.Errorf("ask %s: %v", q.Name, err)
	}
	if q.Kind == KindSample {
		p := &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: msg}}},
			MaxTokens: q.MaxTokens,
		}
		if q.System != nil {
			if p.SystemPrompt, err = adapter.EvalString(q.System, ectx); err != nil {
				return nil, fmt.Errorf("ask %s: system_prompt: %v", q.Name, err)
			}
		}
		return p, nil
	}
	return &mcp.ElicitParams{Message: msg, RequestedSchema: q.Requested}, nil
}

type answerStatus int

const (
	answerMissing answerStatus = iota // not given, of the wrong kind or invalid: ask again
	answerOK
	answerDeclined
)

// interpret turns the client's answer to q into its input value.
func (q *Spec) interpret(resp mcp.InputResponse) (any, answerStatus, string) {
	switch r := resp.(type) {
	case *mcp.ElicitResult:
		if r == nil || (q.Kind != KindConfirm && q.Kind != KindElicit) {
			return nil, answerMissing, ""
		}
		if r.Action != "accept" {
			if r.Action == "decline" || r.Action == "cancel" {
				return nil, answerDeclined, r.Action
			}
			return nil, answerMissing, ""
		}
		if q.Kind == KindConfirm {
			return true, answerOK, ""
		}
		content := map[string]any{}
		for _, f := range q.Fields {
			if v, ok := r.Content[f]; ok {
				content[f] = v
			}
		}
		raw, err := json.Marshal(content)
		if err != nil {
			return nil, answerMissing, ""
		}
		vals, err := q.Validator.Validate(raw)
		if err != nil {
			return nil, answerMissing, ""
		}
		for _, f := range q.Fields {
			if _, ok := vals[f]; !ok {
				vals[f] = nil
			}
		}
		return vals, answerOK, ""
	case *mcp.CreateMessageResult:
		if r == nil || q.Kind != KindSample {
			return nil, answerMissing, ""
		}
		return contentText(r.Content), answerOK, ""
	case *mcp.CreateMessageWithToolsResult:
		if r == nil || q.Kind != KindSample {
			return nil, answerMissing, ""
		}
		for _, c := range r.Content {
			if _, ok := c.(*mcp.TextContent); ok {
				return contentText(c), answerOK, ""
			}
		}
		return "", answerOK, ""
	case *mcp.ListRootsResult:
		if r == nil || q.Kind != KindRoots {
			return nil, answerMissing, ""
		}
		roots := make([]any, 0, len(r.Roots))
		for _, root := range r.Roots {
			if root != nil {
				roots = append(roots, map[string]any{"uri": root.URI, "name": root.Name})
			}
		}
		return roots, answerOK, ""
	}
	return nil, answerMissing, ""
}

func contentText(c mcp.Content) string {
	if t, ok := c.(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// Resolve gathers the inputs of one call: the answers carried by the state
// and the responses, and, while a round is unanswered, its questions. It
// is the one ask loop: with an Answerer it asks round after round within
// the call; without, it returns the open questions and a state to retry
// with. bind is what the state is bound to (see callBind).
func (a *Asker) Resolve(ctx context.Context, args map[string]any, bind string, in *Answers) (*Outcome, error) {
	st, err := in.Open(bind)
	if err != nil {
		return nil, err
	}
	return a.ResolveFrom(ctx, args, bind, st, in)
}

// ResolveFrom is Resolve from the opened state st. A state past the last
// round (one the tool's adapter asked with: see handlerRounds) carries
// every input already.
func (a *Asker) ResolveFrom(ctx context.Context, args map[string]any, bind string, st requeststate.State, in *Answers) (*Outcome, error) {
	inputs := make(map[string]any, len(a.Asks))
	for k, v := range st.Answers {
		inputs[k] = v
	}
	responses := in.Responses
	asked := 0
	for r := st.Round; r <= a.Rounds; {
		reqs, out, err := a.round(r, args, inputs, responses, in.Caps)
		if out != nil || err != nil {
			return out, err
		}
		if len(reqs) == 0 {
			// Answers count for the round the client was asked only.
			r, responses = r+1, nil
			continue
		}
		if in.Answerer == nil {
			if in.Sealer == nil {
				return nil, errors.New("no requestState key")
			}
			state, err := in.Sealer.Seal(requeststate.State{Round: r, Answers: inputs, Bind: bind})
			if err != nil {
				return nil, err
			}
			return &Outcome{Requests: reqs, State: state}, nil
		}
		if asked++; asked >= MaxRounds {
			return nil, &NoValidAnswer{Rounds: asked}
		}
		if responses, err = in.Answerer.Answer(ctx, reqs); err != nil {
			return nil, &AnswerError{Err: err}
		}
	}
	return &Outcome{Inputs: inputs}, nil
}

// round works through the questions of round r still open: it takes in
// the responses that answer them and returns the questions left to ask,
// or the outcome that ends the call (declined), or the error (a question
// the client cannot answer).
func (a *Asker) round(r int, args, inputs map[string]any, responses mcp.InputResponseMap, caps *mcp.ClientCapabilities) (mcp.InputRequestMap, *Outcome, error) {
	reqs := mcp.InputRequestMap{}
	var missing []*Spec
	var ectx *hcl.EvalContext
	for _, q := range a.Asks {
		if q.Round != r {
			continue
		}
		if _, done := inputs[q.Name]; done {
			continue
		}
		if resp, ok := responses[q.Name]; ok {
			v, status, action := q.interpret(resp)
			switch status {
			case answerOK:
				inputs[q.Name] = v
				continue
			case answerDeclined:
				return nil, &Outcome{Declined: a.declined(q, action, args)}, nil
			}
		}
		if !q.supported(caps) {
			if q.Optional {
				inputs[q.Name] = nil
				continue
			}
			missing = append(missing, q)
			continue
		}
		if ectx == nil {
			ectx = a.Scope.CallContextInputs(args, inputs)
		}
		req, err := q.request(ectx, args)
		if err != nil {
			return nil, nil, err
		}
		reqs[q.Name] = req
	}
	if len(missing) > 0 {
		return nil, nil, a.missing(missing)
	}
	return reqs, nil, nil
}

func (a *Asker) declined(q *Spec, action string, args map[string]any) string {
	verb := "declined"
	if action == "cancel" {
		verb = "cancelled"
	}
	msg := ""
	if q.Message != nil {
		msg, _ = q.Message(a.Scope.CallContextInputs(args, nil), args)
	}
	what := "the tool"
	if a.Kind == "prompt" {
		what = "the prompt"
	}
	if q.Kind == KindConfirm {
		return fmt.Sprintf("The user %s the confirmation (%q), so %s %s did not run. Do not retry unless the user asks.", verb, msg, what, a.Name)
	}
	return fmt.Sprintf("The user %s to answer %q, so %s %s did not run. Do not retry unless the user asks.", verb, msg, what, a.Name)
}

func (a *Asker) missing(qs []*Spec) error {
	e := &MissingCapabilityError{What: a.Kind + " " + a.Name}
	kinds, caps := map[string]bool{}, map[string]bool{}
	for _, q := range qs {
		kinds[kindNames[q.Kind]] = true
		switch q.Kind {
		case KindSample:
			caps["sampling"] = true
		case KindRoots:
			caps["roots"] = true
		default:
			caps["elicitation"] = true
		}
	}
	e.Asks = slices.Sorted(maps.Keys(kinds))
	e.Capabilities = slices.Sorted(maps.Keys(caps))
	return e
}

// String is the kind as the config names it ("confirm", "elicit", "sample",
// "roots").
func (k Kind) String() string { return kindNames[k] }
