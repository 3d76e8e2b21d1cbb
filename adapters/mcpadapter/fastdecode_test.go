package mcpadapter

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const fuzzID = "1099511627777"

// sdkRead is the SDK client's reading of msg as the answer to fuzzID.
func sdkRead(msg []byte) (*mcp.CallToolResult, bool) {
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return nil, false
	}
	r, ok := m.(*jsonrpc.Response)
	if !ok || r.Error != nil {
		return nil, false
	}
	if n, ok := r.ID.Raw().(int64); !ok || n != 1099511627777 {
		return nil, false
	}
	res := new(mcp.CallToolResult)
	if json.Unmarshal(r.Result, res) != nil {
		return nil, false
	}
	return res, true
}

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpd","version":"dev"}},"content":[{"type":"text","text":"This is a static response."}],"resultType":"complete"}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"_meta":{"a":[true,null,"x",{}],"a":1},"content":[]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"_meta":{"n":1e400},"content":[]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"_meta":null,"content":[]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"This is a static response."}]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"a"},{"text":"b","type":"text"}],"isError":true,"resultType":"complete"}}`,
	` { "result" : { "content" : [ ] } , "id" : 1099511627777 , "jsonrpc" : "2.0" } `,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"\u00e9\ud83d\ude00 \"q\" \\ \n\t\/"}]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"\ud800"}]}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1099511627777,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]}}",
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"a","text":"b"}]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"id":1,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"Content":[{"type":"text","text":"a"}]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[],"structuredContent":{"a":1}}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[],"resultType":"input_required","inputRequests":{}}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"error":{"code":-32602,"message":"no"}}`,
	`{"jsonrpc":"2.0","id":1099511627777.0,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":"1099511627777","result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"method":"x","result":{"content":[]}}`,
	`{"jsonrpc":"1.0","id":1099511627777,"result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"a"}]}}garbage`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":null,"isError":null}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":1099511627777,"result":{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}}`,
}

func TestFastResultSeeds(t *testing.T) {
	accepted := 0
	for _, s := range decodeSeeds {
		got, ok := fastResult([]byte(s), []byte(fuzzID))
		if !ok {
			continue
		}
		accepted++
		want, sdkOK := sdkRead([]byte(s))
		if !sdkOK || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nfast %#v\nSDK  %#v (%v)", s, got, want, sdkOK)
		}
	}
	// The common forms are read by the fast path, not all handed on.
	if accepted < 5 {
		t.Errorf("the fast path read %d of the seeds", accepted)
	}
	if _, ok := fastResult([]byte(decodeSeeds[0]), []byte("1099511627778")); ok {
		t.Error("the answer to another request was read as this one's")
	}
}

// FuzzFastResult: whatever the fast path's decoder reads, the SDK reads as
// the same result, to the last (unexported) field.
func FuzzFastResult(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, ok := fastResult(msg, []byte(fuzzID))
		if !ok {
			return
		}
		want, sdkOK := sdkRead(msg)
		if !sdkOK {
			t.Fatalf("the fast path read %q, which the SDK refuses", msg)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfast %#v\nSDK  %#v", msg, got, want)
		}
	})
}

func TestFirstEvent(t *testing.T) {
	for _, c := range []struct {
		stream, msg string
	}{
		{"event: message\ndata: {\"a\":1}\n\nrest", `{"a":1}`},
		{"id: 0_0\ndata:\n\nid: 0_1\ndata:  {\"a\":1} \r\n\r\n", `{"a":1}`},
		{": comment\nretry: 10\ndata: {}\n\n", `{}`},
		{"event: other\ndata: {}\n\n", ""},                 // the SDK skips it: handed over
		{"data: {\n data: }\n\n", "{"},                     // " data" is no field the SDK knows: its data is "{"
		{"data: {\ndata: }\n\n", ""},                       // data on two lines
		{"data: {}\n", ""},                                 // no end of event
		{"data: " + strings.Repeat("x", 100) + "\n\n", ""}, // over max
	} {
		msg, read, err := firstEvent(strings.NewReader(c.stream), 64)
		if string(msg) != c.msg || (c.msg == "" && msg != nil) {
			t.Errorf("%q: message %q, want %q (err %v)", c.stream, msg, c.msg, err)
		}
		if !strings.HasPrefix(c.stream, string(read)) {
			t.Errorf("%q: read %q, not what the stream began with", c.stream, read)
		}
	}
}

// A stream handed over reaches the SDK as it was, but for the response to
// the fast path's request, which gets the SDK's id.
func TestIDRewriter(t *testing.T) {
	for _, c := range []struct {
		in, out string
		stream  bool
	}{
		{`{"jsonrpc":"2.0","id":77,"result":{}}`, `{"jsonrpc":"2.0","id":3,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":78,"result":{}}`, `{"jsonrpc":"2.0","id":78,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":77,"method":"ping"}`, `{"jsonrpc":"2.0","id":77,"method":"ping"}`, false},
		{"<html>broken</html>", "<html>broken</html>", false},
		{
			"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}\n\n",
			"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n",
			true,
		},
		{
			"data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":77,\"result\":{}}\r\n\r\n",
			"data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"result\":{}}\n\r\n",
			true,
		},
		{"data: {\"id\":77,\"result\":{}}", "data: {\"id\":3,\"result\":{}}\n\n", true}, // the end of the stream ends the event
	} {
		r := newIDRewriter(io.NopCloser(strings.NewReader(c.in)), []byte("77"), []byte("3"), c.stream)
		got, err := io.ReadAll(r)
		if err != nil || string(got) != c.out {
			t.Errorf("%q:\ngot  %q (%v)\nwant %q", c.in, got, err, c.out)
		}
	}
	// An event over the bound is passed on as it is.
	long := "data: {\"id\":77,\"x\":\"" + strings.Repeat("y", maxUpstreamMessage) + "\"}\n\nid: 9\n\n"
	got, _ := io.ReadAll(newIDRewriter(io.NopCloser(strings.NewReader(long)), []byte("77"), []byte("3"), true))
	if !bytes.Equal(got, []byte(long)) {
		t.Error("an event over the bound was changed")
	}
}

func TestRequestOfCancelled(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"context canceled","requestId":5}}`)
	method, id, cancelled := requestOf(body)
	if method != "notifications/cancelled" || id != nil || string(cancelled) != "5" {
		t.Fatalf("%q %q %q", method, id, cancelled)
	}
	s, e := cancelledSpan(body)
	if got := string(replaceSpan(body, s, e, []byte("1099511627777"))); got != strings.Replace(string(body), `:5}`, `:1099511627777}`, 1) {
		t.Errorf("rewritten: %s", got)
	}
}
