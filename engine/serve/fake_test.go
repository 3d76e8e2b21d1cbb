package serve_test

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/adapter"
)

// fake is a test adapter selected by `fake { mode = "..." }` in a tool: the
// adapter interface is the seam through which the engine meets HTTP, shell
// and SQL, and through which these tests observe what the server does with
// a call's context.
//
// Modes: "echo" returns the arguments as structured content; "block" waits
// until its context ends, announcing the start on started and the end on
// cancelled; "big" returns 8 MiB of text; "large" about 40 KB of text with
// every byte JSON escapes, "large_structured" such strings in structured
// content; "fail" fails.
type fake struct {
	started   chan string
	cancelled chan string
	// release ends blocked calls whose context never ends, so that a test
	// that found such a bug can still shut its servers down.
	release     chan struct{}
	releaseOnce sync.Once
}

func newFake() *fake {
	return &fake{started: make(chan string, 64), cancelled: make(chan string, 64), release: make(chan struct{})}
}

func (f *fake) releaseAll() { f.releaseOnce.Do(func() { close(f.release) }) }

func (f *fake) registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	reg.Register("fake", f)
	return reg
}

func (f *fake) CompileTool(b *adapter.ToolBlock) (adapter.Handler, hcl.Diagnostics) {
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "mode", Required: true}}})
	if diags.HasErrors() {
		return nil, diags
	}
	v, d := content.Attributes["mode"].Expr.Value(nil)
	if d.HasErrors() {
		return nil, d
	}
	h := &fakeHandler{f: f, tool: b.Tool, mode: v.AsString()}
	if h.mode == "capped" {
		return cappedHandler{h}, nil
	}
	if h.mode == "relay" {
		return relayHandler{h}, nil // fastrelay_test.go
	}
	return h, nil
}

// cappedHandler is mode "capped": it answers "capped" and declares output
// caps of fakeCaps bytes (Traits.MaxOutputBytes), which it reserves
// against the output budget.
type cappedHandler struct{ *fakeHandler }

const fakeCaps = 1 << 20 / 6

func (cappedHandler) Traits() adapter.Traits {
	return adapter.Traits{ReadsEval: true, MaxOutputBytes: fakeCaps}
}

func (cappedHandler) Call(context.Context, *adapter.Request) (*adapter.Output, error) {
	return &adapter.Output{Text: "capped"}, nil
}

// hostileText holds every class of byte a JSON string escapes.
const hostileText = "<a href=\"x\">&amp;</a> \\ \x00\x01\b\f\n\r\t\x1f\x7f \u2028\u2029 é日🎉 \xff\xe2\x82 \xed\xa0\x80 |\n"

type fakeHandler struct {
	f          *fake
	tool, mode string
}

func (h *fakeHandler) Vars() []string         { return nil }
func (h *fakeHandler) Traits() adapter.Traits { return adapter.Traits{ReadsEval: true} }

func (h *fakeHandler) Call(ctx context.Context, req *adapter.Request) (*adapter.Output, error) {
	switch h.mode {
	case "echo":
		return &adapter.Output{Structured: map[string]any{"echo": req.Args}}, nil
	case "big":
		return &adapter.Output{Text: strings.Repeat("x", 8<<20)}, nil
	case "large":
		return &adapter.Output{Text: strings.Repeat(hostileText, 400)}, nil
	case "large_structured":
		rows := make([]any, 0, 400)
		for i := range 400 {
			rows = append(rows, map[string]any{"id": i, "v": hostileText, "f": 0.1 * float64(i), "big": 1e21, "ok": i%2 == 0, "none": nil})
		}
		return &adapter.Output{Structured: map[string]any{"rows": rows, "<&>": "\u2028"}}, nil
	case "block":
		h.f.started <- h.tool
		select {
		case <-ctx.Done():
			h.f.cancelled <- h.tool
			return nil, ctx.Err()
		case <-h.f.release:
			return nil, errors.New("released by the test")
		}
	}
	return nil, errors.New("fake failure")
}
