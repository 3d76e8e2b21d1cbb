package adapter

import "github.com/hashicorp/hcl/v2"

// A Linter is an Adapter that also gives advice about a tool's adapter
// block: things that are valid but that a reviewer would question, and that
// only the adapter can see (whether a query writes, what a process
// inherits). `mcpd lint` asks every adapter that implements it; the engine
// itself never imports an adapter.
type Linter interface {
	// LintTool returns warnings (hcl.DiagWarning) with source ranges. It
	// must not touch the network, the database or the file system beyond
	// reading files the block names, and must tolerate a block that does
	// not compile: lint is advice, validate reports the errors.
	LintTool(t *LintTool) hcl.Diagnostics
}

// LintTool is one tool's adapter block, as LintTool sees it.
type LintTool struct {
	Tool  string    // the tool's name
	Body  hcl.Body  // the adapter block's body
	Range hcl.Range // the adapter block's definition range
	// ReadOnly and Destructive are the tool's annotations, nil when the
	// tool does not set them.
	ReadOnly, Destructive *bool
	// Eval has the functions of the file the tool is declared in (file(),
	// env(), ...) and no variables.
	Eval *hcl.EvalContext
	// BackendBody returns the body of a top-level backend block, such as
	// database "main", for settings the advice depends on (the driver).
	BackendBody func(blockType, name string) (hcl.Body, bool)
}
