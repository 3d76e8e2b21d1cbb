package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/requeststate"
	"github.com/mcpd/mcpd/engine/schema"
)

// The ask blocks of a tool or prompt: questions for the user, answered
// before the tool runs (or the prompt renders), in rounds. "Ask" means
// these blocks only. One declaration serves both protocol eras, through
// one loop (asker.resolve): the questions of a round go to the request's
// Answerer when it has one (a 2025-11-25 session, the CLI: see Answers in
// call.go), or become the InputRequests of an input_required result, with
// a requestState (engine/requeststate) to retry with (2026-07-28).

type askKind int

const (
	askConfirm askKind = iota
	askElicit
	askSample
	askRoots
)

var askKindNames = [...]string{"confirm", "elicit", "sample", "roots"}

// askSpec is one compiled ask block.
type askSpec struct {
	name     string
	round    int
	kind     askKind
	optional bool
	// message renders the question (nil for roots).
	message func(ectx *hcl.EvalContext, args map[string]any) (string, error)
	// requested is the elicitation form sent (confirm: an empty form).
	requested map[string]any
	fields    []string
	validator *schema.Validator // elicit only
	maxTokens int64
	system    hcl.Expression // sample only; nil: none
}

// asker is every ask block of one tool or prompt.
type asker struct {
	kind, name string // "tool" or "prompt", and its name
	asks       []*askSpec
	rounds     int
	scope      *adapter.Scope // Inputs holds every ask
}

// askOutcome is one step of resolving the asks: the inputs (all answered),
// the questions still open, or the user's refusal.
type askOutcome struct {
	inputs   map[string]any
	requests mcp.InputRequestMap
	state    string
	declined string
}

func compileAsks(kind, name string, decls []*config.Ask, base *adapter.Scope) (*asker, hcl.Diagnostics) {
	if len(decls) == 0 {
		return nil, nil
	}
	var diags hcl.Diagnostics
	a := &asker{kind: kind, name: name}
	seen := map[string]*config.Ask{}
	for _, d := range decls {
		if prev, ok := seen[d.Name]; ok {
			rng := d.NameRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate ask",
				Detail:  fmt.Sprintf("ask %q is already declared at %s; answers are inputs.<name>, so names must be unique.", d.Name, prev.NameRange),
				Subject: &rng})
			continue
		}
		seen[d.Name] = d
	}
	// The rounds first: a message may use the inputs of earlier rounds.
	rounds := map[string]int{}
	for _, d := range decls {
		r := 1
		if d.Round != nil {
			v, dd := schema.StaticValue(d.Round, base.EvalContext())
			diags = append(diags, dd...)
			f, ok := v.(float64)
			if !dd.HasErrors() && (!ok || f < 1 || f != math.Trunc(f) || f > 100) {
				diags = append(diags, attrDiag(d.Round, "round must be a whole number from 1 to 100"))
			} else if ok {
				r = int(f)
			}
		}
		rounds[d.Name] = r
		if r > a.rounds {
			a.rounds = r
		}
	}
	all := map[string]string{}
	for _, d := range decls {
		all[d.Name] = askKindNames[kindOf(d)]
	}
	a.scope = scopeWithInputs(base, all)
	for _, d := range decls {
		if seen[d.Name] != d {
			continue
		}
		earlier := map[string]string{}
		for n, r := range rounds {
			if r < rounds[d.Name] {
				earlier[n] = all[n]
			}
		}
		spec, dd := compileAsk(d, rounds[d.Name], scopeWithInputs(base, earlier))
		diags = append(diags, dd...)
		if spec != nil {
			a.asks = append(a.asks, spec)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return a, diags
}

func scopeWithInputs(base *adapter.Scope, inputs map[string]string) *adapter.Scope {
	cp := *base
	cp.Inputs = inputs
	return &cp
}

func kindOf(d *config.Ask) askKind {
	switch {
	case d.Elicit != nil:
		return askElicit
	case d.Sample != nil:
		return askSample
	case d.Roots != nil:
		return askRoots
	}
	return askConfirm
}

func compileAsk(d *config.Ask, round int, scope *adapter.Scope) (*askSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	rng := d.DeclRange
	n := 0
	for _, a := range []*hcl.Attribute{d.Confirm, d.Elicit, d.Sample, d.Roots} {
		if a != nil {
			n++
		}
	}
	if n != 1 {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid ask",
			Detail:  fmt.Sprintf("ask %q must set exactly one of confirm, elicit, sample or roots (it sets %d).", d.Name, n),
			Subject: &rng}}
	}
	s := &askSpec{name: d.Name, round: round, kind: kindOf(d), optional: d.Optional}
	if s.optional && s.kind == askConfirm {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Optional confirmation",
			Detail: "a confirmation cannot be optional: the tool would run unconfirmed for clients that cannot ask. Remove optional, or the ask.", Subject: &rng})
	}
	if len(d.Fields) > 0 && s.kind != askElicit {
		r := d.Fields[0].DeclRange
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "field without elicit", Detail: "field blocks describe an elicitation form; only an ask with elicit takes them.", Subject: &r})
	}
	for _, a := range []*hcl.Attribute{d.MaxTokens, d.SystemPrompt} {
		if a != nil && s.kind != askSample {
			diags = append(diags, attrDiag(a, a.Name+" only applies to an ask with sample"))
		}
	}
	switch s.kind {
	case askRoots:
		v, dd := schema.StaticValue(d.Roots, scope.EvalContext())
		diags = append(diags, dd...)
		if b, ok := v.(bool); !dd.HasErrors() && (!ok || !b) {
			diags = append(diags, attrDiag(d.Roots, "roots = true asks for the client's roots; remove the ask otherwise"))
		}
	case askConfirm:
		s.message = templateMessage(d.Confirm.Expr)
		diags = append(diags, scope.Check(d.Confirm.Expr)...)
		s.requested = map[string]any{"type": "object", "properties": map[string]any{}}
	case askSample:
		s.message = templateMessage(d.Sample.Expr)
		diags = append(diags, scope.Check(d.Sample.Expr)...)
		s.maxTokens = 1000
		if d.MaxTokens != nil {
			v, dd := schema.StaticValue(d.MaxTokens, scope.EvalContext())
			diags = append(diags, dd...)
			f, ok := v.(float64)
			if !dd.HasErrors() && (!ok || f < 1 || f != math.Trunc(f)) {
				diags = append(diags, attrDiag(d.MaxTokens, "max_tokens must be a positive whole number"))
			}
			s.maxTokens = int64(f)
		}
		if d.SystemPrompt != nil {
			diags = append(diags, scope.Check(d.SystemPrompt.Expr)...)
			s.system = d.SystemPrompt.Expr
		}
	case askElicit:
		s.message = templateMessage(d.Elicit.Expr)
		diags = append(diags, scope.Check(d.Elicit.Expr)...)
		for _, f := range d.Fields {
			if f.Type == "" {
				r := f.DeclRange
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Field without a type", Detail: fmt.Sprintf("field %q needs a type: string, number, integer, boolean or array (of enum values).", f.Name), Subject: &r})
			}
			s.fields = append(s.fields, f.Name)
		}
		if len(d.Fields) == 0 {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Elicitation without fields", Detail: "an elicit ask needs at least one field block; to ask for a yes or no, use confirm.", Subject: &rng})
		}
		if diags.HasErrors() {
			return nil, diags
		}
		form, dd := schema.FromParams(d.Fields, scope.EvalContext())
		diags = append(diags, dd...)
		diags = append(diags, applyEnumTitles(form, d.Fields, scope.EvalContext())...)
		if diags.HasErrors() {
			return nil, diags
		}
		// Elicitation forms are flat objects; clients do not expect
		// additionalProperties, and unknown answers are dropped anyway.
		delete(form, "additionalProperties")
		v, err := schema.Compile(form)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid elicitation form", Detail: err.Error(), Subject: &rng})
			return nil, diags
		}
		s.requested, s.validator = form, v
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return s, diags
}

func templateMessage(expr hcl.Expression) func(*hcl.EvalContext, map[string]any) (string, error) {
	return func(ectx *hcl.EvalContext, _ map[string]any) (string, error) {
		return adapter.EvalString(expr, ectx)
	}
}

// applyEnumTitles rewrites the properties of params that set enum_titles
// (a oneOf of const/title; for an array, an anyOf in its items) or
// enum_names (kept as the legacy enumNames keyword).
func applyEnumTitles(s map[string]any, params []*config.Param, ectx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	props, _ := s["properties"].(map[string]any)
	for _, p := range params {
		prop, ok := props[p.Name].(map[string]any)
		if !ok {
			continue
		}
		if p.EnumNames != nil {
			v, d := schema.StaticValue(p.EnumNames, ectx)
			diags = append(diags, d...)
			if names, ok := stringList(v); ok {
				prop["enumNames"] = anyList(names)
			} else if !d.HasErrors() {
				diags = append(diags, attrDiag(p.EnumNames, "enum_names must be a list of strings"))
			}
		}
		if p.EnumTitles == nil {
			continue
		}
		v, d := schema.StaticValue(p.EnumTitles, ectx)
		diags = append(diags, d...)
		titles, ok := stringList(v)
		if !ok {
			if !d.HasErrors() {
				diags = append(diags, attrDiag(p.EnumTitles, "enum_titles must be a list of strings"))
			}
			continue
		}
		target, key := prop, "oneOf"
		if items, ok := prop["items"].(map[string]any); ok && p.Type == "array" {
			target, key = items, "anyOf"
		}
		values, _ := target["enum"].([]any)
		if len(values) != len(titles) {
			diags = append(diags, attrDiag(p.EnumTitles, fmt.Sprintf("enum_titles needs one title per enum value (%d values, %d titles); for an array the values are items.enum", len(values), len(titles))))
			continue
		}
		opts := make([]any, len(values))
		for i, v := range values {
			opts[i] = map[string]any{"const": v, "title": titles[i]}
		}
		delete(target, "enum")
		target[key] = opts
	}
	return diags
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// confirmAsk is the implicit confirmation of a tool with `confirm = true`
// (or a message) or of a destructive tool under server.confirm_destructive.
func confirmAsk(tc *config.Tool, scope *adapter.Scope, sensitive map[string]bool) (*askSpec, hcl.Diagnostics) {
	s := &askSpec{name: "confirm", round: 1, kind: askConfirm, requested: map[string]any{"type": "object", "properties": map[string]any{}}}
	if tc.Confirm != nil && !adapter.IsStatic(tc.Confirm.Expr) || isStringAttr(tc.Confirm, scope) {
		diags := scopeWithInputs(scope, map[string]string{}).Check(tc.Confirm.Expr)
		s.message = templateMessage(tc.Confirm.Expr)
		return s, diags
	}
	title := tc.Title
	if title == "" && tc.Annotations != nil {
		title = tc.Annotations.Title
	}
	if title == "" {
		title = tc.Name
	}
	desc := tc.Description
	s.message = func(_ *hcl.EvalContext, args map[string]any) (string, error) {
		shown := args
		if len(sensitive) > 0 {
			// Sensitive arguments stay out of what the client shows.
			shown = make(map[string]any, len(args))
			for k, v := range args {
				if sensitive[k] {
					v = "(hidden)"
				}
				shown[k] = v
			}
		}
		b, err := json.Marshal(shown)
		if err != nil {
			return "", err
		}
		msg := fmt.Sprintf("Allow %q to run with %s?", title, b)
		if desc != "" {
			msg += " It " + lowerFirst(desc)
		}
		return msg, nil
	}
	return s, nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func isStringAttr(a *hcl.Attribute, scope *adapter.Scope) bool {
	if a == nil {
		return false
	}
	v, d := a.Expr.Value(scope.EvalContext())
	return !d.HasErrors() && v.Type() == cty.String
}

// toolConfirm works out whether a tool confirms implicitly: its confirm
// attribute (true, false or a message) wins over confirm_destructive.
func toolConfirm(tc *config.Tool, scope *adapter.Scope, confirmDestructive bool) (bool, hcl.Diagnostics) {
	if tc.Confirm == nil {
		return confirmDestructive && tc.Annotations != nil && tc.Annotations.Destructive != nil && *tc.Annotations.Destructive, nil
	}
	if !adapter.IsStatic(tc.Confirm.Expr) {
		return true, nil
	}
	v, d := tc.Confirm.Expr.Value(scope.EvalContext())
	if d.HasErrors() {
		return false, d
	}
	switch {
	case v.IsNull():
		return false, hcl.Diagnostics{attrDiag(tc.Confirm, "confirm is true, false or a message")}
	case v.Type() == cty.Bool:
		return v.True(), nil
	case v.Type() == cty.String:
		return true, nil
	}
	return false, hcl.Diagnostics{attrDiag(tc.Confirm, "confirm is true, false or a message")}
}

// supported reports whether caps let the client answer q.
func (q *askSpec) supported(caps *mcp.ClientCapabilities) bool {
	if caps == nil {
		return false
	}
	switch q.kind {
	case askSample:
		return caps.Sampling != nil
	case askRoots:
		return caps.RootsV2 != nil || caps.Roots.ListChanged
	}
	return caps.Elicitation != nil
}

func (q *askSpec) request(ectx *hcl.EvalContext, args map[string]any) (mcp.InputRequest, error) {
	if q.kind == askRoots {
		return &mcp.ListRootsParams{}, nil
	}
	msg, err := q.message(ectx, args)
	if err != nil {
		return nil, fmt.Errorf("ask %s: %v", q.name, err)
	}
	if q.kind == askSample {
		p := &mcp.CreateMessageParams{
			Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: msg}}},
			MaxTokens: q.maxTokens,
		}
		if q.system != nil {
			if p.SystemPrompt, err = adapter.EvalString(q.system, ectx); err != nil {
				return nil, fmt.Errorf("ask %s: system_prompt: %v", q.name, err)
			}
		}
		return p, nil
	}
	return &mcp.ElicitParams{Message: msg, RequestedSchema: q.requested}, nil
}

type answerStatus int

const (
	answerMissing answerStatus = iota // not given, of the wrong kind or invalid: ask again
	answerOK
	answerDeclined
)

// interpret turns the client's answer to q into its input value.
func (q *askSpec) interpret(resp mcp.InputResponse) (any, answerStatus, string) {
	switch r := resp.(type) {
	case *mcp.ElicitResult:
		if r == nil || (q.kind != askConfirm && q.kind != askElicit) {
			return nil, answerMissing, ""
		}
		if r.Action != "accept" {
			if r.Action == "decline" || r.Action == "cancel" {
				return nil, answerDeclined, r.Action
			}
			return nil, answerMissing, ""
		}
		if q.kind == askConfirm {
			return true, answerOK, ""
		}
		content := map[string]any{}
		for _, f := range q.fields {
			if v, ok := r.Content[f]; ok {
				content[f] = v
			}
		}
		raw, err := json.Marshal(content)
		if err != nil {
			return nil, answerMissing, ""
		}
		vals, err := q.validator.Validate(raw)
		if err != nil {
			return nil, answerMissing, ""
		}
		for _, f := range q.fields {
			if _, ok := vals[f]; !ok {
				vals[f] = nil
			}
		}
		return vals, answerOK, ""
	case *mcp.CreateMessageResult:
		if r == nil || q.kind != askSample {
			return nil, answerMissing, ""
		}
		return contentText(r.Content), answerOK, ""
	case *mcp.CreateMessageWithToolsResult:
		if r == nil || q.kind != askSample {
			return nil, answerMissing, ""
		}
		for _, c := range r.Content {
			if _, ok := c.(*mcp.TextContent); ok {
				return contentText(c), answerOK, ""
			}
		}
		return "", answerOK, ""
	case *mcp.ListRootsResult:
		if r == nil || q.kind != askRoots {
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

// resolve gathers the inputs of one call: the answers carried by the state
// and the responses, and, while a round is unanswered, its questions. It
// is the one ask loop: with an Answerer it asks round after round within
// the call; without, it returns the open questions and a state to retry
// with. bind is what the state is bound to (see callBind).
func (a *asker) resolve(ctx context.Context, args map[string]any, bind string, in *ask.Answers) (*askOutcome, error) {
	st, err := in.Open(bind)
	if err != nil {
		return nil, err
	}
	return a.resolveFrom(ctx, args, bind, st, in)
}

// resolveFrom is resolve from the opened state st. A state past the last
// round (one the tool's adapter asked with: see handlerRounds) carries
// every input already.
func (a *asker) resolveFrom(ctx context.Context, args map[string]any, bind string, st requeststate.State, in *ask.Answers) (*askOutcome, error) {
	inputs := make(map[string]any, len(a.asks))
	for k, v := range st.Answers {
		inputs[k] = v
	}
	responses := in.Responses
	asked := 0
	for r := st.Round; r <= a.rounds; {
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
			return &askOutcome{requests: reqs, state: state}, nil
		}
		if asked++; asked >= ask.MaxRounds {
			return nil, &ask.NoValidAnswer{Rounds: asked}
		}
		if responses, err = in.Answerer.Answer(ctx, reqs); err != nil {
			return nil, &ask.AnswerError{Err: err}
		}
	}
	return &askOutcome{inputs: inputs}, nil
}

// round works through the questions of round r still open: it takes in
// the responses that answer them and returns the questions left to ask,
// or the outcome that ends the call (declined), or the error (a question
// the client cannot answer).
func (a *asker) round(r int, args, inputs map[string]any, responses mcp.InputResponseMap, caps *mcp.ClientCapabilities) (mcp.InputRequestMap, *askOutcome, error) {
	reqs := mcp.InputRequestMap{}
	var missing []*askSpec
	var ectx *hcl.EvalContext
	for _, q := range a.asks {
		if q.round != r {
			continue
		}
		if _, done := inputs[q.name]; done {
			continue
		}
		if resp, ok := responses[q.name]; ok {
			v, status, action := q.interpret(resp)
			switch status {
			case answerOK:
				inputs[q.name] = v
				continue
			case answerDeclined:
				return nil, &askOutcome{declined: a.declined(q, action, args)}, nil
			}
		}
		if !q.supported(caps) {
			if q.optional {
				inputs[q.name] = nil
				continue
			}
			missing = append(missing, q)
			continue
		}
		if ectx == nil {
			ectx = a.scope.CallContextInputs(args, inputs)
		}
		req, err := q.request(ectx, args)
		if err != nil {
			return nil, nil, err
		}
		reqs[q.name] = req
	}
	if len(missing) > 0 {
		return nil, nil, a.missing(missing)
	}
	return reqs, nil, nil
}

func (a *asker) declined(q *askSpec, action string, args map[string]any) string {
	verb := "declined"
	if action == "cancel" {
		verb = "cancelled"
	}
	msg := ""
	if q.message != nil {
		msg, _ = q.message(a.scope.CallContextInputs(args, nil), args)
	}
	what := "the tool"
	if a.kind == "prompt" {
		what = "the prompt"
	}
	if q.kind == askConfirm {
		return fmt.Sprintf("The user %s the confirmation (%q), so %s %s did not run. Do not retry unless the user asks.", verb, msg, what, a.name)
	}
	return fmt.Sprintf("The user %s to answer %q, so %s %s did not run. Do not retry unless the user asks.", verb, msg, what, a.name)
}

func (a *asker) missing(qs []*askSpec) error {
	e := &ask.MissingCapabilityError{What: a.kind + " " + a.name}
	kinds, caps := map[string]bool{}, map[string]bool{}
	for _, q := range qs {
		kinds[askKindNames[q.kind]] = true
		switch q.kind {
		case askSample:
			caps["sampling"] = true
		case askRoots:
			caps["roots"] = true
		default:
			caps["elicitation"] = true
		}
	}
	e.Asks = slices.Sorted(maps.Keys(kinds))
	e.Capabilities = slices.Sorted(maps.Keys(caps))
	return e
}

// compileToolAsks compiles a tool's ask blocks and its implicit
// confirmation (confirm attribute, server.confirm_destructive).
func compileToolAsks(tc *config.Tool, scope *adapter.Scope, confirmDestructive bool, sensitive map[string]bool) (*asker, hcl.Diagnostics) {
	on, diags := toolConfirm(tc, scope, confirmDestructive)
	for _, d := range tc.Asks {
		if d.Confirm != nil {
			on = false // the tool already asks for a confirmation
		}
		if d.Name == "confirm" && on {
			rng := d.NameRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate ask",
				Detail: "the tool's implicit confirmation is inputs.confirm; rename this ask.", Subject: &rng})
		}
	}
	a, d := compileAsks("tool", tc.Name, tc.Asks, scope)
	diags = append(diags, d...)
	if !on || diags.HasErrors() {
		return a, diags
	}
	c, d := confirmAsk(tc, scope, sensitive)
	diags = append(diags, d...)
	if a == nil {
		a = &asker{kind: "tool", name: tc.Name, rounds: 1, scope: scopeWithInputs(scope, map[string]string{})}
	}
	a.asks = append([]*askSpec{c}, a.asks...)
	a.scope.Inputs["confirm"] = "confirm"
	return a, diags
}

// NeedsSharedStateKey reports whether replicas serving s over HTTP must
// share server.request_state_key: a tool or prompt asks its client for
// input (2026-07-28 requestState round trips, which may reach another
// replica), and no key is set (each process signs with a random one).
func (s *Snapshot) NeedsSharedStateKey() bool {
	if s.Server.StateSealer != nil {
		return false
	}
	for _, t := range s.Tools {
		if t.asks != nil {
			return true
		}
	}
	for _, p := range s.Prompts {
		if p.asks != nil {
			return true
		}
	}
	return false
}

// minStateKey is the shortest request_state_key accepted: shorter keys
// can be guessed, and a guessed key lets a client forge answers.
const minStateKey = 16

func stateSealer(sv *config.Server, info *ServerInfo) hcl.Diagnostics {
	if sv == nil || sv.RequestStateKey == "" {
		return nil
	}
	if len(sv.RequestStateKey) < minStateKey {
		rng := sv.DeclRange
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "request_state_key too short",
			Detail:  fmt.Sprintf("request_state_key must be at least %d bytes; generate one with `openssl rand -base64 32`.", minStateKey),
			Subject: &rng}}
	}
	info.StateSealer = requeststate.NewSealer([]byte(sv.RequestStateKey), requeststate.DefaultTTL)
	return nil
}
