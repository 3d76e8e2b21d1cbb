//go:build !linux

package shell

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpd/mcpd/engine/proc"
)

type runResult struct {
	status   syscall.WaitStatus
	timedOut bool
	ctxErr   error
}

// platformCheck refuses shell blocks where the process-group handling that
// the adapter's guarantees rest on is not implemented.
func platformCheck(rng hcl.Range) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "shell adapter not supported on " + runtime.GOOS,
		Detail:   "The shell adapter kills a command's whole process group on timeout and is implemented for Linux only.",
		Subject:  rng.Ptr(),
	}}
}

func runProcess(context.Context, *exec.Cmd, stdio, time.Duration, time.Duration, *proc.Supervisor) (runResult, error) {
	return runResult{}, &startError{errors.New("the shell adapter is implemented for Linux only")}
}
