//go:build !linux

package proc

import (
	"context"
	"syscall"
)

// Supervisor: programs are supervised with Linux's process groups,
// subreapers and Pdeathsig; elsewhere Start fails.
type Supervisor struct{}

// NewSupervisor returns a Supervisor.
func NewSupervisor() *Supervisor { return &Supervisor{} }

// Start fails outside Linux.
func (s *Supervisor) Start(Command) (*Process, error) { return nil, ErrUnsupported }

// KillAll does nothing outside Linux.
func (s *Supervisor) KillAll() int { return 0 }

// Wait returns at once outside Linux.
func (s *Supervisor) Wait(context.Context) error { return nil }

// Live is always 0 outside Linux.
func (s *Supervisor) Live() int { return 0 }

// Process is never started outside Linux.
type Process struct{}

func (p *Process) Pid() int                                 { return 0 }
func (p *Process) Exited() <-chan struct{}                  { return nil }
func (p *Process) Signal(syscall.Signal)                    {}
func (p *Process) Wait() (ws syscall.WaitStatus, err error) { return ws, ErrUnsupported }
