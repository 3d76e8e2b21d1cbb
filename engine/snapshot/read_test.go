package snapshot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpd/mcpd/engine/snapshot"
)

// A resource read through an adapter takes the path of a tool's adapter
// call: the server's default_timeout bounds it, and it has a span of its
// own, "{adapter} {resource}", with mcp.resource.uri.
func TestAdapterReadTimeoutAndSpan(t *testing.T) {
	f := newFake()
	s, _ := build(t, f.register(), nil, map[string]string{"tools.hcl": `
server {
  default_timeout = "100ms"
}
resource "stuck" {
  uri = "slow://stuck"
  fake {
    mode = "block"
  }
}
resource_template "said" {
  uri_template = "say://{word}"
  fake {
    mode = "say"
    say  = args.word
  }
}
`})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "resources/read")
	// Outer bound: without the timeout the read would wait for it.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()

	start := time.Now()
	_, found, err := s.ReadResource(ctx, &snapshot.ReadRequest{URI: "slow://stuck"})
	if !found || err == nil || !strings.Contains(err.Error(), "resource stuck timed out after 100ms") {
		t.Fatalf("found %v, err %v, want the read timed out after 100ms", found, err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the read took %s: not bounded by default_timeout", took)
	}
	res, _, err := s.ReadResource(ctx, &snapshot.ReadRequest{URI: "say://hello"})
	if err != nil || res.Contents[0].Text != "hello" {
		t.Fatalf("template read: %v %+v", err, res)
	}
	parent.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		spans[sp.Name()] = sp
	}
	for _, tc := range []struct {
		name, uri string
		failed    bool
	}{{"fake stuck", "slow://stuck", true}, {"fake said", "say://hello", false}} {
		sp, ok := spans[tc.name]
		if !ok {
			t.Fatalf("no span %q; got %v", tc.name, spans)
		}
		if sp.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s: not a child of the request's span", tc.name)
		}
		attrs := map[attribute.Key]string{}
		for _, kv := range sp.Attributes() {
			attrs[kv.Key] = kv.Value.Emit()
		}
		if attrs["mcp.resource.uri"] != tc.uri || attrs["mcpd.adapter"] != "fake" {
			t.Errorf("%s: attributes %v, want mcp.resource.uri %s", tc.name, attrs, tc.uri)
		}
		if failed := sp.Status().Code == codes.Error; failed != tc.failed {
			t.Errorf("%s: status %v, want failed %v", tc.name, sp.Status(), tc.failed)
		}
	}
}
