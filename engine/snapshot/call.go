package snapshot

import (
	"encoding/json"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/ask"
	"github.com/mcpd/mcpd/engine/principal"
)

// The call API, in net/http's spirit: a request value in, a result and an
// error out, one entry point per verb (Tool.Call, Prompt.Get,
// Snapshot.Read). Both protocol eras, the CLI, the tests and resource reads
// come through it; what differs between them is in the request: who calls,
// where progress and log records go, and how the questions of the ask
// blocks are answered (Answers).

// CallRequest is one call of a tool.
type CallRequest struct {
	// Args are the arguments as the client sent them: a JSON object, or
	// empty for none.
	Args json.RawMessage
	// Caller is the verified caller; nil for the local user (stdio, HTTP
	// without authentication, the CLI). Scopes, caller-bound params, rate
	// limits and requestState are decided by it.
	Caller *principal.Principal
	// Progress and Log receive the call's progress and log records,
	// redacted; nil: nowhere.
	Progress ProgressFunc
	Log      LogFunc
	// Answers is how the tool's ask blocks get answered.
	Answers ask.Answers
	// Tasks: the caller takes a task of the backend's as the answer
	// (adapter.Request.Tasks); when the adapter answers with one, Task is
	// set and the result is empty (taskrelay.go).
	Tasks bool
	Task  *adapter.BackendTask
}

// GetRequest is one get of a prompt.
type GetRequest struct {
	Args    map[string]string
	Caller  *principal.Principal
	Answers ask.Answers
}

// ReadRequest is one read of a resource or of an instance of a template.
type ReadRequest struct {
	URI    string
	Caller *principal.Principal
	// Toolset, when not nil, limits the read to its resources and
	// templates: any other URI is not found.
	Toolset *Toolset
}

// callerID names a caller in a requestState's binding.
func callerID(p *principal.Principal) string {
	if p == nil {
		return ""
	}
	return p.Method + ":" + p.Name
}
