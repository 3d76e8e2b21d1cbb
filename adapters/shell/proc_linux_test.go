package shell

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/funcs"
)

// After pipeReadDelay a reader takes what the pipe holds, without
// waiting for EOF from a writer that never closes.
func TestDrainBufferedTakesWhatIsThere(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	data := strings.Repeat("x", 50000)
	if _, err := w.WriteString(data); err != nil {
		t.Fatal(err)
	}
	c := newCapture(1 << 20)
	done := make(chan struct{})
	go func() {
		takeBuffered(r, c, make([]byte, 4096))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("takeBuffered waited for more data")
	}
	if string(c.head) != data {
		t.Errorf("took %d bytes, want %d", len(c.head), len(data))
	}
}

func TestAwaitReadersStopsAtTheDelay(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // held open: no EOF before the delay
	c := newCapture(1 << 20)
	done := readStream(r, c)
	if _, err := w.WriteString("before"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	awaitReaders([]*os.File{r}, []chan struct{}{done}, 100*time.Millisecond)
	if elapsed := time.Since(start); elapsed < 100*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("returned after %v", elapsed)
	}
	if string(c.head) != "before" {
		t.Errorf("got %q", c.head)
	}
}

// BenchmarkPrepareAndResult measures the work a call does in mcpd besides
// running the process: argv templating, the environment and building the
// Output (the executable was resolved at load).
func BenchmarkPrepareAndResult(b *testing.B) {
	scope := &adapter.Scope{Dir: ".", Functions: funcs.Table("."), Params: map[string]string{"n": "integer", "s": "string"}}
	file, diags := hclsyntax.ParseConfig([]byte(`shell {
  command = ["echo", "-n", args.n, args.s]
  env     = { A = "b" }
}`), "bench.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	content, _ := file.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "shell"}}})
	hd, diags := New().CompileTool(&adapter.ToolBlock{Tool: "t", Type: "shell", Body: content.Blocks[0].Body, Range: content.Blocks[0].DefRange, Scope: scope})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	h := hd.(*handler)
	args := map[string]any{"n": float64(10), "s": "hello"}
	ectx := scope.CallContext(args)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.argv(ectx); err != nil {
			b.Fatal(err)
		}
		env, err := h.environ(ectx)
		if err != nil {
			b.Fatal(err)
		}
		_ = env
		stdout, stderr := newCapture(h.maxOutput), newCapture(h.maxOutput)
		_, _ = stdout.Write([]byte("10 hello"))
		if _, err := h.result(0, stdout, stderr); err != nil {
			b.Fatal(err)
		}
	}
}
