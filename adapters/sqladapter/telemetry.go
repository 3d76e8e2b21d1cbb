package sqladapter

import (
	"strconv"

	"github.com/mcpd/mcpd/engine/adapter"
)

// The attributes of OpenTelemetry's semantic conventions for database
// client spans (https://opentelemetry.io/docs/specs/semconv/database/)
// that a call's span carries. All are known at load time: the database
// from the DSN (never its user or password), the statement from the
// config. db.query.text is the query as written, with its :name
// placeholders: the arguments are bound by the driver and never in it.

var _ adapter.Remote = (*handler)(nil)

// RemoteAttributes are db.system.name, db.namespace, server.address and
// server.port of the database, and db.operation.name and db.query.text of
// the statement.
func (h *handler) RemoteAttributes() []adapter.Attribute {
	attrs := append([]adapter.Attribute(nil), h.be.cfg.remote...)
	if h.query.verb != "" {
		attrs = append(attrs, adapter.Attribute{Key: "db.operation.name", Value: h.query.verb})
	}
	if h.text != "" {
		attrs = append(attrs, adapter.Attribute{Key: "db.query.text", Value: h.text})
	}
	if h.identity != nil {
		// Each call adds the role it took (mcpd.db.role); the settings'
		// names are known now, their values never recorded.
		attrs = append(attrs, adapter.Attribute{Key: "mcpd.db.identity", Value: true})
	}
	return attrs
}

// remoteAttributes are the attributes of a database: its system, its
// name (namespace) and its server, each left out when empty.
func remoteAttributes(system, namespace, host string, port int) []adapter.Attribute {
	attrs := []adapter.Attribute{{Key: "db.system.name", Value: system}}
	if namespace != "" {
		attrs = append(attrs, adapter.Attribute{Key: "db.namespace", Value: namespace})
	}
	if host != "" {
		attrs = append(attrs, adapter.Attribute{Key: "server.address", Value: host})
		if port > 0 {
			attrs = append(attrs, adapter.Attribute{Key: "server.port", Value: port})
		}
	}
	return attrs
}

func atoiOrZero(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
