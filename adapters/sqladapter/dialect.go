package sqladapter

import (
	"strconv"
	"strings"
)

// dialect is the SQL flavour of one driver: how its placeholders, quoted
// identifiers, strings and comments are written.
type dialect uint8

const (
	sqlite dialect = iota + 1
	postgres
	mysql
)

// dialects maps the `driver` attribute to a dialect.
var dialects = map[string]dialect{"sqlite": sqlite, "postgres": postgres, "mysql": mysql}

func (d dialect) String() string {
	switch d {
	case sqlite:
		return "sqlite"
	case postgres:
		return "postgres"
	case mysql:
		return "mysql"
	}
	return "unknown"
}

// quoteIdent quotes one identifier so that the database reads it as a name
// and never as SQL, whatever it contains.
func (d dialect) quoteIdent(name string) string {
	q := `"`
	if d == mysql {
		q = "`"
	}
	return q + strings.ReplaceAll(name, q, q+q) + q
}

// nativePlaceholder is the driver's own placeholder for the n-th distinct
// bound parameter (1-based).
func (d dialect) nativePlaceholder(n int) string {
	if d == postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// numberedPlaceholders reports whether a parameter used twice is bound once
// ($1 twice) rather than once per occurrence (? twice).
func (d dialect) numberedPlaceholders() bool { return d == postgres }
