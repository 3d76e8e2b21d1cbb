package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
)

// fake is a test adapter, selected in a tool by a `fake { mode = "..." }`
// block, with an optional `backend = "name"` naming a top-level
// `fake_backend "name" { setting = "..." }` block. The adapter interface is
// the seam: this is how the engine meets HTTP, shell and SQL too.
//
// Modes: "echo" returns the arguments (Vars body, Structured), "panic"
// panics, "error" fails, "block" waits for its context to end, "progress"
// reports two steps, "media" returns a PNG. With `say = <expr>` (evaluated
// on each call, with args), "say" returns its value as text, structured
// content (value and key) and body, "say_error" fails with it, and
// "say_media" returns it as an image.
type fake struct {
	mu       sync.Mutex
	backends []*fakeBackend // every backend opened, in order

	started   chan string // "block" calls announce themselves (tool name)
	cancelled chan string // and report when their context ended
}

func newFake() *fake {
	return &fake{started: make(chan string, 16), cancelled: make(chan string, 16)}
}

func (f *fake) register() *adapter.Registry {
	reg := adapter.NewRegistry()
	reg.Register("fake", f)
	return reg
}

func (f *fake) BackendBlock() string { return "fake_backend" }

func (f *fake) DecodeBackend(b *adapter.BackendBlock) (adapter.BackendConfig, hcl.Diagnostics) {
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "setting"}}})
	setting := ""
	if a, ok := content.Attributes["setting"]; ok {
		v, d := a.Expr.Value(b.Scope.EvalContext())
		diags = append(diags, d...)
		if !d.HasErrors() {
			setting = v.AsString()
		}
	}
	return &fakeBackendConfig{f: f, name: b.Name, setting: setting}, diags
}

type fakeBackendConfig struct {
	f             *fake
	name, setting string
}

func (c *fakeBackendConfig) Fingerprint() string { return c.setting }

func (c *fakeBackendConfig) Open() (adapter.Backend, error) {
	if c.setting == "unopenable" {
		return nil, errors.New("cannot open")
	}
	b := &fakeBackend{name: c.name, setting: c.setting}
	c.f.mu.Lock()
	c.f.backends = append(c.f.backends, b)
	c.f.mu.Unlock()
	return b, nil
}

func (f *fake) opened() []*fakeBackend {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*fakeBackend(nil), f.backends...)
}

type fakeBackend struct {
	name, setting string
	closed        atomic.Int32
	calls         atomic.Int32
}

func (b *fakeBackend) Close() error {
	b.closed.Add(1)
	return nil
}

func (f *fake) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "mode", Required: true}, {Name: "backend"}, {Name: "say"},
	}})
	if diags.HasErrors() {
		return nil, diags
	}
	if v, d := content.Attributes["mode"].Expr.Value(nil); !d.HasErrors() && v.AsString() == "relay" {
		return fakeRelay{}, diags
	}
	h := &fakeHandler{f: f, tool: b.Tool}
	if a, ok := content.Attributes["say"]; ok {
		diags = append(diags, b.Scope.Check(a.Expr)...)
		h.say = a.Expr
	}
	v, d := content.Attributes["mode"].Expr.Value(nil)
	diags = append(diags, d...)
	if !d.HasErrors() {
		h.mode = v.AsString()
	}
	if a, ok := content.Attributes["backend"]; ok {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		be, ok := b.Backend("fake_backend", v.AsString())
		if !ok {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unknown backend", Subject: a.Expr.Range().Ptr()})
		}
		h.backend = be.(*fakeBackend)
	}
	return h, diags
}

type fakeHandler struct {
	f       *fake
	tool    string
	mode    string
	backend *fakeBackend
	say     hcl.Expression
}

func (h *fakeHandler) Vars() []string         { return []string{"body"} }
func (h *fakeHandler) Traits() adapter.Traits { return adapter.Traits{ReadsEval: true} }

func (h *fakeHandler) Call(ctx context.Context, req *adapter.Request) (*adapter.Output, error) {
	if h.backend != nil {
		h.backend.calls.Add(1)
	}
	said := ""
	if h.say != nil {
		v, err := adapter.EvalString(h.say, req.Eval)
		if err != nil {
			return nil, err
		}
		said = v
	}
	switch h.mode {
	case "say":
		return &adapter.Output{Vars: map[string]any{"body": said}, Text: said, Structured: map[string]any{"said": said, said: "as a key"}}, nil
	case "say_error":
		return nil, fmt.Errorf("backend said %s", said)
	case "say_progress":
		req.Progress(1, 1, said)
		return &adapter.Output{Text: "done"}, nil
	case "say_media":
		return &adapter.Output{Media: []adapter.Media{{MIMEType: "image/png", Data: []byte(said)}}}, nil
	case "echo":
		return &adapter.Output{Vars: map[string]any{"body": req.Args}, Structured: map[string]any{"echo": req.Args}}, nil
	case "text":
		return &adapter.Output{Vars: map[string]any{"body": req.Args}, Text: fmt.Sprint("text from ", h.tool)}, nil
	case "panic":
		panic("boom")
	case "error":
		return nil, errors.New("backend said no")
	case "block":
		h.f.started <- h.tool
		<-ctx.Done()
		h.f.cancelled <- h.tool
		return nil, ctx.Err()
	case "progress":
		req.Progress(1, 2, "half")
		req.Progress(2, 2, "done")
		return &adapter.Output{Text: "progressed"}, nil
	case "media":
		return &adapter.Output{Media: []adapter.Media{{MIMEType: "image/png", Data: []byte("\x89PNG")}, {MIMEType: "audio/wav", Data: []byte("RIFF")}}}, nil
	case "nil":
		return nil, nil
	}
	return nil, fmt.Errorf("unknown mode %q", h.mode)
}

// fakeRelay (mode "relay") asks its client by input_required rounds, as
// adapters/mcpadapter does for an upstream's questions: "What is your name?"
// under key "q" with the state "asked", then greets with the answer.
type fakeRelay struct{}

func (fakeRelay) Vars() []string { return nil }
func (fakeRelay) Traits() adapter.Traits {
	return adapter.Traits{ReadsEval: true, RelaysClientRequests: true}
}

func (fakeRelay) Call(_ context.Context, req *adapter.Request) (*adapter.Output, error) {
	if req.Rounds == nil {
		return nil, errors.New("the client cannot be asked")
	}
	if req.Rounds.State == "" {
		return &adapter.Output{InputRequired: &adapter.InputRequired{
			Requests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "What is your name?"}},
			State:    "asked",
		}}, nil
	}
	r, ok := req.Rounds.Responses["q"].(*mcp.ElicitResult)
	if req.Rounds.State != "asked" || !ok {
		return nil, fmt.Errorf("state %q, responses %v", req.Rounds.State, req.Rounds.Responses)
	}
	return &adapter.Output{Text: fmt.Sprintf("hello %v", r.Content["name"])}, nil
}
