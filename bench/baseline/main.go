// Command baseline is the reference the benchmark harness measures mcpd
// against: the smallest server on the bare go-sdk that serves the same tools
// with the same SDK settings (capabilities, page size, Streamable HTTP
// options, and mcpd's routing of the two protocol eras between a stateful
// and a stateless handler). It does nothing mcpd does on top of the SDK:
// no config, no snapshot, no argument validation, no result shaping.
//
//	baseline --http 127.0.0.1:8081 [--json-response] [--tools 1000]
//	baseline --http 127.0.0.1:8081 --sqlite items.db --seed bench/configs/sqlite-point.sql
//	baseline --stdio
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd/mcpd/bench/internal/profile"
)

// The texts match bench/configs/static.hcl.
const staticText = "This is a static response."

func main() {
	addr := flag.String("http", "127.0.0.1:8081", "address for Streamable HTTP; the endpoint is /mcp")
	stdio := flag.Bool("stdio", false, "serve one client on stdin/stdout")
	jsonResp := flag.Bool("json-response", false, "answer with application/json instead of SSE where possible")
	sessionTimeout := flag.Duration("session-timeout", 30*time.Minute, "close legacy sessions idle this long")
	tools := flag.Int("tools", 0, "also serve this many generated tools (tool_00000 ...), as loadgen -gen-tools declares them")
	cpu := flag.String("cpuprofile", "", "write a CPU profile here on SIGTERM")
	allocs := flag.String("allocprofile", "", "write an allocation profile here on SIGTERM")
	typed := flag.Bool("typed", false, "register static, echo and get_item with the SDK's generic mcp.AddTool (decode, validate, re-encode) instead of Server.AddTool")
	sqlitePath := flag.String("sqlite", "", "also serve get_item, bench/configs/sqlite-point.hcl's point query, on this SQLite file")
	seed := flag.String("seed", "", "with --sqlite: the script that fills the database when it has no tables")
	flag.Parse()
	stop := profile.Start(*cpu, *allocs)
	defer stop()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := mcp.NewServer(&mcp.Implementation{Name: "baseline", Version: "1.0.0"}, &mcp.ServerOptions{
		Logger:   logger,
		PageSize: 1000,
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
		},
	})
	addTools(s, *typed, *tools)
	if *sqlitePath != "" {
		db, err := openSQLite(context.Background(), *sqlitePath, *seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "baseline: sqlite:", err)
			os.Exit(1)
		}
		defer db.Close()
		addSQLiteTool(s, db, *typed)
	}

	if *stdio {
		var t mcp.Transport = &mcp.StdioTransport{}
		if os.Getenv("BASELINE_NONBLOCK") != "" {
			syscall.SetNonblock(0, true)
			t = &mcp.IOTransport{Reader: os.NewFile(0, "stdin"), Writer: os.Stdout}
		}
		if err := s.Run(context.Background(), t); err != nil {
			logger.Error("stdio", "err", err)
		}
		return
	}
	getServer := func(*http.Request) *mcp.Server { return s }
	legacy := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		JSONResponse: *jsonResp, SessionTimeout: *sessionTimeout, Logger: logger,
	})
	modern := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: *jsonResp, Logger: logger,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") != "" {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	}))
	hs := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := hs.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

type nameArgs struct {
	Name string `json:"name,omitempty"`
}

type textArgs struct {
	Text string `json:"text"`
}

func addTools(s *mcp.Server, typed bool, n int) {
	nameSchema := json.RawMessage(`{"additionalProperties":false,"properties":{"name":{"maxLength":64,"type":"string"}},"type":"object"}`)
	textSchema := json.RawMessage(`{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`)
	if typed {
		mcp.AddTool(s, &mcp.Tool{Name: "static", Description: "Returns a fixed text.", InputSchema: nameSchema},
			func(context.Context, *mcp.CallToolRequest, nameArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: staticText}}}, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its argument.", InputSchema: textSchema},
			func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
			})
	} else {
		s.AddTool(&mcp.Tool{Name: "static", Description: "Returns a fixed text.", InputSchema: nameSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: staticText}}}, nil
			})
		s.AddTool(&mcp.Tool{Name: "echo", Description: "Returns its argument.", InputSchema: textSchema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in textArgs
				if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil
			})
	}
	// The generated tools have the input schema mcpd derives from
	// loadgen -gen-tools' params, so that tools/list carries the same bytes.
	manySchema := json.RawMessage(`{"additionalProperties":false,"properties":{"id":{"minimum":1,"type":"integer"},"name":{"pattern":"^[a-z]+$","type":"string"}},"required":["id"],"type":"object"}`)
	for i := 0; i < n; i++ {
		s.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%05d", i), Description: fmt.Sprintf("Tool number %d", i), InputSchema: manySchema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: map[string]any{}, Content: []mcp.Content{}}, nil
			})
	}
}
