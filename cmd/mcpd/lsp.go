package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpd/mcpd/authoring/lsp"
)

const lspUsage = `usage: mcpd lsp

Runs a language server for mcpd config files on stdin/stdout, for editors:
diagnostics as you type (the same as 'mcpd validate', for the whole
directory of the open file), completion, hover, go to definition and
formatting. It is started by the editor, not by hand; see docs/cli.md.
Logs go to stderr.
`

// lspCmd serves LSP on stdin and stdout until the editor sends exit or
// disconnects. The exit code is 0, or 1 after an exit without shutdown.
func lspCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newBareFlagSet("lsp", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv := lsp.New(registry(), lsp.Options{Logger: log, Version: mcpdVersion()})
	err := srv.Serve(ctx, stdio{stdin, stdout})
	if errors.Is(err, lsp.ErrExitWithoutShutdown) {
		return exitError(1) // as the LSP specification asks
	}
	return err
}

// stdio is the editor's end of the connection.
type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }
