package snapshot

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/cache"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/limits"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/schema"
	"github.com/mcpd/mcpd/engine/shape"
	"github.com/mcpd/mcpd/engine/sharedstate"
	"github.com/mcpd/mcpd/engine/tasks"
)

// Tool is one compiled tool: everything a call needs, built at load time.
type Tool struct {
	// Def is what tools/list shows. It must not be modified. Its schemas
	// are encoded once here, as json.RawMessage, so that listing tools does
	// not re-encode them on every request.
	Def *mcp.Tool
	// InputSchema is the input schema as a Go value, for inspection.
	InputSchema map[string]any

	validator *schema.Validator
	output    *schema.Bounded // nil: no output schema
	scope     *adapter.Scope
	handler   adapter.Handler // nil: a declarative tool
	traits    adapter.Traits  // the handler's, read once when compiled
	result    *result
	progress  *progressSpec
	logs      []*logSpec
	// needsEval is false when nothing evaluated per call references args,
	// which saves building the HCL evaluation context.
	needsEval bool
	// adapterType is the adapter block's type ("http", "shell", "sql"),
	// for spans.
	adapterType string
	redact      *redact.Redactor // nil: no secrets
	asks        *ask.Asker       // nil: the tool asks nothing
	// scopes are required to list and call the tool (see access.go).
	scopes []string
	// callerParams are bound from the verified caller, not the model.
	callerParams []*schema.CallerParam
	// limits are the tool's timeout, concurrency and rates (engine/limits);
	// never nil once built.
	limits *limits.Limits
	// sensitive are the arguments marked "writeOnly": true in the input
	// schema (sensitive = true on a param); nil when none.
	sensitive map[string]bool
	// cache reuses the tool's results (engine/cache); nil: not cached.
	cache *cache.Tool
	// rerunnable: a second run with the same arguments changes nothing
	// (read-only or idempotent), so one requestState may run the tool
	// more than once (replay.go).
	rerunnable bool
	// replay claims the requestStates that run the tool, to refuse their
	// replay (engine/ask's Replay, with the snapshot's Used set, carried
	// over by reloads); nil: the tool is rerunnable or asks nothing.
	replay *ask.Replay
	// state is the shared state when the tool's calls use it (shared
	// limits, the cache in Redis, the requestStates used); nil otherwise. Each call's operations
	// on it share one budget, its timeout (sharedstate.Budget).
	state *sharedstate.Store
	// backends are the top-level blocks the tool's adapter looked up at
	// load, as "TYPE NAME" (see Backends).
	backends []string
	// task is how the tool's calls run as tasks (task.go).
	task tasks.Policy
}

// Backends are the top-level backend blocks (http_backend, database, …)
// the tool uses, as "BLOCK-TYPE NAME", in the order its adapter looked them
// up: what `mcpd call` checks for unset variables before it runs the tool.
func (t *Tool) Backends() []string { return t.backends }

type result struct {
	structured, text, errorWhen, errorMessage *shape.Program
	contents                                  []*shape.Content
}

type progressSpec struct {
	steps    []float64
	total    float64
	interval time.Duration
	message  string
}

// ProgressFunc reports progress for the call being served.
type ProgressFunc func(progress, total float64, message string)

func compileTool(tc *config.Tool, reg *adapter.Registry, backend *backendSet, ft funcTables, sl serverLimits, sc serverCache, confirmDestructive bool) (*Tool, hcl.Diagnostics) {
	scope := &adapter.Scope{Dir: tc.Dir, Functions: ft.get(tc.Dir), Auth: ft.auth}
	ectx := scope.EvalContext()
	var diags hcl.Diagnostics

	var in map[string]any
	if tc.InputSchema != nil {
		var d hcl.Diagnostics
		in, d = schema.JSONValue(tc.InputSchema, ectx)
		diags = append(diags, d...)
	} else {
		var d hcl.Diagnostics
		in, d = schema.FromParams(tc.Params, ectx)
		diags = append(diags, d...)
		diags = append(diags, applyEnumTitles(in, tc.Params, ectx)...)
	}
	var validator *schema.Validator
	if !diags.HasErrors() {
		var err error
		validator, err = schema.Compile(in)
		if err != nil {
			rng := tc.DeclRange
			if tc.InputSchema != nil {
				rng = tc.InputSchema.Expr.Range()
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid input schema", Detail: err.Error(), Subject: &rng})
		}
	}
	scope.Params = paramTypes(in)
	// A broken param still declares its name: keep checking the rest of
	// the tool against the declared names, to report every error at once.
	for _, p := range tc.Params {
		if _, ok := scope.Params[p.Name]; !ok {
			scope.Params[p.Name] = p.Type
		}
	}

	asks, d := compileToolAsks(tc, scope, confirmDestructive, sensitiveArgs(in))
	diags = append(diags, d...)
	if asks != nil {
		scope.Inputs = asks.Scope.Inputs
	}
	t := &Tool{validator: validator, scope: scope, InputSchema: in, asks: asks, needsEval: asks != nil, scopes: normScopes(tc.Scopes), sensitive: sensitiveArgs(in)}
	if tc.InputSchema == nil {
		var d hcl.Diagnostics
		t.callerParams, d = schema.CallerParams(tc.Params, ectx)
		diags = append(diags, d...)
		diags = append(diags, checkCallerParams(tc.Params, t.callerParams, ft.auth)...)
	}
	{
		var d hcl.Diagnostics
		t.limits, d = compileLimits(tc, sl)
		diags = append(diags, d...)
	}
	t.Def = &mcp.Tool{
		Name:        tc.Name,
		Title:       tc.Title,
		Description: tc.Description,
		InputSchema: rawJSON(in),
		Annotations: annotations(tc.Annotations),
		Icons:       mcpIcons(tc.Icons),
	}
	if asks != nil {
		t.Def.Meta = mcp.Meta{AsksMetaKey: true}
	}
	if tc.OutputSchema != nil {
		out, d := schema.JSONValue(tc.OutputSchema, ectx)
		diags = append(diags, d...)
		if !d.HasErrors() {
			var err error
			t.output, err = resolveOutput(out)
			if err != nil {
				rng := tc.OutputSchema.Expr.Range()
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid output schema", Detail: err.Error(), Subject: &rng})
			}
			t.Def.OutputSchema = rawJSON(out)
		}
	}

	var vars []string
	// adapterFailed: the adapter block has errors, so the names it gives
	// the result and log blocks (body, rows, content, ...) are unknown;
	// checking those blocks against args alone would blame them for the
	// adapter block's mistake. They are checked once it compiles.
	adapterFailed := false
	if tc.Adapter != nil {
		a, ok := reg.Adapter(tc.Adapter.Type)
		if !ok { // the loader only accepts registered blocks
			panic("unregistered adapter block " + tc.Adapter.Type)
		}
		h, d := a.CompileTool(&adapter.ToolBlock{
			Tool: tc.Name, Type: tc.Adapter.Type, Body: tc.Adapter.Body, Range: tc.Adapter.DeclRange,
			Scope: scope, Structured: tc.OutputSchema != nil, ReadsVars: tc.Result != nil || len(tc.Logs) > 0,
			Backend: func(blockType, name string) (adapter.Backend, bool) {
				// Adapters look their backends up while they compile.
				t.backends = append(t.backends, blockType+" "+name)
				return backend.get(blockType, name)
			},
			BackendNames: backend.names,
		})
		diags = append(diags, d...)
		adapterFailed = h == nil && d.HasErrors()
		t.handler, t.adapterType = h, tc.Adapter.Type
		if h != nil {
			vars = h.Vars()
			t.traits = h.Traits()
			if t.traits.ReadsEval {
				t.needsEval = true
			}
		}
	}
	{
		var d hcl.Diagnostics
		t.cache, d = compileCache(tc, t.handler, sc)
		diags = append(diags, d...)
		t.task, d = compileTask(tc)
		diags = append(diags, d...)
	}
	t.rerunnable = rerunnable(tc, t.handler)
	if tc.Result != nil && !adapterFailed {
		rvars := vars
		if asks != nil {
			rvars = append(append([]string(nil), vars...), "inputs")
		}
		r, d := compileResult(tc.Result, scope, rvars)
		diags = append(diags, d...)
		t.result = r
		if r != nil {
			for _, c := range r.contents {
				t.needsEval = t.needsEval || !c.Static()
			}
		}
	}
	if len(tc.Logs) > 0 && !adapterFailed {
		params := make([]string, 0, len(scope.Params))
		for p := range scope.Params {
			params = append(params, p)
		}
		for _, lc := range tc.Logs {
			l, d := compileLog(lc, params, vars)
			diags = append(diags, d...)
			t.logs = append(t.logs, l)
		}
	}
	if tc.Progress != nil {
		p, d := compileProgress(tc.Progress, ectx)
		diags = append(diags, d...)
		t.progress = p
	}
	if tc.Description == "" {
		rng := tc.NameRange
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Tool without a description",
			Detail:   fmt.Sprintf("Models choose tools by their description; tell them what %q does.", tc.Name),
			Subject:  &rng,
		})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return t, diags
}

func paramTypes(in map[string]any) map[string]string {
	out := map[string]string{}
	props, _ := in["properties"].(map[string]any)
	for name, p := range props {
		t := ""
		if pm, ok := p.(map[string]any); ok {
			switch v := pm["type"].(type) {
			case string:
				t = v
			case []any:
				for _, e := range v {
					if s, ok := e.(string); ok && s != "null" {
						t = s
					}
				}
			}
		}
		out[name] = t
	}
	return out
}

// resolveOutput compiles an output schema, within schema's bounds.
func resolveOutput(s map[string]any) (*schema.Bounded, error) {
	return schema.CompileOutput(s)
}

func annotations(a *config.Annotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	out := &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.Destructive, OpenWorldHint: a.OpenWorld}
	if a.ReadOnly != nil {
		out.ReadOnlyHint = *a.ReadOnly
	}
	if a.Idempotent != nil {
		out.IdempotentHint = *a.Idempotent
	}
	return out
}

func compileResult(r *config.Result, scope *adapter.Scope, vars []string) (*result, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	params := make([]string, 0, len(scope.Params))
	for p := range scope.Params {
		params = append(params, p)
	}
	out := &result{}
	for _, e := range []struct {
		attr *hcl.Attribute
		dst  **shape.Program
	}{{r.Structured, &out.structured}, {r.Text, &out.text}, {r.ErrorWhen, &out.errorWhen}, {r.ErrorMessage, &out.errorMessage}} {
		if e.attr == nil {
			continue
		}
		p, d := shape.Compile(e.attr, vars, params)
		diags = append(diags, d...)
		*e.dst = p
	}
	if r.ErrorMessage != nil && r.ErrorWhen == nil {
		rng := r.ErrorMessage.NameRange
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "error_message without error_when", Detail: "error_message is the text of the error that error_when detects; add error_when.", Subject: &rng})
	}
	for _, c := range r.Contents {
		ct, d := shape.CompileContent(c, scope)
		diags = append(diags, d...)
		if ct != nil {
			out.contents = append(out.contents, ct)
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return out, diags
}

func compileProgress(p *config.Progress, ectx *hcl.EvalContext) (*progressSpec, hcl.Diagnostics) {
	spec := &progressSpec{interval: 0}
	if p.Steps == nil {
		// Required: decoding has reported it missing.
		return spec, nil
	}
	var diags hcl.Diagnostics
	steps, d := schema.StaticValue(p.Steps, ectx)
	diags = append(diags, d...)
	if list, ok := steps.([]any); ok {
		for _, s := range list {
			f, ok := s.(float64)
			if !ok {
				diags = append(diags, attrDiag(p.Steps, "steps must be a list of numbers"))
				break
			}
			spec.steps = append(spec.steps, f)
		}
	} else if !d.HasErrors() {
		diags = append(diags, attrDiag(p.Steps, "steps must be a list of numbers"))
	}
	if p.Total != nil {
		v, d := schema.StaticValue(p.Total, ectx)
		diags = append(diags, d...)
		if f, ok := v.(float64); ok {
			spec.total = f
		} else if !d.HasErrors() {
			diags = append(diags, attrDiag(p.Total, "total must be a number"))
		}
	}
	if p.Interval != nil {
		dur, d := staticDuration(p.Interval, ectx)
		diags = append(diags, d...)
		spec.interval = dur
	}
	if p.Message != nil {
		v, d := p.Message.Expr.Value(ectx)
		diags = append(diags, d...)
		if !d.HasErrors() && v.Type() == cty.String {
			spec.message = v.AsString()
		}
	}
	return spec, diags
}

// staticDuration decodes a duration of zero or more, with the messages
// every adapter gives (adapter.DurationValue).
func staticDuration(a *hcl.Attribute, ectx *hcl.EvalContext) (time.Duration, hcl.Diagnostics) {
	v, d := a.Expr.Value(ectx)
	if d.HasErrors() {
		return 0, d
	}
	v, _ = v.UnmarkDeep()
	return adapter.DurationValue(v, a.Expr.Range(), a.Name, 0, 0)
}

func attrDiag(a *hcl.Attribute, detail string) *hcl.Diagnostic {
	rng := a.Expr.Range()
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid " + a.Name, Detail: detail, Subject: &rng}
}

// MaxOutputBytes is the most output one call of the tool can hold, from
// its adapter's caps; 0 when the adapter does not say (a declarative tool
// builds its result from the config).
func (t *Tool) MaxOutputBytes() int64 {
	return t.traits.MaxOutputBytes
}

// BuildsResult reports whether the tool's result block builds the result
// (its text, structured content, content blocks or error message): what
// the adapter's caps (MaxOutputBytes) do not bound, and a declarative
// tool's whole result.
func (t *Tool) BuildsResult() bool {
	r := t.result
	return r != nil && (r.structured != nil || r.text != nil || r.errorMessage != nil || len(r.contents) > 0)
}
