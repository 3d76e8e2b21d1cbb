package serve

import (
	"bytes"
	"net/http"
)

// deferResponseFlush wraps the response writer of a POST. The SDK streams
// the answer to a POST as server-sent events and flushes after each event,
// so a plain call costs two writes to the socket: its response event, then
// the end of the stream when the handler returns. The wrapper skips the
// flush after an event that carries a JSON-RPC response: the stream of a
// POST ends as soon as its last response is written, and net/http then
// sends the held event and the end of the stream in one write. Everything
// else (events carrying a request or a notification, such as progress;
// comments; a flush with nothing written) is flushed at once as before, so
// streaming is unchanged. See docs/performance.md for the measurements.
func deferResponseFlush(w http.ResponseWriter) http.ResponseWriter {
	return &respWriter{ResponseWriter: w, rc: *http.NewResponseController(w), filter: true}
}

// isResponseEvent reports whether b is one server-sent event carrying a
// JSON-RPC response (an id, and no method). The SDK writes each event with
// one Write.
func isResponseEvent(b []byte) bool {
	return bytes.Contains(b, []byte("data: {")) && bytes.Contains(b, []byte(`"id":`)) && !bytes.Contains(b, []byte(`"method":`))
}
