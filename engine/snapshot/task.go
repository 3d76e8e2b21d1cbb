package snapshot

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/tasks"
)

// Compiling a tool's task block (docs/config.md, "task"); running its
// calls as tasks is engine/tasks' and engine/serve's.

// Task is how the tool's calls run as tasks; Mode is tasks.Never without
// a task block.
func (t *Tool) Task() tasks.Policy { return t.task }

func compileTask(tc *config.Tool) (tasks.Policy, hcl.Diagnostics) {
	c := tc.Task
	if c == nil {
		return tasks.Policy{}, nil
	}
	p := tasks.Policy{Mode: tasks.Optional, TTL: tasks.DefaultTTL, MaxPerCaller: tasks.DefaultMaxPerCaller, PollInterval: tasks.DefaultPollInterval}
	var diags hcl.Diagnostics
	if c.Mode != nil {
		m, d := taskMode(c.Mode)
		diags = append(diags, d...)
		p.Mode = m
	}
	if c.TTL != nil {
		d, dd := staticDuration(c.TTL, nil)
		diags = append(diags, dd...)
		if !dd.HasErrors() && (d < time.Second || d > 7*24*time.Hour) {
			diags = append(diags, attrDiag(c.TTL, "ttl, how long a task is kept once it has ended, is from 1s to 168h"))
		}
		p.TTL = d
	}
	if c.MaxPerCaller != nil {
		n, d := staticCount(c.MaxPerCaller, 1, 10000)
		diags = append(diags, d...)
		p.MaxPerCaller = n
	}
	if c.PollInterval != nil {
		d, dd := staticDuration(c.PollInterval, nil)
		diags = append(diags, dd...)
		if !dd.HasErrors() && (d < 10*time.Millisecond || d > time.Hour) {
			diags = append(diags, attrDiag(c.PollInterval, "poll_interval is from 10ms to 1h"))
		}
		p.PollInterval = d
	}
	if c.Asks != nil {
		first, d := taskAsks(c.Asks)
		diags = append(diags, d...)
		p.AsksFirst = first
	}
	return p, diags
}

// taskAsks reads the asks attribute: whether the ask blocks are answered
// "first" (before the task is created) or "inside" the task.
func taskAsks(a *hcl.Attribute) (bool, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return false, d
	}
	if !v.IsNull() && v.IsKnown() && v.Type() == cty.String {
		switch v.AsString() {
		case "inside":
			return false, nil
		case "first":
			return true, nil
		}
	}
	return false, hcl.Diagnostics{attrDiag(a, "asks is \"inside\" (the task asks its questions as input_required on tasks/get; the default) or \"first\" (they are answered through input_required rounds of tools/call, and the task is created on the last round)")}
}

func taskMode(a *hcl.Attribute) (tasks.Mode, hcl.Diagnostics) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() {
		return tasks.Never, d
	}
	if !v.IsNull() && v.IsKnown() && v.Type() == cty.String {
		switch v.AsString() {
		case "never":
			return tasks.Never, nil
		case "optional":
			return tasks.Optional, nil
		case "required":
			return tasks.Required, nil
		}
		return tasks.Never, hcl.Diagnostics{attrDiag(a, fmt.Sprintf("mode is \"optional\" (a client that uses tasks gets one), \"required\" (only clients that use tasks may call the tool) or \"never\", not %q", v.AsString()))}
	}
	return tasks.Never, hcl.Diagnostics{attrDiag(a, "mode is \"optional\", \"required\" or \"never\"")}
}
