// Package tasks runs tool calls as tasks: a call that answers at once with
// a task id, runs on in the background, and is polled, answered (when it
// asks its user something) and cancelled by further requests, from any
// replica when the store is shared.
//
// A task is a Record in a Store: in this process's memory, or in the shared
// state (Redis) so that every replica answers for it. The replica that
// runs a task holds a lease on it, renewed while it runs; a poller that
// finds the lease run out marks the task failed, so a replica that dies
// (SIGKILL included) leaves its tasks failed, never working forever. A
// task belongs to the caller that created it: any other caller is told
// exactly what an unknown id gets.
//
// The package knows nothing of MCP's wire or of tools: engine/serve turns
// its records into the protocol's answers, and hands the Manager the
// function that runs one call.
package tasks

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Mode is whether a tool's calls run as tasks.
type Mode int

const (
	// Never: every call is a plain call.
	Never Mode = iota
	// Optional: a client that uses tasks gets a task, any other a plain
	// call.
	Optional
	// Required: a client that does not use tasks is refused.
	Required
)

func (m Mode) String() string {
	switch m {
	case Optional:
		return "optional"
	case Required:
		return "required"
	}
	return "never"
}

// Spec is what a task is created for: whose, which tool, how.
type Spec struct {
	// Owner is the key the task is bound to; Caller and AuthMethod name
	// the caller for people (Record).
	Owner, Caller, AuthMethod string
	Tool                      string
	Policy                    Policy
}

// Policy is a tool's task block, compiled.
type Policy struct {
	Mode Mode
	// TTL is how long a task is kept once it has ended.
	TTL time.Duration
	// MaxPerCaller bounds the tasks of one caller that have not ended.
	MaxPerCaller int
	// PollInterval is the interval clients are told to poll at.
	PollInterval time.Duration
	// AsksFirst: the tool's ask blocks are answered before the task is
	// created (input_required rounds of tools/call), not inside it.
	AsksFirst bool
}

// Defaults of a task block's attributes.
const (
	DefaultTTL          = time.Hour
	DefaultMaxPerCaller = 16
	DefaultPollInterval = time.Second
)

// Status is where a task is in its life.
type Status string

const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether a task in status s has ended.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// Record is one task as a store keeps it.
type Record struct {
	ID    string `json:"id"`
	Owner string `json:"owner"` // the caller's key
	// Caller names the caller and AuthMethod how it was verified, for the
	// audit log and the console.
	Caller     string `json:"caller,omitempty"`
	AuthMethod string `json:"auth_method,omitempty"`
	Tool       string `json:"tool"`
	Status     Status `json:"status"`
	Message    string `json:"message,omitempty"` // what the task is doing, or why it ended
	// Created and Updated are when the task was created and last changed.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// TTL is how long it is kept once ended; Poll the interval clients
	// are told to poll at.
	TTL  time.Duration `json:"ttl"`
	Poll time.Duration `json:"poll"`
	// Result is the call's result (JSON), once completed; Error what
	// ended it, once failed.
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
	// Inputs are the questions the task waits for answers to (a JSON
	// object by key), while input_required; Answers the answers received
	// and not yet taken by the replica running it.
	Inputs  map[string]json.RawMessage `json:"inputs,omitempty"`
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Replica runs the task, and holds it until Lease: past it, with the
	// task not ended, the replica is taken to be gone.
	Replica string    `json:"replica,omitempty"`
	Lease   time.Time `json:"lease,omitempty"`
	// Expires is when the record is removed.
	Expires time.Time `json:"expires"`
}

// Error is what ended a failed task: a JSON-RPC error.
type Error struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// Errors of the stores and the Manager.
var (
	// ErrNotFound: no task has this id for this caller.
	ErrNotFound = errors.New("unknown task")
	// ErrTooMany: the caller holds as many tasks as the tool allows.
	ErrTooMany = errors.New("too many tasks")
)

// newID returns a task id: 128 random bits, which no caller can guess.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lostMessage is the message of a task whose replica stopped renewing it.
const lostMessage = "the mcpd replica running this task stopped before it ended"

// expireLost marks r failed when it has not ended and its lease ran out
// before now; it reports whether it changed r.
func expireLost(r *Record, now time.Time) bool {
	if r.Status.Terminal() || r.Lease.IsZero() || !now.After(r.Lease) {
		return false
	}
	r.Status, r.Message, r.Updated = Failed, lostMessage, now
	r.Error = &Error{Code: codeInternal, Message: lostMessage}
	r.Inputs, r.Answers, r.Lease = nil, nil, time.Time{}
	r.Expires = now.Add(r.TTL)
	return true
}

// codeInternal is JSON-RPC's internal error.
const codeInternal = -32603
