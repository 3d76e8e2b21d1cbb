package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/mcpd/mcpd/adapters/builtin"
	"github.com/mcpd/mcpd/engine/adapter"
)

// registry holds every shipped adapter, as mcpd's own.
func registry() *adapter.Registry {
	reg := adapter.NewRegistry()
	builtin.Register(reg)
	return reg
}

// seen is one request the API server received.
type seen struct {
	Method, Path string
	Query        url.Values
	Header       http.Header
	Body         any
	Op           string // the operationId the request was routed to
}

// apiServer is an httptest server that plays the API a document
// describes: every request is routed and validated against the document
// (path, method, parameters, body, credentials) with kin-openapi's request
// validator, and answered with an instance of the operation's response
// schema. A request that does not match the document is answered 400 and
// recorded as an error.
type apiServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []seen
	errs   []string
	creds  map[string]string // security scheme → the value the header/query must carry
	router routers.Router
}

func newAPIServer(t *testing.T, doc *openapi3.T, basePath string, creds map[string]string) *apiServer {
	t.Helper()
	a := startAPIServer(t, creds)
	a.route(t, doc, basePath)
	return a
}

// startAPIServer starts the server; it answers once route has been called.
func startAPIServer(t *testing.T, creds map[string]string) *apiServer {
	a := &apiServer{creds: creds}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

// route makes the server play doc, served under basePath. It changes the
// document's servers.
func (a *apiServer) route(t *testing.T, doc *openapi3.T, basePath string) {
	t.Helper()
	// Route against this server: the document's servers name the real API.
	doc.Servers = openapi3.Servers{{URL: a.URL + basePath}}
	r, err := legacy.NewRouter(doc, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaDefaultsValidation(), openapi3.DisableSchemaPatternValidation(), openapi3.DisableSchemaFormatValidation())
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	a.router = r
}

func (a *apiServer) fail(w http.ResponseWriter, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	a.mu.Lock()
	a.errs = append(a.errs, msg)
	a.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(raw))
	// The router matches the document's server URL: a server-side
	// request's URL holds only the path.
	r.URL.Scheme, r.URL.Host = "http", r.Host
	route, pathParams, err := a.router.FindRoute(r)
	if err != nil {
		a.fail(w, "%s %s: no operation of the document: %v", r.Method, r.URL.Path, err)
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: pathParams, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: a.authenticate, MultiError: true},
	}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		a.fail(w, "%s %s (%s) does not match the document: %v", r.Method, r.URL.String(), route.Operation.OperationID, err)
		return
	}
	var body any
	if len(raw) > 0 {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			v, _ := url.ParseQuery(string(raw))
			body = v
		} else if err := json.Unmarshal(raw, &body); err != nil {
			a.fail(w, "body is not JSON: %v", err)
			return
		}
	}
	a.mu.Lock()
	a.reqs = append(a.reqs, seen{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body, Op: route.Operation.OperationID})
	a.mu.Unlock()
	code, schema := response(route.Operation)
	if schema == nil {
		w.WriteHeader(code)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(instance(schema, 0))
}

// authenticate checks that a request carries the credential of a security
// scheme, with the value the test put in the environment.
func (a *apiServer) authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	want, ok := a.creds[in.SecuritySchemeName]
	if !ok {
		return fmt.Errorf("no credentials for %s in this test", in.SecuritySchemeName)
	}
	r := in.RequestValidationInput.Request
	s := in.SecurityScheme
	var got string
	switch {
	case s.Type == "apiKey" && s.In == "header":
		got = r.Header.Get(s.Name)
	case s.Type == "apiKey" && s.In == "query":
		got = r.URL.Query().Get(s.Name)
	default:
		got = r.Header.Get("Authorization")
	}
	if got != want {
		return in.NewError(fmt.Errorf("%s: got %q, want %q", in.SecuritySchemeName, got, want))
	}
	return nil
}

func (a *apiServer) take() ([]seen, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, e := a.reqs, a.errs
	a.reqs, a.errs = nil, nil
	return r, e
}

// response is the status and JSON schema the converter takes for the
// tool's output: 200, else 201, else the first 2xx.
func response(op *openapi3.Operation) (int, *openapi3.SchemaRef) {
	if op.Responses == nil {
		return 200, nil
	}
	m := op.Responses.Map()
	var keys []string
	for k := range m {
		if len(k) == 3 && k[0] == '2' {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		rank := func(k string) string {
			switch k {
			case "200":
				return "0"
			case "201":
				return "1"
			}
			return k
		}
		return rank(keys[i]) < rank(keys[j])
	})
	if len(keys) == 0 {
		return 200, nil
	}
	var code int
	fmt.Sscanf(keys[0], "%d", &code)
	r := m[keys[0]]
	if r.Value == nil {
		return code, nil
	}
	for mt, media := range r.Value.Content {
		if strings.Contains(mt, "json") && media.Schema != nil && code != 204 {
			return code, media.Schema
		}
	}
	return code, nil
}

// instance makes a small value that satisfies a schema: the required
// properties of objects, the first enum value, values of the usual
// formats.
func instance(ref *openapi3.SchemaRef, depth int) any {
	if ref == nil || ref.Value == nil || depth > 20 {
		return nil
	}
	s := ref.Value
	if len(s.AllOf) > 0 {
		out := map[string]any{}
		for _, p := range s.AllOf {
			if m, ok := instance(p, depth+1).(map[string]any); ok {
				for k, v := range m {
					out[k] = v
				}
			}
		}
		if m, ok := instanceOf(s, depth).(map[string]any); ok {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	if len(s.OneOf) > 0 {
		return instance(s.OneOf[0], depth+1)
	}
	if len(s.AnyOf) > 0 {
		return instance(s.AnyOf[0], depth+1)
	}
	return instanceOf(s, depth)
}

func instanceOf(s *openapi3.Schema, depth int) any {
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	if s.Const != nil {
		return s.Const
	}
	typ := ""
	for _, t := range s.Type.Slice() {
		if t != "null" {
			typ = t
			break
		}
	}
	if typ == "" && len(s.Properties) > 0 {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		for _, name := range s.Required {
			out[name] = instance(s.Properties[name], depth+1)
		}
		return out
	case "array":
		out := []any{}
		for i := uint64(0); i < s.MinItems || (i == 0 && s.Items != nil && depth < 3); i++ {
			out = append(out, instance(s.Items, depth+1))
		}
		return out
	case "integer":
		if s.Min != nil {
			return int64(*s.Min) + 1
		}
		return 1
	case "number":
		if s.Min != nil {
			return *s.Min + 1
		}
		return 1.5
	case "boolean":
		return true
	case "string":
		return stringOf(s.Format, s.MinLength)
	}
	return nil
}

func stringOf(format string, minLen uint64) string {
	switch format {
	case "date-time":
		return "2024-05-06T07:08:09Z"
	case "date":
		return "2024-05-06"
	case "time":
		return "07:08:09"
	case "email":
		return "pet@example.com"
	case "uri", "url":
		return "https://example.com/x"
	case "uuid":
		return "6f1c2a55-5b7e-4c39-9b3e-2f0e5e8e9a10"
	case "ipv4":
		return "192.0.2.1"
	case "ipv6":
		return "2001:db8::1"
	}
	s := "x"
	for uint64(len(s)) < minLen {
		s += "x"
	}
	return s
}

// argsFor makes arguments for a tool from its input schema: the required
// params, with values that satisfy them.
func argsFor(schema map[string]any) map[string]any {
	b, _ := json.Marshal(schema)
	var s openapi3.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return map[string]any{}
	}
	m, _ := instanceOf(&s, 0).(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}
