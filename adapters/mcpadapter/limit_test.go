package mcpadapter

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLimitBody: an upstream's JSON answer, which the SDK reads whole, is
// cut off with an error past the bound; an event stream is left to the
// SDK's own per-event bound.
func TestLimitBody(t *testing.T) {
	tests := []struct {
		name, contentType string
		size              int
		wantErr           bool
	}{
		{"json under", "application/json", 100, false},
		{"json at the bound", "application/json; charset=utf-8", 128, false},
		{"json over", "application/json", 129, true},
		{"no content type, over", "", 129, true},
		{"event stream, over: the SDK bounds each event", "text/event-stream", 1000, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &http.Response{Header: http.Header{}, Body: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size)))}
			if tc.contentType != "" {
				res.Header.Set("Content-Type", tc.contentType)
			}
			limitBody(res, 128)
			b, err := io.ReadAll(res.Body)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "over 128 bytes") {
					t.Fatalf("read %d bytes, err %v; want an error naming the bound", len(b), err)
				}
				return
			}
			if err != nil || len(b) != tc.size {
				t.Fatalf("read %d bytes, err %v; want all %d", len(b), err, tc.size)
			}
		})
	}
	limitBody(nil, 1) // a failed round trip has no response
}
