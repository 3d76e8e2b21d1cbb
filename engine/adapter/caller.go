package adapter

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/mcpd/mcpd/engine/principal"
)

// Values an adapter hands its backend on behalf of the verified caller (a
// database session variable, a role), read from the principal at call time.
// They are declared with the path language of caller-bound params
// (`from_caller = "claims.tenant"`, see engine/principal) and checked, on
// every call, like an argument: a scalar, no NUL, at most max_length
// characters, matching pattern or one of enum.

// Unproducible explains why no caller can ever have path, or returns "" when
// some caller may. Only claims can be missing: every principal has a name.
func (c *AuthInfo) Unproducible(path string) string {
	claim, ok := strings.CutPrefix(path, "claims.")
	if c == nil || c.OpenClaims || !ok || c.Claims[claim] {
		return ""
	}
	known := make([]string, 0, len(c.Claims))
	for k := range c.Claims {
		known = append(known, k)
	}
	slices.Sort(known)
	list := "none"
	if len(known) > 0 {
		list = strings.Join(known, ", ")
	}
	return fmt.Sprintf("The auth block authenticates callers with API keys only, and no key's attributes declare %q (declared: %s): every call would be refused. Add it to the attributes of the keys that may call, or fix the path.", claim, list)
}

// DefaultCallerMaxLength bounds a caller value whose block sets no
// max_length: claims are small, and a value becomes a database setting or
// an environment variable.
const DefaultCallerMaxLength = 256

// A CallerValue is one value read from the verified caller.
type CallerValue struct {
	// Path is what it reads: "name" or "claims.<claim>[.<claim>...]".
	Path      string
	pattern   *regexp.Regexp
	enum      []string
	maxLength int
}

// CallerValueSchema is the schema of a block that declares one caller
// value (a database setting, an environment variable).
var CallerValueSchema = &Schema{Attributes: []hcl.AttributeSchema{
	{Name: "from_caller", Required: true},
	{Name: "pattern"},
	{Name: "enum"},
	{Name: "max_length"},
}}

// DecodeCallerValue decodes a block of CallerValueSchema. what names the
// block in messages ("setting \"tenant\""). The path must be one a caller
// can have: without an auth block it is an error, and a claim that no API
// key declares (with API keys only) a warning.
func (d *Decoder) DecodeCallerValue(body hcl.Body, what string) (*CallerValue, bool) {
	content, ok := d.Content(body, CallerValueSchema)
	if !ok {
		return nil, false
	}
	attrs := content.Attributes
	cv := &CallerValue{maxLength: DefaultCallerMaxLength}
	fc := attrs["from_caller"]
	path, ok := d.String(fc, what+": from_caller")
	if !ok {
		return nil, false
	}
	if !principal.ValidPath(path) {
		d.Errorf(fc.Expr.Range(), "Invalid from_caller",
			"%s: %q is not a caller attribute; write \"name\" (the caller's name) or \"claims.<claim>\" (a claim of its token or an attribute of its API key), e.g. \"claims.tenant\".", what, path)
		return nil, false
	}
	cv.Path = path
	if !d.CheckCallers(fc.Expr.Range(), what, path) {
		return nil, false
	}
	if a := attrs["pattern"]; a != nil {
		if p, ok := d.String(a, what+": pattern"); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				d.Errorf(a.Expr.Range(), "Invalid pattern", "%s: %v.", what, err)
			}
			cv.pattern = re
		}
	}
	if a := attrs["enum"]; a != nil {
		if v, ok := d.Static(a, what+": enum", cty.List(cty.String)); ok {
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				if e.IsNull() {
					d.Errorf(a.Expr.Range(), "Invalid enum", "%s: enum holds a null.", what)
					continue
				}
				cv.enum = append(cv.enum, e.AsString())
			}
			if len(cv.enum) == 0 {
				d.Errorf(a.Expr.Range(), "Invalid enum", "%s: enum must list at least one value.", what)
			}
		}
	}
	if a := attrs["max_length"]; a != nil {
		if n, ok := d.Int(a, what+": max_length", 1, 1<<20); ok {
			cv.maxLength = int(n)
		}
	}
	return cv, !d.HasErrors()
}

// CheckCallers checks, at rng, that path is something a caller can have:
// without an auth block no call has a principal (an error); with API keys
// only, a claim none of them declares is never there (a warning).
func (d *Decoder) CheckCallers(rng hcl.Range, what, path string) bool {
	if d.Scope.Auth == nil {
		d.Errorf(rng, "Caller identity without authentication",
			"%s is read from the authenticated caller, but the config has no auth block: stdio is the local user and HTTP without auth is anonymous, so no call would have a caller and every call would be refused. Add an auth block (api_key or oauth), or remove this.", what)
		return false
	}
	if why := d.Scope.Auth.Unproducible(path); why != "" {
		d.Warnf(rng, "Claim no caller has", "%s: %s", what, why)
	}
	return true
}

// Read returns the value for p as text, or the tool error saying what is
// missing or wrong. A caller without the attribute (the local user has
// none) is refused: there is no default, because a default identity would
// be one every unauthenticated call gets.
func (cv *CallerValue) Read(p *principal.Principal) (string, error) {
	what := cv.What()
	v, ok := p.Lookup(cv.Path)
	if !ok || v == nil {
		if p == nil {
			return "", fmt.Errorf("it runs as the authenticated caller, and this call has none (the local user); call it over HTTP with credentials")
		}
		return "", fmt.Errorf("it needs an authenticated caller with %s, and this caller has none", what)
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		s = strconv.FormatInt(x, 10)
	case int:
		s = strconv.Itoa(x)
	case json.Number:
		s = x.String()
	default:
		return "", fmt.Errorf("the caller's %s is not a single value (a string, number or boolean)", what)
	}
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return "", fmt.Errorf("the caller's %s contains a NUL character", what)
	case !utf8.ValidString(s):
		return "", fmt.Errorf("the caller's %s is not valid UTF-8", what)
	case utf8.RuneCountInString(s) > cv.maxLength:
		return "", fmt.Errorf("the caller's %s is longer than %d characters", what, cv.maxLength)
	case cv.enum != nil && !slices.Contains(cv.enum, s):
		return "", fmt.Errorf("the caller's %s is not one of the allowed values", what)
	case cv.pattern != nil && !cv.pattern.MatchString(s):
		return "", fmt.Errorf("the caller's %s does not match the pattern %s", what, cv.pattern)
	}
	return s, nil
}

// String describes the value's declaration (path and rules), for a
// backend's fingerprint.
func (cv *CallerValue) String() string {
	pattern := ""
	if cv.pattern != nil {
		pattern = cv.pattern.String()
	}
	return fmt.Sprintf("%s\x00%q\x00%q\x00%d", cv.Path, pattern, cv.enum, cv.maxLength)
}

// Enum is the values the block allows, nil when it sets no enum.
func (cv *CallerValue) Enum() []string { return slices.Clone(cv.enum) }

// What names the value in messages: "claim tenant" or "name".
func (cv *CallerValue) What() string {
	if claim, ok := strings.CutPrefix(cv.Path, "claims."); ok {
		return "claim " + claim
	}
	return cv.Path
}
