package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// pipeRW is the editor's end of `mcpd lsp`'s stdin and stdout.
type pipeRW struct {
	io.Reader
	io.WriteCloser
}

// `mcpd lsp` speaks LSP on stdin/stdout: a misspelt database in a file it
// is told about is the diagnostic validate gives, and exit ends it.
func TestLSPCommand(t *testing.T) {
	clearEnv(t)
	dir := configDir(t, map[string]string{"tools.hcl": "tool \"x\" {\n  descripton = \"y\"\n}\n"})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runIO([]string{"lsp"}, inR, outW, &stderr)
		outW.Close()
	}()
	diags := make(chan json.RawMessage, 10)
	ctx := context.Background()
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(pipeRW{outR, inW}, jsonrpc2.VSCodeObjectCodec{}),
		jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Method == "textDocument/publishDiagnostics" {
				diags <- *req.Params
			}
			return nil, nil
		}))
	defer conn.Close()
	var init json.RawMessage
	if err := conn.Call(ctx, "initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &init); err != nil {
		t.Fatal(err)
	}
	conn.Notify(ctx, "initialized", map[string]any{})
	uri := "file://" + filepath.Join(dir, "tools.hcl")
	conn.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "hcl", "version": 1,
		"text": "tool \"x\" {\n  descripton = \"y\"\n}\n"}})
	select {
	case p := <-diags:
		if !strings.Contains(string(p), `An argument named \"descripton\" is not expected here. Did you mean \"description\"?`) {
			t.Errorf("diagnostics = %s", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no diagnostics")
	}
	if err := conn.Call(ctx, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	conn.Notify(ctx, "exit", nil)
	inW.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("mcpd lsp exited %d: %s", c, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mcpd lsp did not exit")
	}
}
