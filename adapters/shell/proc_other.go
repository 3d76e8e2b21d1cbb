//go:build !linux

package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/hashicorp/hcl/v2"
)

type runResult struct {
	state    *os.ProcessState
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

func killGroup(int) {}

func runProcess(context.Context, *exec.Cmd, stdio, time.Duration, time.Duration, *ProcessGroups) (runResult, error) {
	return runResult{}, &startError{errors.New("the shell adapter is implemented for Linux only")}
}
