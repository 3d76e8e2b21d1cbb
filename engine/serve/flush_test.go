package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// deferResponseFlush is the response writer of a POST without a write
// deadline.
func deferResponseFlush(w http.ResponseWriter) http.ResponseWriter {
	return &respWriter{ResponseWriter: w, rc: *http.NewResponseController(w), filter: true}
}

// A POST's response event waits for the end of the stream; anything else
// is flushed at once.
func TestDeferResponseFlush(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		flush  bool
	}{
		{"nothing written (headers)", nil, true},
		{"response", []string{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"}, false},
		{"error response", []string{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32602,\"message\":\"x\"}}\n\n"}, false},
		{"progress", []string{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"}, true},
		{"request", []string{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n"}, true},
		{"comment", []string{": ok\n\n"}, true},
		{"response after a notification", []string{
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n",
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := deferResponseFlush(rec)
			for _, s := range tt.writes {
				w.Write([]byte(s))
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Fatal(err)
			}
			if rec.Flushed != tt.flush {
				t.Errorf("flushed = %v, want %v", rec.Flushed, tt.flush)
			}
		})
	}
	// After a flush, the next event is judged on its own.
	rec := httptest.NewRecorder()
	w := deferResponseFlush(rec)
	w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"))
	http.NewResponseController(w).Flush()
	rec.Flushed = false
	w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	http.NewResponseController(w).Flush()
	if rec.Flushed {
		t.Error("the response after a flushed notification was flushed")
	}
}
