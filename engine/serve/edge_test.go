package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/engine/serve"
)

// rawRequest sends one HTTP/1.1 request written by hand, so that the test
// controls every byte of the Host line and the header list, and returns the
// response.
func rawRequest(t *testing.T, addr, head, body string) (*http.Response, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	req := head + fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n\r\n", len(body)) + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp, string(raw)
}

const jsonHeaders = "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"

// The Host header is parsed strictly: a port that is not a number, userinfo,
// a path or an empty host is refused, so that no reading of the header other
// than mcpd's can see a different host.
func TestHostParsing(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	addr := strings.TrimPrefix(ts.URL, "http://")
	tests := []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:8080", "", 200},
		{"[::1]:80", "", 200},
		{"[0:0:0:0:0:0:0:1]", "", 200},
		{"localhost", "", 200},
		{"LOCALHOST:1", "", 200},
		{"mcp.example.com:443", "", 200},
		{"127.0.0.1:65535", "", 200},
		{"127.0.0.1:80.evil.example", "", 403},
		{"localhost:80.evil.example", "", 403},
		{"127.0.0.1:0", "", 403},
		{"127.0.0.1:65536", "", 403},
		{"127.0.0.1:", "", 403},
		{"127.0.0.1:+80", "", 403},
		{"127.0.0.1:080080", "", 403},
		{"[::1]80", "", 403},
		{"[::1", "", 403},
		{"[::1]:x", "", 403},
		{"[127.0.0.1]", "", 403},
		{"[fe80::1%25lo]", "", 403},
		{"::1", "", 403},
		{"evil@localhost", "", 400}, // net/http refuses it first
		{"localhost@evil.example", "", 400},
		{":8080", "", 403},
		{"localhost.evil.example", "", 403},
		{"127.0.0.1.nip.io", "", 403},
		// Origins go through the same parser.
		{"localhost", "http://localhost:3000", 200},
		{"localhost", "http://[::1]:3000", 200},
		{"localhost", "https://mcp.example.com", 200},
		{"localhost", "https://app.example.com", 200},
		{"localhost", "http://localhost:3000.evil.example", 403},
		{"localhost", "http://127.0.0.1:80.evil.example", 403},
		{"localhost", "http://evil@localhost", 403},
		{"localhost", "http://localhost@evil.example", 403},
		{"localhost", "http://localhost/path", 403},
		{"localhost", "http://", 403},
		{"localhost", "http://:80", 403},
	}
	for _, tc := range tests {
		t.Run(tc.host+" "+tc.origin, func(t *testing.T) {
			head := "POST /mcp HTTP/1.1\r\nHost: " + tc.host + "\r\n" + jsonHeaders
			if tc.origin != "" {
				head += "Origin: " + tc.origin + "\r\n"
			}
			resp, body := rawRequest(t, addr, head, initializeBody)
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
		})
	}
}

// An MCP header given twice with different values is refused with 400 and a
// JSON-RPC error, in both eras; the same value twice is accepted.
func TestDuplicateMCPHeaders(t *testing.T) {
	e := newEnv(t)
	ts := e.httpServer(t, serve.HTTPOptions{JSONResponse: true})
	addr := strings.TrimPrefix(ts.URL, "http://")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + meta + `,"name":"zeta_greet","arguments":{"name":"x"}}}`
	modernHead := jsonHeaders + "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
	tests := []struct {
		name, headers, body string
		want                int
	}{
		{"one Mcp-Name", modernHead + "Mcp-Name: zeta_greet\r\n", call, 200},
		{"same Mcp-Name twice", modernHead + "Mcp-Name: zeta_greet\r\nMcp-Name: zeta_greet\r\n", call, 200},
		{"two Mcp-Names", modernHead + "Mcp-Name: zeta_greet\r\nMcp-Name: slow\r\n", call, 400},
		{"two Mcp-Names, other case", modernHead + "Mcp-Name: zeta_greet\r\nmcp-name: mid_check\r\n", call, 400},
		{"two Mcp-Methods", jsonHeaders + "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Method: tools/list\r\nMcp-Name: zeta_greet\r\n", call, 400},
		{"two protocol versions", jsonHeaders + "MCP-Protocol-Version: 2026-07-28\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Method: tools/call\r\nMcp-Name: zeta_greet\r\n", call, 400},
		{"two session ids", jsonHeaders + "Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n", initializeBody, 400},
		{"two param headers", modernHead + "Mcp-Name: zeta_greet\r\nMcp-Param-Region: a\r\nMcp-Param-Region: b\r\n", call, 400},
		{"two other headers", modernHead + "Mcp-Name: zeta_greet\r\nX-Trace: a\r\nX-Trace: b\r\n", call, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawRequest(t, addr, "POST /mcp HTTP/1.1\r\nHost: localhost\r\n"+tc.headers, tc.body)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if tc.want != 400 {
				return
			}
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &msg); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("body is not a JSON-RPC error (%v, %s): %s", err, resp.Header.Get("Content-Type"), body)
			}
			if msg.JSONRPC != "2.0" || msg.Error.Code != mcp.CodeHeaderMismatch || !strings.Contains(msg.Error.Message, "more than once") {
				t.Errorf("error = %+v, want code %d about a repeated header", msg, mcp.CodeHeaderMismatch)
			}
		})
	}
}
