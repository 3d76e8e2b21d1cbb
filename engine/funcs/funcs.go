// Package funcs is the function library of mcpd's config language: env() and
// file() for secrets and shared text, encoders, and the usual string and
// collection functions. Every file of a config gets its own table, because
// file() paths are relative to the file that calls it.
package funcs

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/mcpd/mcpd/engine/redact"
)

// Table returns the functions available to expressions in a file whose
// directory is dir.
func Table(dir string) map[string]function.Function {
	return RecordingTable(dir, nil)
}

// RecordingTable is Table whose env(), file() and filebase64() record every
// value they read in secrets, so that it can be redacted from what the
// model sees. A default given to env() is not recorded: it is written in the
// config, not read. A nil secrets records nothing.
func RecordingTable(dir string, secrets *redact.Set) map[string]function.Function {
	return TableWith(dir, Options{Secrets: secrets})
}

// Options select the variants of the table's host-reading functions.
type Options struct {
	// Secrets, when not nil, records every value env(), file() and
	// filebase64() read (see RecordingTable).
	Secrets *redact.Set
	// UnsetEnvUnknown makes env() of an unset variable without a default an
	// unknown string instead of an error, so that `mcpd validate` can check
	// a config without its secrets: consumers skip the checks that need the
	// value, and the caller reports the variable once (see UnsetEnv).
	UnsetEnvUnknown bool
}

// TableWith is Table with the variants o selects.
func TableWith(dir string, o Options) map[string]function.Function {
	secrets := o.Secrets
	return map[string]function.Function{
		"env":           envFunc(secrets, o.UnsetEnvUnknown),
		"file":          fileFunc(dir, false, secrets),
		"filebase64":    fileFunc(dir, true, secrets),
		"base64encode":  base64EncodeFunc,
		"base64decode":  base64DecodeFunc,
		"urlencode":     urlEncodeFunc,
		"jsonencode":    stdlib.JSONEncodeFunc,
		"jsondecode":    stdlib.JSONDecodeFunc,
		"format":        bounded("format", stdlib.FormatFunc, formatCost),
		"join":          bounded("join", stdlib.JoinFunc, joinCost),
		"split":         stdlib.SplitFunc,
		"lower":         stdlib.LowerFunc,
		"upper":         stdlib.UpperFunc,
		"title":         stdlib.TitleFunc,
		"trimspace":     stdlib.TrimSpaceFunc,
		"trim":          stdlib.TrimFunc,
		"trimprefix":    stdlib.TrimPrefixFunc,
		"trimsuffix":    stdlib.TrimSuffixFunc,
		"replace":       bounded("replace", stdlib.ReplaceFunc, replaceCost(false)),
		"regex_replace": bounded("regex_replace", stdlib.RegexReplaceFunc, replaceCost(true)),
		"substr":        stdlib.SubstrFunc,
		"strlen":        stdlib.StrlenFunc,
		"length":        stdlib.LengthFunc,
		"coalesce":      stdlib.CoalesceFunc,
		"concat":        stdlib.ConcatFunc,
		"contains":      stdlib.ContainsFunc,
		"keys":          stdlib.KeysFunc,
		"values":        stdlib.ValuesFunc,
		"lookup":        stdlib.LookupFunc,
		"merge":         stdlib.MergeFunc,
		"min":           stdlib.MinFunc,
		"max":           stdlib.MaxFunc,
		"abs":           stdlib.AbsoluteFunc,
		"floor":         stdlib.FloorFunc,
		"ceil":          stdlib.CeilFunc,
		"tostring":      toFunc(cty.String),
		"tonumber":      toFunc(cty.Number),
		"tobool":        toFunc(cty.Bool),
	}
}

// env("NAME") returns the variable's value and fails when it is not set;
// env("NAME", "default") returns the default instead. The error never
// contains a value, only the name.
func envFunc(secrets *redact.Set, unsetUnknown bool) function.Function {
	return function.New(&function.Spec{
		Params:   []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam: &function.Parameter{Name: "default", Type: cty.String},
		Type:     function.StaticReturnType(cty.String),
		RefineResult: func(b *cty.RefinementBuilder) *cty.RefinementBuilder {
			return b.NotNull()
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			name := args[0].AsString()
			if len(args) > 2 {
				return cty.NilVal, fmt.Errorf("env takes a name and at most one default")
			}
			if v, ok := os.LookupEnv(name); ok {
				if unfilledPlaceholder(name, v) {
					// The value is the placeholder itself, not a secret.
					return cty.NilVal, fmt.Errorf("environment variable %s is %q, a placeholder its host did not fill in: put the value in the host's config, or set %s where the host starts", name, v, name)
				}
				secrets.Add(v)
				return cty.StringVal(v), nil
			}
			if len(args) == 2 {
				return args[1], nil
			}
			if unsetUnknown {
				return cty.UnknownVal(cty.String).RefineNotNull(), nil
			}
			return cty.NilVal, fmt.Errorf("environment variable %s is not set", name)
		},
	})
}

// unfilledPlaceholder reports whether v is a placeholder for the variable
// name itself that a host passed on as it was written: ${NAME}, $NAME,
// ${env:NAME} or ${input:NAME} (what `mcpd client-config` writes). No real
// value of NAME is its own placeholder, and serving with one fails later,
// further from the cause (a database refusing "${DATABASE_URL}").
func unfilledPlaceholder(name, v string) bool {
	switch v {
	case "${" + name + "}", "$" + name, "${env:" + name + "}", "${input:" + name + "}":
		return true
	}
	return false
}

// fileFunc reads a file relative to dir. Text must be valid UTF-8; use
// filebase64 for binary content.
func fileFunc(dir string, asBase64 bool, secrets *redact.Set) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := Resolve(dir, args[0].AsString())
			data, err := os.ReadFile(p)
			if err != nil {
				return cty.NilVal, fmt.Errorf("reading %s: %w", p, unwrapPathError(err))
			}
			if asBase64 {
				// The content too: a text file read this way may still be
				// echoed as text. The encoding is recorded as it is because
				// the content is trimmed when recorded.
				secrets.Add(string(data))
				enc := base64.StdEncoding.EncodeToString(data)
				secrets.Add(enc)
				return cty.StringVal(enc), nil
			}
			if !utf8.Valid(data) {
				return cty.NilVal, fmt.Errorf("%s is not valid UTF-8 text; use filebase64 for binary files", p)
			}
			secrets.Add(string(data))
			return cty.StringVal(string(data)), nil
		},
	})
}

// Resolve makes a path relative to dir absolute, leaving absolute paths as
// they are.
func Resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

var base64EncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(base64.StdEncoding.EncodeToString([]byte(args[0].AsString()))), nil
	},
})

var base64DecodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		b, err := base64.StdEncoding.DecodeString(args[0].AsString())
		if err != nil {
			return cty.NilVal, fmt.Errorf("invalid base64: %w", err)
		}
		if !utf8.Valid(b) {
			return cty.NilVal, fmt.Errorf("decoded bytes are not valid UTF-8")
		}
		return cty.StringVal(string(b)), nil
	},
})

var urlEncodeFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "str", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.StringVal(url.QueryEscape(args[0].AsString())), nil
	},
})

func toFunc(t cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true}},
		Type:   function.StaticReturnType(t),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return stdlibConvert(args[0], t)
		},
	})
}
