package snapshot

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/config"
	"github.com/mcpd/mcpd/engine/redact"
	"github.com/mcpd/mcpd/engine/shape"
)

// LogFunc sends one log record (notifications/message) to the client of the
// call being served; level is one of adapter.LogLevels. The server drops
// the records the client did not ask for.
type LogFunc func(level, message string)

// logSpec is one compiled `log` block of a tool.
type logSpec struct {
	level   string
	before  bool // sent before the adapter runs, over args only
	message *shape.Program
}

// compileLog checks one `log` block: level and when are literal strings,
// message an expr-lang expression over args (and, after the call, the
// adapter's variables), compiled like result expressions.
func compileLog(l *config.Log, params, vars []string) (*logSpec, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	spec := &logSpec{level: "info"}
	if l.Level != nil {
		if s, ok := literalString(l.Level, &diags); ok {
			if adapter.ValidLogLevel(s) {
				spec.level = s
			} else {
				diags = append(diags, attrDiag(l.Level, fmt.Sprintf("level must be one of %s, not %q", strings.Join(adapter.LogLevels, ", "), s)))
			}
		}
	}
	if l.When != nil {
		if s, ok := literalString(l.When, &diags); ok {
			switch s {
			case "before":
				spec.before = true
				vars = nil // the adapter has not run yet
			case "after":
			default:
				diags = append(diags, attrDiag(l.When, fmt.Sprintf("when must be \"before\" or \"after\", not %q", s)))
			}
		}
	}
	if l.Message == nil {
		// Required: decoding has reported it missing.
		return spec, diags
	}
	p, d := shape.Compile(l.Message, vars, params)
	diags = append(diags, d...)
	spec.message = p
	return spec, diags
}

// literalString reads a static string attribute; a non-string or an
// expression that needs variables is a diagnostic.
func literalString(a *hcl.Attribute, diags *hcl.Diagnostics) (string, bool) {
	v, d := a.Expr.Value(nil)
	if d.HasErrors() || v.IsNull() || v.Type() != cty.String {
		*diags = append(*diags, attrDiag(a, fmt.Sprintf("%s must be a literal string", a.Name)))
		return "", false
	}
	return v.AsString(), true
}

// sendLogs sends the records of the tool's `log` blocks of one phase
// (before or after the adapter call) over env. A message that fails to
// evaluate is left out and reported in mcpd's own log: a log record is a
// courtesy to the client, not part of the result.
func (t *Tool) sendLogs(before bool, env map[string]any, log LogFunc) {
	for _, l := range t.logs {
		if l.before != before {
			continue
		}
		v, err := l.message.Run(env)
		if err != nil {
			slog.Warn("log message of tool", "tool", t.Def.Name, "err", t.redact.String(err.Error()))
			continue
		}
		log(l.level, stringify(v))
	}
}

// redactLog wraps log so that records never carry the config's secrets nor
// the values of the call's sensitive arguments (which stay out of logs).
func (t *Tool) redactLog(raw json.RawMessage, log LogFunc) LogFunc {
	sensitive := redact.ForArgs(t.sensitive, raw)
	if t.redact == nil && sensitive == nil {
		return log
	}
	return func(level, msg string) { log(level, sensitive.String(t.redact.String(msg))) }
}
