package serve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpd/mcpd/engine/serve"
)

const askWireConfig = `
tool "confirmed" {
  description = "Asks for a confirmation."
  confirm     = "Go?"
  result {
    text = "'went'"
  }
}

tool "sampled" {
  description = "Asks the host's model."
  ask "llm" {
    sample = "Say hi."
  }
  result {
    text = "inputs.llm"
  }
}

tool "rooted" {
  description = "Asks for the roots."
  ask "roots" {
    roots = true
  }
  result {
    text = "'rooted'"
  }
}

prompt "asking" {
  description = "Asks for a topic."
  ask "topic" {
    elicit = "Topic?"
    field "topic" {
      type = "string"
    }
  }
  message {
    role = "user"
    text = "About ${inputs.topic.topic}."
  }
}
`

// What a 2026-07-28 client gets for a call that asks is exactly what the
// schema says: an input_required result is an InputRequiredResult
// (resultType, inputRequests, requestState; no content or messages), and
// the -32021 error's data.requiredCapabilities names the missing
// capabilities and no other.
func TestAskWire(t *testing.T) {
	e := newEnvConfig(t, askWireConfig)
	ts := e.httpServer(t, serve.HTTPOptions{JSONResponse: true})
	post := func(method, name, caps, params string) (result map[string]any, rpcErr map[string]any) {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `},` + params + `}}`
		req, _ := http.NewRequest("POST", ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", modern)
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var msg struct {
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if err := json.Unmarshal(raw, &msg); err != nil {
			t.Fatalf("%s: status %d: %s", method, resp.StatusCode, raw)
		}
		return msg.Result, msg.Error
	}
	elicit := `{"elicitation":{}}`
	for _, tc := range []struct{ method, name, params string }{
		{"tools/call", "confirmed", `"name":"confirmed"`},
		{"prompts/get", "asking", `"name":"asking"`},
	} {
		res, rpcErr := post(tc.method, tc.name, elicit, tc.params)
		if rpcErr != nil {
			t.Fatalf("%s: error %v", tc.name, rpcErr)
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range res {
				if k != "_meta" && !yield(k) {
					return
				}
			}
		})
		if want := []string{"inputRequests", "requestState", "resultType"}; !slices.Equal(keys, want) || res["resultType"] != "input_required" {
			t.Errorf("%s: input_required result has %v (%v), want exactly %v", tc.name, keys, res, want)
		}
	}
	for _, tc := range []struct {
		tool string
		want map[string]any
	}{
		{"confirmed", map[string]any{"elicitation": map[string]any{}}},
		{"sampled", map[string]any{"sampling": map[string]any{}}},
		{"rooted", map[string]any{"roots": map[string]any{}}},
	} {
		_, rpcErr := post("tools/call", tc.tool, `{}`, `"name":"`+tc.tool+`"`)
		if rpcErr == nil || rpcErr["code"] != float64(mcp.CodeMissingRequiredClientCapabilities) {
			t.Fatalf("%s: error %v, want -32021", tc.tool, rpcErr)
		}
		want := map[string]any{"requiredCapabilities": tc.want}
		if got := rpcErr["data"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: data = %s, want %s", tc.tool, asJSON(got), asJSON(want))
		}
	}
}

// The SERVER span of a resources/read names the resource: mcp.resource.uri.
func TestReadSpanNamesURI(t *testing.T) {
	e := newEnv(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e.srv = serve.New(e.cur, serve.Options{Logger: quiet, Tracer: tp.Tracer("test")})
	cs := inMemory(modern)(t, e, nil)
	if _, err := cs.ReadResource(bounded(t), &mcp.ReadResourceParams{URI: "users://7/profile"}); err != nil {
		t.Fatal(err)
	}
	for _, sp := range rec.Ended() {
		if sp.Name() != "resources/read" {
			continue
		}
		for _, kv := range sp.Attributes() {
			if kv.Key == "mcp.resource.uri" && kv.Value.AsString() == "users://7/profile" {
				return
			}
		}
		t.Fatalf("resources/read span attributes %v, want mcp.resource.uri", sp.Attributes())
	}
	t.Fatal("no resources/read span")
}
