package mcpadapter

import (
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxUpstreamMessage bounds one message read from an upstream. The SDK's
// client decodes a whole message before the tool's max_output_bytes can
// be checked, so without this bound an upstream (a program or a server
// mcpd does not control) could make mcpd allocate as much as it sends. It
// leaves room for the largest max_output_bytes a tool may set, encoded
// (base64, JSON escapes). A message over it ends the session, which the
// supervisor makes again; the call is a tool error.
const maxUpstreamMessage = 3*maxMaxOutput + 1<<20

// bodyLimit fails once a body grows past max bytes: a JSON response is
// one message.
type bodyLimit struct {
	io.ReadCloser
	max, left int64
}

func (b *bodyLimit) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, fmt.Errorf("the upstream sent a message over %d bytes", b.max)
	}
	return n, err
}

// limitBody bounds what the SDK's client reads of an upstream's JSON
// answer, which it reads whole (io.ReadAll) before decoding it. An event
// stream is bounded per event by the transport's MaxEventSize, and a
// stdio upstream per line by MaxLineLength: the SDK's own limits.
func limitBody(res *http.Response, max int64) {
	if res == nil || res.Body == nil {
		return
	}
	if ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); ct == "text/event-stream" {
		return
	}
	res.Body = &bodyLimit{ReadCloser: res.Body, max: max, left: max}
}
