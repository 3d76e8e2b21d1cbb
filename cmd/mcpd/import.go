package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// importProgram is the program that carries `mcpd import`. It is separate
// so that mcpd does not link the OpenAPI parser, whose start-up tables
// would stay in the heap of every `mcpd serve` (see cmd/mcpd-import).
const importProgram = "mcpd-import"

// importCmd runs mcpd-import with the arguments, connected to this
// process's input and output, and ends with its exit status.
func importCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	path, err := findImportProgram()
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		return exitError(exit.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", path, err)
	}
	return nil
}

// findImportProgram looks for mcpd-import where $MCPD_IMPORT says, then
// beside this executable (go install and the release put them together),
// then on PATH.
func findImportProgram() (string, error) {
	if p := os.Getenv("MCPD_IMPORT"); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), importProgram)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(importProgram); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s, the program that converts documents for mcpd import, is neither beside mcpd nor on PATH; install it beside mcpd (from a checkout: go install ./cmd/...)", importProgram)
}
