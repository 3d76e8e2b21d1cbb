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

// The editor ends `mcpd lsp` with exit while it still holds the pipes open,
// as the LSP specification has it: code 0 after shutdown, 1 without. The
// server used to answer exit after shutdown with "server not initialized"
// and run until its stdin closed.
func TestLSPExit(t *testing.T) {
	tests := []struct {
		name     string
		shutdown bool
		want     int
	}{
		{"shutdown then exit", true, 0},
		{"exit without shutdown", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := mcpdCommand("lsp")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close() // held open until the test ends: exit alone must end the server
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr lockedBuffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					cmd.Process.Kill()
					cmd.Wait()
				}
			})
			conn := jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(pipeRW{stdout, stdin}, jsonrpc2.VSCodeObjectCodec{}),
				jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
			ctx := bounded(t)
			var init json.RawMessage
			if err := conn.Call(ctx, "initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &init); err != nil {
				t.Fatal(err)
			}
			conn.Notify(ctx, "initialized", map[string]any{})
			if tt.shutdown {
				if err := conn.Call(ctx, "shutdown", nil, nil); err != nil {
					t.Fatalf("shutdown: %v", err)
				}
				// Requests after shutdown are refused; exit still ends it.
				var h json.RawMessage
				if err := conn.Call(ctx, "textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": "file:///x.hcl"}, "position": map[string]any{"line": 0, "character": 0}}, &h); err == nil {
					t.Error("a request after shutdown was answered")
				}
			}
			if err := conn.Notify(ctx, "exit", nil); err != nil {
				t.Fatal(err)
			}
			if code, _ := waitExit(t, cmd, 20*time.Second); code != tt.want {
				t.Errorf("mcpd lsp exited %d, want %d; stderr:\n%s", code, tt.want, stderr.String())
			}
		})
	}
}
