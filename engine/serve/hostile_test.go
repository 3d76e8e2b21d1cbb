package serve_test

import (
	"net/http"
	"strings"
)

// callEra builds the requests of one protocol era for hostileCorpus.
type callEra struct {
	// header is the headers of a request of method about name.
	header func(method, name string) http.Header
	// call is the body of a tools/call of name with id and args ("": no
	// arguments).
	call func(id, name, args string) string
	// meta is the _meta a call of the era carries before its name,
	// followed by sep; "" in an era whose calls carry none.
	meta func(sep string) string
}

// corpus is a hostile corpus being built around a call of tool.
type corpus struct {
	tool string
	ok   string                        // a valid call of tool
	h    func() http.Header            // the headers of a call of tool
	with func(k, v string) http.Header // h with k set to v ("": removed)
	out  []wireRequest
}

func (c *corpus) add(name string, header http.Header, body string) {
	c.out = append(c.out, wireRequest{name: name, header: header, body: body})
}

// hostileCorpus is the corpus of requests that are malformed, unusual or
// hostile, around a call of tool, that both eras share (built with era's
// builders), then the era's own (own).
func hostileCorpus(tool string, era callEra, own func(*corpus)) []wireRequest {
	c := &corpus{tool: tool, ok: era.call("1", tool, "{}")}
	c.h = func() http.Header { return era.header("tools/call", tool) }
	c.with = func(k, v string) http.Header {
		x := c.h()
		if v == "" {
			x.Del(k)
		} else {
			x.Set(k, v)
		}
		return x
	}
	call, ok, h, with, add := era.call, c.ok, c.h, c.with, c.add
	add("plain", h(), ok)
	add("string id", h(), call(`"abc-1"`, tool, "{}"))
	add("negative id", h(), call(`-7`, tool, "{}"))
	add("zero id", h(), call(`0`, tool, "{}"))
	add("minus zero id", h(), call(`-0`, tool, "{}"))
	add("float id", h(), call(`1.5`, tool, "{}"))
	add("exponent id", h(), call(`1e2`, tool, "{}"))
	add("big id", h(), call(`123456789012345678901234`, tool, "{}"))
	add("null id", h(), call(`null`, tool, "{}"))
	add("escaped id", h(), call(`"a\"b"`, tool, "{}"))
	add("html id", h(), call(`"<a&b>"`, tool, "{}"))
	add("no id", h(), `{"jsonrpc":"2.0","method":"tools/call","params":{`+era.meta(",")+`"name":"`+tool+`"}}`)
	add("no arguments", h(), call("2", tool, ""))
	add("null arguments", h(), call("2", tool, "null"))
	add("array arguments", h(), call("2", tool, "[1]"))
	add("escaped arguments", h(), call("2", tool, `{"a":"line\nbreak \u00e9 \ud83d\ude00"}`))
	add("deep arguments", h(), call("2", tool, strings.Repeat(`{"a":`, 80)+"1"+strings.Repeat("}", 80)))
	add("huge number", h(), call("2", tool, `{"n":1e400}`))
	add("whitespace", h(), "\n { \"jsonrpc\" : \"2.0\" , \"id\" : 3 , \"method\" : \"tools/call\" , \"params\" : { "+era.meta(" , ")+"\"name\" : \""+tool+"\" , \"arguments\" : { } } } \n")
	add("trailing garbage", h(), ok+"x")
	add("two messages", h(), ok+ok)
	add("batch", h(), "["+ok+"]")
	add("empty body", h(), "")
	add("not json", h(), "hello")
	add("wrong jsonrpc", h(), strings.Replace(ok, `"2.0"`, `"1.0"`, 1))
	add("duplicate key", h(), strings.Replace(ok, `"id":1`, `"id":1,"id":2`, 1))
	add("unknown key", h(), strings.Replace(ok, `"id":1`, `"id":1,"extra":true`, 1))
	add("upper-case key", h(), strings.Replace(ok, `"method"`, `"Method"`, 1))
	add("unknown param", h(), strings.Replace(ok, `"name":`, `"task":{},"name":`, 1))
	add("unknown tool", era.header("tools/call", "no_such_tool"), call("4", "no_such_tool", "{}"))
	add("empty name", era.header("tools/call", ""), call("4", "", "{}"))
	add("escaped name", h(), strings.Replace(ok, `"name":"`+tool+`"`, `"name":"\u0074`+tool[1:]+`"`, 1))
	add("version header missing", with("Mcp-Protocol-Version", ""), ok)
	add("no accept", with("Accept", ""), ok)
	add("json accept only", with("Accept", "application/json"), ok)
	add("wildcard accept", with("Accept", "*/*"), ok)
	add("accept with params", with("Accept", "text/event-stream;q=0.9, application/json;q=1"), ok)
	add("no content type", with("Content-Type", ""), ok)
	add("text content type", with("Content-Type", "text/plain"), ok)
	add("content type charset", with("Content-Type", "application/json; charset=utf-8"), ok)
	add("last event id", with("Last-Event-Id", "x_1"), ok)
	add("param header", with("Mcp-Param-Region", "eu"), ok)
	add("invalid utf-8", h(), strings.Replace(ok, `{}}}`, "{\"a\":\"\xff\"}}}", 1))
	add("control char", h(), strings.Replace(ok, `{}}}`, "{\"a\":\"\x01\"}}}", 1))
	c.out = append(c.out, wireRequest{name: "chunked", header: h(), body: ok, length: -1})
	c.out = append(c.out, wireRequest{name: "short length", header: h(), body: ok, length: int64(len(ok) - 3)})
	add("over 64 KiB", h(), call("9", tool, `{"a":"`+strings.Repeat("x", 70<<10)+`"}`))
	own(c)
	return c.out
}
