package snapshot_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/adapter"
	"github.com/mcpd/mcpd/engine/loader"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

func TestMain(m *testing.M) {
	// Panics recovered on purpose log their stack; keep test output readable.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

// build writes files (name → text) into a new directory and loads it.
func build(t testing.TB, reg *adapter.Registry, prev *snapshot.Snapshot, files map[string]string) (*snapshot.Snapshot, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if reg == nil {
		reg = adapter.NewRegistry()
	}
	l := loader.Load([]string{dir}, reg, prev, "test")
	if l.Snapshot == nil {
		var b strings.Builder
		for _, d := range l.Diagnostics {
			b.WriteString(d.Error() + "\n")
		}
		t.Fatalf("config does not load:\n%s", b.String())
	}
	t.Cleanup(l.Snapshot.Close)
	return l.Snapshot, dir
}

func tool(t testing.TB, s *snapshot.Snapshot, name string) *snapshot.Tool {
	t.Helper()
	tl, ok := s.Tool(name)
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	return tl
}

// call is a call through the call API with the arguments and progress
// sink most tests need, by the principal ctx carries (nil: the local
// user); a protocol error becomes a tool error with its text, so that a
// test reads one result.
func call(tl *snapshot.Tool, ctx context.Context, raw json.RawMessage, progress snapshot.ProgressFunc) *mcp.CallToolResult {
	res, err := tl.Call(ctx, &snapshot.CallRequest{Args: raw, Caller: principal.FromContext(ctx), Progress: progress})
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
	}
	return res
}

// render turns a result into one line per content block, for comparison.
func render(res *mcp.CallToolResult) string {
	var parts []string
	if res.IsError {
		parts = append(parts, "ERROR")
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, "text:"+c.Text)
		case *mcp.ImageContent:
			parts = append(parts, "image:"+c.MIMEType+":"+string(c.Data))
		case *mcp.AudioContent:
			parts = append(parts, "audio:"+c.MIMEType+":"+string(c.Data))
		case *mcp.EmbeddedResource:
			parts = append(parts, "resource:"+c.Resource.URI+":"+c.Resource.MIMEType+":"+c.Resource.Text+string(c.Resource.Blob))
		case *mcp.ResourceLink:
			parts = append(parts, "link:"+c.URI+":"+c.Name+":"+c.Title+":"+c.Description+":"+c.MIMEType)
		default:
			parts = append(parts, "?")
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, "structured:"+string(b))
	}
	return strings.Join(parts, "\n")
}

const declarative = `
tool "greet" {
  description = "Greets someone."
  param "name" {
    type = "string"
  }
  param "punct" {
    type    = "string"
    default = "!"
  }
  result {
    content "text" {
      text = "Hello, ${args.name}${args.punct}"
    }
  }
}

tool "contents" {
  description = "Every content type."
  param "id" {
    type = "string"
  }
  result {
    content "text" {
      text = "id=${args.id}"
    }
    content "image" {
      data      = base64encode("img-${args.id}")
      mime_type = "image/png"
    }
    content "audio" {
      data      = base64encode("snd")
      mime_type = "audio/wav"
    }
    content "resource" {
      uri       = "items://${args.id}"
      mime_type = "application/json"
      text      = jsonencode({ id = args.id })
    }
    content "resource" {
      uri       = "items://blob"
      blob      = base64encode("bin")
    }
    content "resource_link" {
      uri         = "items://${args.id}/more"
      name        = "more"
      title       = "More"
      description = "More about ${args.id}"
      mime_type   = "text/plain"
    }
  }
}

tool "sum" {
  description = "Adds."
  param "a" {
    type = "integer"
  }
  param "b" {
    type = "integer"
  }
  result {
    structured = "{sum: args.a + args.b}"
  }
}

tool "double" {
  description = "Doubles; a non-object structured result is wrapped."
  param "n" {
    type = "number"
  }
  result {
    structured = "args.n * 2"
  }
}

tool "shout" {
  description = "Shouts."
  param "word" {
    type = "string"
  }
  result {
    text = "upper(args.word) + '!'"
  }
}

tool "check" {
  description = "Fails on negative numbers."
  param "n" {
    type = "integer"
  }
  result {
    error_when    = "args.n < 0"
    error_message = "'negative: ' + string(args.n)"
    text          = "'ok ' + string(args.n)"
  }
}

tool "check_default_message" {
  description = "Fails without a message of its own."
  result {
    error_when = "true"
  }
}

tool "typed" {
  description = "Checks its output."
  param "v" {
    type = "string"
  }
  output_schema = jsonencode({
    type       = "object"
    properties = { count = { type = "integer" } }
    required   = ["count"]
  })
  result {
    structured = "args.v == 'good' ? {count: 3} : {count: 'three'}"
  }
}

tool "typed_without_structured" {
  description = "Declares an output schema but produces none."
  output_schema = jsonencode({ type = "object" })
  result {
    text = "'plain'"
  }
}

tool "static" {
  description = "No args at all."
  result {
    content "text" {
      text = "fixed"
    }
  }
}

tool "empty" {
  description = "No result block."
}
`

func TestToolCallDeclarative(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": declarative})
	tests := []struct {
		tool, args string
		want       string
	}{
		{"greet", `{"name": "Ada"}`, "text:Hello, Ada!"},
		{"greet", `{"name": "Ada", "punct": "?"}`, "text:Hello, Ada?"},
		{"greet", `{"name": "${x} %s"}`, "text:Hello, ${x} %s!"},
		{"greet", `{}`, `ERROR` + "\n" + `text:invalid arguments for tool greet: missing required argument "name"`},
		{"greet", `{"name": 7}`, "ERROR\n" + `text:invalid arguments for tool greet: argument "name" must be a string, got integer 7`},
		{"greet", `{"name": "Ada", "nmae": "x"}`, "ERROR\n" + `text:invalid arguments for tool greet: unknown argument "nmae" (did you mean "name"?); this tool takes "name", "punct"`},
		{"greet", `[]`, "ERROR\ntext:invalid arguments for tool greet: arguments must be a JSON object, got array"},
		{"contents", `{"id": "7"}`, strings.Join([]string{
			"text:id=7",
			"image:image/png:img-7",
			"audio:audio/wav:snd",
			`resource:items://7:application/json:{"id":"7"}`,
			"resource:items://blob::bin",
			"link:items://7/more:more:More:More about 7:text/plain",
		}, "\n")},
		{"sum", `{"a": 2, "b": 3}`, "text:{\"sum\":5}\nstructured:{\"sum\":5}"},
		{"double", `{"n": 2.5}`, "text:{\"result\":5}\nstructured:{\"result\":5}"},
		{"shout", `{"word": "hey"}`, "text:HEY!"},
		{"check", `{"n": 4}`, "text:ok 4"},
		{"check", `{"n": -4}`, "ERROR\ntext:negative: -4"},
		{"check_default_message", `{}`, "ERROR\ntext:the tool reported an error"},
		{"typed", `{"v": "good"}`, "text:{\"count\":3}\nstructured:{\"count\":3}"},
		{"typed", `{"v": "bad"}`, "ERROR\ntext:tool typed: the structured result does not match the tool's output_schema: "},
		{"typed_without_structured", `{}`, "ERROR\ntext:tool typed_without_structured: the tool declares an output_schema but produced no structured result"},
		{"static", ``, "text:fixed"},
		{"empty", `{}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			res := call(tool(t, s, tc.tool), context.Background(), json.RawMessage(tc.args), nil)
			got := render(res)
			if strings.HasSuffix(tc.want, ": ") {
				if !strings.HasPrefix(got, tc.want) {
					t.Errorf("got:\n%s\nwant prefix:\n%s", got, tc.want)
				}
				return
			}
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Static contents are built once and shared; calls must not see each
// other's arguments.
func TestToolCallConcurrent(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": declarative})
	greet, sum := tool(t, s, "greet"), tool(t, s, "sum")
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				name := strings.Repeat("x", i+1)
				if got := render(call(greet, context.Background(), json.RawMessage(`{"name": "`+name+`"}`), nil)); got != "text:Hello, "+name+"!" {
					errs <- got
					return
				}
				args, _ := json.Marshal(map[string]int{"a": i, "b": j})
				want, _ := json.Marshal(map[string]int{"sum": i + j})
				if got := call(sum, context.Background(), args, nil); !reflect.DeepEqual(render(got), "text:"+string(want)+"\nstructured:"+string(want)) {
					errs <- render(got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

type step struct {
	p, total float64
	msg      string
}

func TestToolCallProgress(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"tools.hcl": `
tool "slow" {
  description = "Reports progress."
  progress {
    steps    = [0, 50, 100]
    total    = 100
    interval = "1ms"
    message  = "Working"
  }
  result {
    content "text" {
      text = "done"
    }
  }
}

tool "very_slow" {
  description = "Waits ten seconds between steps."
  progress {
    steps    = [0, 100]
    interval = "10s"
  }
}
`})
	var got []step
	res := call(tool(t, s, "slow"), context.Background(), nil, func(p, total float64, msg string) {
		got = append(got, step{p, total, msg})
	})
	if want := []step{{0, 100, "Working"}, {50, 100, "Working"}, {100, 100, "Working"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
	if render(res) != "text:done" {
		t.Errorf("result = %s", render(res))
	}

	// Without a progress function (no progress token), the steps still run.
	if res := call(tool(t, s, "slow"), context.Background(), nil, nil); render(res) != "text:done" {
		t.Errorf("result = %s", render(res))
	}

	// Cancelling between steps ends the call with a tool error; the second
	// step, ten seconds away, is never reported.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got = nil
	res = call(tool(t, s, "very_slow"), ctx, nil, func(p, total float64, msg string) {
		got = append(got, step{p, total, msg})
		cancel()
	})
	if want := []step{{0, 0, ""}}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress = %v, want %v", got, want)
	}
	if !res.IsError || !strings.Contains(render(res), "context canceled") {
		t.Errorf("result = %s, want a cancellation error", render(res))
	}
}

const adapterTools = `
tool "echo" {
  description = "Echoes."
  param "name" {
    type = "string"
  }
  fake {
    mode = "echo"
  }
}

tool "echo_shaped" {
  description = "Echoes, shaped by a result block over the adapter's vars."
  param "name" {
    type = "string"
  }
  fake {
    mode = "echo"
  }
  result {
    text          = "'name was ' + body.name"
    error_when    = "body.name == 'bad'"
    error_message = "'refused ' + args.name"
  }
}

tool "texty" {
  description = "Plain text output."
  fake {
    mode = "text"
  }
}

tool "boom" {
  description = "Panics."
  fake {
    mode = "panic"
  }
}

tool "fails" {
  description = "Fails."
  fake {
    mode = "error"
  }
}

tool "blocks" {
  description = "Blocks until cancelled."
  fake {
    mode = "block"
  }
}

tool "progresses" {
  description = "Reports progress from the adapter."
  fake {
    mode = "progress"
  }
}

tool "media" {
  description = "Returns media."
  fake {
    mode = "media"
  }
}

tool "nothing" {
  description = "Returns no output at all."
  fake {
    mode = "nil"
  }
}
`

func TestToolCallAdapter(t *testing.T) {
	f := newFake()
	s, _ := build(t, f.register(), nil, map[string]string{"tools.hcl": adapterTools})
	tests := []struct {
		tool, args, want string
	}{
		{"echo", `{"name": "Ada"}`, "text:{\"echo\":{\"name\":\"Ada\"}}\nstructured:{\"echo\":{\"name\":\"Ada\"}}"},
		{"echo_shaped", `{"name": "Ada"}`, "text:name was Ada\nstructured:{\"echo\":{\"name\":\"Ada\"}}"},
		{"echo_shaped", `{"name": "bad"}`, "ERROR\ntext:refused bad"},
		{"texty", `{}`, "text:text from texty"},
		{"boom", `{}`, "ERROR\ntext:internal error in tool boom; the server log has details"},
		{"fails", `{}`, "ERROR\ntext:tool fails: backend said no"},
		{"media", `{}`, "image:image/png:\x89PNG\naudio:audio/wav:RIFF"},
		{"nothing", `{}`, ""},
		{"echo", `{"name": 1}`, "ERROR\n" + `text:invalid arguments for tool echo: argument "name" must be a string, got integer 1`},
	}
	for _, tc := range tests {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			got := render(call(tool(t, s, tc.tool), context.Background(), json.RawMessage(tc.args), nil))
			if got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}

	t.Run("progress from the adapter", func(t *testing.T) {
		var got []step
		res := call(tool(t, s, "progresses"), context.Background(), nil, func(p, total float64, msg string) {
			got = append(got, step{p, total, msg})
		})
		if want := []step{{1, 2, "half"}, {2, 2, "done"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("progress = %v, want %v", got, want)
		}
		if render(res) != "text:progressed" {
			t.Errorf("result = %s", render(res))
		}
		// An adapter may report progress even when the client asked for none.
		if res := call(tool(t, s, "progresses"), context.Background(), nil, nil); render(res) != "text:progressed" {
			t.Errorf("result = %s", render(res))
		}
	})

	t.Run("cancellation reaches the adapter", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *mcp.CallToolResult)
		go func() { done <- call(tool(t, s, "blocks"), ctx, nil, nil) }()
		<-f.started
		cancel()
		if got := <-f.cancelled; got != "blocks" {
			t.Errorf("cancelled %q", got)
		}
		res := <-done
		if got := render(res); got != "ERROR\ntext:tool blocks: cancelled: context canceled" {
			t.Errorf("result = %s", got)
		}
	})
}

const resources = `
resource "text" {
  uri         = "docs://text"
  title       = "Text"
  description = "A text resource."
  mime_type   = "text/plain"
  text        = "hello ${upper("world")}"
}

resource "blob" {
  uri       = "docs://blob"
  mime_type = "application/octet-stream"
  blob      = base64encode("raw bytes")
}

resource "notes" {
  uri  = "docs://notes"
  file = "notes.txt"
}

resource "image" {
  uri  = "docs://image"
  file = "data/pixel.png"
}

resource "json_file" {
  uri  = "docs://json"
  file = "data/conf.json"
}

resource "later" {
  uri  = "docs://later"
  file = "not-yet.txt"
}

resource "from_adapter" {
  uri = "docs://adapter"
  fake {
    mode = "echo"
  }
}

resource_template "user" {
  uri_template = "users://{id}/profile"
  description  = "A user's profile."
  mime_type    = "application/json"
  text         = jsonencode({ id = args.id })
  completions = {
    id = ["1", "2", "10", "42"]
  }
}

resource_template "path" {
  uri_template = "files://{+path}"
  text         = "path is ${args.path}"
}
`

func TestResources(t *testing.T) {
	f := newFake()
	s, dir := build(t, f.register(), nil, map[string]string{
		"res.hcl":        resources,
		"notes.txt":      "some notes\n",
		"data/pixel.png": "\x89PNG\r\n\x1a\n\x00binary",
		"data/conf.json": `{"a": 1}`,
	})
	type want struct {
		mime, text, blob string
		err              string
	}
	tests := []struct {
		uri  string
		want want
	}{
		{"docs://text", want{mime: "text/plain", text: "hello WORLD"}},
		{"docs://blob", want{mime: "application/octet-stream", blob: "raw bytes"}},
		{"docs://notes", want{mime: "text/plain; charset=utf-8", text: "some notes\n"}},
		{"docs://image", want{mime: "image/png", blob: "\x89PNG\r\n\x1a\n\x00binary"}},
		{"docs://json", want{mime: "application/json", text: `{"a": 1}`}},
		{"docs://later", want{err: "reading docs://later: open " + filepath.Join(dir, "not-yet.txt") + ": no such file or directory"}},
		{"docs://adapter", want{mime: "application/json", text: `{"echo":{}}`}},
		{"users://42/profile", want{mime: "application/json", text: `{"id":"42"}`}},
		{"users://a%20b/profile", want{mime: "application/json", text: `{"id":"a b"}`}},
		{"files://a/b/c.txt", want{text: "path is a/b/c.txt"}},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			res, found, err := s.ReadResource(context.Background(), &snapshot.ReadRequest{URI: tc.uri})
			if !found {
				t.Fatal("not found")
			}
			if tc.want.err != "" {
				if err == nil || err.Error() != tc.want.err {
					t.Fatalf("err = %v, want %s", err, tc.want.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Contents) != 1 {
				t.Fatalf("got %d contents", len(res.Contents))
			}
			c := res.Contents[0]
			if c.URI != tc.uri || c.MIMEType != tc.want.mime || c.Text != tc.want.text || string(c.Blob) != tc.want.blob {
				t.Errorf("got uri=%q mime=%q text=%q blob=%q, want %+v", c.URI, c.MIMEType, c.Text, c.Blob, tc.want)
			}
		})
	}

	for _, uri := range []string{"docs://nope", "users://42", "users://42/profile/extra", ""} {
		if _, found, err := s.ReadResource(context.Background(), &snapshot.ReadRequest{URI: uri}); found || err != nil {
			t.Errorf("ReadResource(%q): found=%v err=%v, want not found", uri, found, err)
		}
	}

	// The file is read on each read: once it exists, the resource works.
	if err := os.WriteFile(filepath.Join(dir, "not-yet.txt"), []byte("here now"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res, _, err := s.ReadResource(context.Background(), &snapshot.ReadRequest{URI: "docs://later"}); err != nil || res.Contents[0].Text != "here now" {
		t.Errorf("after creating the file: %v %v", res, err)
	}

	// Lists are in declaration order, with the definitions clients see.
	var uris []string
	for _, r := range s.Resources {
		uris = append(uris, r.Def.URI)
	}
	if want := []string{"docs://text", "docs://blob", "docs://notes", "docs://image", "docs://json", "docs://later", "docs://adapter"}; !reflect.DeepEqual(uris, want) {
		t.Errorf("resources = %v, want %v", uris, want)
	}
	if d := s.Resources[0].Def; d.Name != "text" || d.Title != "Text" || d.Description != "A text resource." {
		t.Errorf("Def = %+v", d)
	}
	if d := s.Templates[0].Def; d.URITemplate != "users://{id}/profile" || d.Name != "user" || d.MIMEType != "application/json" {
		t.Errorf("template Def = %+v", d)
	}
}

// A resource file that is missing at load is a warning, not an error: it
// may be created later.
func TestResourceMissingFileWarns(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.hcl"), []byte("resource \"r\" {\n  uri  = \"x://r\"\n  file = \"missing.txt\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := loader.Load([]string{dir}, adapter.NewRegistry(), nil, "test")
	if l.Snapshot == nil {
		t.Fatalf("want a snapshot: %v", l.Diagnostics)
	}
	l.Snapshot.Close()
	if len(l.Diagnostics) != 1 || l.Diagnostics[0].Severity != hcl.DiagWarning || l.Diagnostics[0].Summary != "Resource file not found" {
		t.Errorf("diagnostics = %v", l.Diagnostics)
	}
}

const prompts = `
prompt "plain" {
  description = "No arguments."
  message {
    text = "Just this."
  }
}

prompt "trip" {
  title       = "Trip"
  description = "Plans a trip."
  argument "city" {
    description = "Where to"
    required    = true
    completions = ["Paris", "Parma", "park", "Rome"]
  }
  argument "days" {
    description = "How long"
  }
  message {
    role = "user"
    text = "Plan ${args.days == null ? "a" : args.days}-day trip to ${args.city}."
  }
  message {
    role = "assistant"
    content "resource" {
      uri       = "trips://${lower(args.city)}"
      mime_type = "text/plain"
      text      = "Notes on ${args.city}"
    }
  }
}
`

func TestPrompts(t *testing.T) {
	s, _ := build(t, nil, nil, map[string]string{"p.hcl": prompts})
	p, ok := s.Prompt("trip")
	if !ok {
		t.Fatal("no prompt trip")
	}
	if d := p.Def; d.Title != "Trip" || len(d.Arguments) != 2 || d.Arguments[0].Name != "city" || !d.Arguments[0].Required || d.Arguments[1].Required {
		t.Errorf("Def = %+v", d)
	}
	res, err := p.Get(context.Background(), &snapshot.GetRequest{Args: map[string]string{"city": "Paris", "days": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Description != "Plans a trip." || len(res.Messages) != 2 {
		t.Fatalf("got %+v", res)
	}
	if m := res.Messages[0]; m.Role != "user" || m.Content.(*mcp.TextContent).Text != "Plan 3-day trip to Paris." {
		t.Errorf("message 0 = %+v", m)
	}
	if m := res.Messages[1]; m.Role != "assistant" {
		t.Errorf("message 1 role = %q", m.Role)
	} else if r := m.Content.(*mcp.EmbeddedResource).Resource; r.URI != "trips://paris" || r.Text != "Notes on Paris" {
		t.Errorf("message 1 = %+v", r)
	}

	// An optional argument left out is null in expressions.
	res, err = p.Get(context.Background(), &snapshot.GetRequest{Args: map[string]string{"city": "Rome"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[0].Content.(*mcp.TextContent).Text; got != "Plan a-day trip to Rome." {
		t.Errorf("got %q", got)
	}

	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"days": "2"}, "prompt trip: missing required argument(s) city"},
		{nil, "prompt trip: missing required argument(s) city"},
		{map[string]string{"city": "Rome", "nights": "2", "budget": "1"}, "prompt trip: unknown argument(s) budget, nights"},
	} {
		if _, err := p.Get(context.Background(), &snapshot.GetRequest{Args: tc.args}); err == nil || err.Error() != tc.want {
			t.Errorf("Get(%v) = %v, want %s", tc.args, err, tc.want)
		}
	}

	plain, _ := s.Prompt("plain")
	res, err = plain.Get(context.Background(), &snapshot.GetRequest{Args: nil})
	if err != nil || res.Messages[0].Role != "user" || res.Messages[0].Content.(*mcp.TextContent).Text != "Just this." {
		t.Errorf("plain: %+v %v", res, err)
	}
	if _, ok := s.Prompt("nope"); ok {
		t.Error("found prompt nope")
	}
}

func TestComplete(t *testing.T) {
	many := make([]string, 150)
	for i := range many {
		many[i] = `"v` + strings.Repeat("x", i%3) + `"`
	}
	s, _ := build(t, nil, nil, map[string]string{
		"p.hcl": prompts + resources[strings.Index(resources, `resource_template "user"`):] + `
prompt "many" {
  argument "a" {
    completions = [` + strings.Join(many, ", ") + `]
  }
  message {
    text = "x"
  }
}
`})
	tests := []struct {
		ref         mcp.CompleteReference
		arg, prefix string
		want        []string
	}{
		{mcp.CompleteReference{Type: "ref/prompt", Name: "trip"}, "city", "par", []string{"Paris", "Parma", "park"}},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "trip"}, "city", "PARI", []string{"Paris"}},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "trip"}, "city", "", []string{"Paris", "Parma", "park", "Rome"}},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "trip"}, "city", "x", []string{}},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "trip"}, "days", "", []string{}},
		{mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, "city", "", []string{}},
		{mcp.CompleteReference{Type: "ref/resource", URI: "users://{id}/profile"}, "id", "4", []string{"42"}},
		{mcp.CompleteReference{Type: "ref/resource", URI: "users://{id}/profile"}, "id", "1", []string{"1", "10"}},
		{mcp.CompleteReference{Type: "ref/resource", URI: "users://{nope}"}, "id", "", []string{}},
	}
	for _, tc := range tests {
		got := s.Complete(context.Background(), &adapter.CompleteRequest{Ref: &tc.ref, Argument: tc.arg, Value: tc.prefix})
		if got.Values == nil || !reflect.DeepEqual(got.Values, tc.want) || got.Total != len(tc.want) || got.HasMore {
			t.Errorf("Complete(%+v, %q, %q) = %+v, want %v", tc.ref, tc.arg, tc.prefix, got, tc.want)
		}
	}
	// At most 100 values, with the total and hasMore.
	got := s.Complete(context.Background(), &adapter.CompleteRequest{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "many"}, Argument: "a", Value: "v"})
	if len(got.Values) != 100 || got.Total != 150 || !got.HasMore {
		t.Errorf("got %d values, total %d, hasMore %v", len(got.Values), got.Total, got.HasMore)
	}
}

// eventually waits for cond, failing the test if it never holds. It is a
// liveness bound, not a speed assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// stays checks for a while that cond keeps holding. It can only catch a
// violation that happens in that window, but it never fails a correct
// implementation.
func stays(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 50 {
		if !cond() {
			t.Fatalf("no longer true: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

const backendTools = `
fake_backend "db" {
  setting = "%s"
}

tool "wait" {
  description = "Blocks on the backend until cancelled."
  fake {
    mode    = "block"
    backend = "db"
  }
}

tool "echo" {
  description = "Echoes through the backend."
  fake {
    mode    = "echo"
    backend = "db"
  }
}
`

func backendConfig(setting string) map[string]string {
	return map[string]string{"b.hcl": strings.Replace(backendTools, "%s", setting, 1)}
}

// A swap retires the old snapshot; its backends are closed once the last
// call that acquired it has released it, and not before. Backends whose
// settings did not change are carried over to the new snapshot and stay
// open.
func TestCurrentSwapClosesBackendsAfterLastRelease(t *testing.T) {
	f := newFake()
	reg := f.register()
	var cur snapshot.Current
	first, _ := build(t, reg, nil, backendConfig("v1"))
	cur.Swap(first)
	if len(f.opened()) != 1 {
		t.Fatalf("opened %d backends", len(f.opened()))
	}
	oldBackend := f.opened()[0]

	// A call in flight on the first snapshot, as serve makes one.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held := cur.Acquire()
	if held != first {
		t.Fatal("Acquire returned another snapshot")
	}
	done := make(chan *mcp.CallToolResult)
	go func() {
		defer held.Release()
		done <- call(tool(t, held, "wait"), ctx, nil, nil)
	}()
	<-f.started

	// Reload with changed settings: a new backend is opened.
	second, _ := build(t, reg, cur.Load(), backendConfig("v2"))
	if prev := cur.Swap(second); prev != first {
		t.Fatal("Swap did not return the previous snapshot")
	}
	if cur.Load() != second {
		t.Fatal("Load does not return the new snapshot")
	}
	newBackend := f.opened()[1]
	// New requests get the new snapshot while the old call is still running.
	s := cur.Acquire()
	if s != second {
		t.Error("Acquire after Swap returned the retired snapshot")
	}
	if res := call(tool(t, s, "echo"), context.Background(), nil, nil); res.IsError {
		t.Errorf("call on the new snapshot: %s", render(res))
	}
	s.Release()
	if newBackend.calls.Load() != 1 || oldBackend.calls.Load() != 1 {
		t.Errorf("calls: old backend %d, new backend %d; want 1 each", oldBackend.calls.Load(), newBackend.calls.Load())
	}

	stays(t, "the old backend is open while a call uses it", func() bool { return oldBackend.closed.Load() == 0 })

	cancel()
	<-done
	eventually(t, "the old backend is closed after the last release", func() bool { return oldBackend.closed.Load() == 1 })
	stays(t, "the old backend is closed exactly once, the new one not at all", func() bool {
		return oldBackend.closed.Load() == 1 && newBackend.closed.Load() == 0
	})

	// Same settings again: the live backend is carried over, not reopened,
	// and retiring the second snapshot does not close it.
	third, _ := build(t, reg, cur.Load(), backendConfig("v2"))
	cur.Swap(third)
	if n := len(f.opened()); n != 2 {
		t.Errorf("an unchanged backend was reopened (%d opened)", n)
	}
	stays(t, "a carried-over backend stays open", func() bool { return newBackend.closed.Load() == 0 })
	if res := call(tool(t, third, "echo"), context.Background(), nil, nil); res.IsError || newBackend.calls.Load() != 2 {
		t.Errorf("the third snapshot does not use the carried-over backend: %s", render(res))
	}

	// Shutdown closes what is current.
	cur.Load().Close()
	if newBackend.closed.Load() != 1 {
		t.Errorf("new backend closed %d times at shutdown", newBackend.closed.Load())
	}
}

// A retired snapshot with no call in flight closes its backends promptly.
func TestCurrentSwapIdle(t *testing.T) {
	f := newFake()
	reg := f.register()
	var cur snapshot.Current
	if prev := cur.Swap(mustBuild(t, reg, nil, backendConfig("a"))); prev != nil {
		t.Errorf("first Swap returned %v", prev)
	}
	cur.Swap(mustBuild(t, reg, cur.Load(), backendConfig("b")))
	old := f.opened()[0]
	eventually(t, "an idle retired snapshot's backend is closed", func() bool { return old.closed.Load() == 1 })
	cur.Load().Close()
}

// mustBuild is build without the cleanup that closes the snapshot: for
// snapshots whose backends the test closes through Current.
func mustBuild(t *testing.T, reg *adapter.Registry, prev *snapshot.Snapshot, files map[string]string) *snapshot.Snapshot {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := loader.Load([]string{dir}, reg, prev, "test")
	if l.Snapshot == nil {
		t.Fatalf("does not load: %v", l.Diagnostics)
	}
	return l.Snapshot
}

// A failed reload keeps nothing open that it opened, and leaves the serving
// snapshot's backends alone, whether the error is found while loading (a
// bad tool name) or while compiling (a reference to an undeclared param),
// and whether the backend's settings changed (a new backend was opened) or
// not (the serving one was carried over).
func TestFailedReloadKeepsServingBackends(t *testing.T) {
	errs := map[string]string{
		"load error":    "\ntool \"bad name\" {\n  description = \"x\"\n}\n",
		"compile error": "\ntool \"bad_ref\" {\n  description = \"x\"\n  result {\n    content \"text\" {\n      text = args.nope\n    }\n  }\n}\n",
	}
	for _, kind := range []string{"load error", "compile error"} {
		for _, setting := range []string{"v1", "v2"} {
			t.Run(kind+" "+setting, func(t *testing.T) {
				f := newFake()
				reg := f.register()
				serving := mustBuild(t, reg, nil, backendConfig("v1"))
				defer serving.Close()
				dir := t.TempDir()
				broken := strings.Replace(backendTools, "%s", setting, 1) + errs[kind]
				if err := os.WriteFile(filepath.Join(dir, "b.hcl"), []byte(broken), 0o644); err != nil {
					t.Fatal(err)
				}
				if l := loader.Load([]string{dir}, reg, serving, "test"); l.Snapshot != nil {
					t.Fatal("a broken config produced a snapshot")
				}
				opened := f.opened()
				if n := opened[0].closed.Load(); n != 0 {
					t.Errorf("the failed reload closed the serving snapshot's backend (%d times)", n)
				}
				if setting == "v2" {
					if len(opened) != 2 || opened[1].closed.Load() != 1 {
						t.Errorf("the failed reload left the backend it opened open")
					}
				} else if len(opened) != 1 {
					t.Errorf("an unchanged backend was reopened")
				}
				// The serving snapshot still works.
				if res := call(tool(t, serving, "echo"), context.Background(), nil, nil); res.IsError {
					t.Error(render(res))
				}
			})
		}
	}
}

// A backend that cannot be set up is a diagnostic on its block.
func TestBackendOpenFailure(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "b.hcl"), []byte(strings.Replace(backendTools, "%s", "unopenable", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	l := loader.Load([]string{dir}, newFake().register(), nil, "test")
	if l.Snapshot != nil {
		t.Fatal("want no snapshot")
	}
	var found bool
	for _, d := range l.Diagnostics {
		found = found || (d.Summary == `Cannot set up fake_backend "db"` && d.Detail == "cannot open" && d.Subject.Start.Line == 2)
	}
	if !found {
		t.Errorf("got %v", l.Diagnostics)
	}
}

func BenchmarkToolCall(b *testing.B) {
	s, _ := build(b, nil, nil, map[string]string{"tools.hcl": declarative})
	greet, sum := tool(b, s, "greet"), tool(b, s, "sum")
	ctx := context.Background()
	b.Run("content", func(b *testing.B) {
		args := json.RawMessage(`{"name": "Ada"}`)
		b.ReportAllocs()
		for b.Loop() {
			if res := call(greet, ctx, args, nil); res.IsError {
				b.Fatal(render(res))
			}
		}
	})
	b.Run("structured", func(b *testing.B) {
		args := json.RawMessage(`{"a": 2, "b": 3}`)
		b.ReportAllocs()
		for b.Loop() {
			if res := call(sum, ctx, args, nil); res.IsError {
				b.Fatal(render(res))
			}
		}
	})
}
