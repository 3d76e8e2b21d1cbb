package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"
)

// The SQLite mode (--sqlite FILE) serves get_item as bench/configs/
// sqlite-point.hcl declares it, written the way a Go developer would write
// that one tool on the bare SDK: database/sql with modernc's driver and one
// connection, QueryContext with the SQL text (no statement kept prepared),
// the row scanned into a struct, and the rows' JSON as the text answer, as
// Google's MCP Toolbox answers.

// getItemSchema is the input schema mcpd derives from the config's param.
const getItemSchema = `{"additionalProperties":false,"properties":{"id":{"maximum":10000,"minimum":1,"type":"integer"}},"required":["id"],"type":"object"}`

const getItemSQL = "SELECT id, name, price, stock, added FROM items WHERE id = ?"

type item struct {
	ID    int64   `json:"id"`
	Name  string  `json:"name"`
	Price float64 `json:"price"`
	Stock int64   `json:"stock"`
	Added string  `json:"added"`
}

type itemArgs struct {
	ID int64 `json:"id"`
}

// openSQLite opens the database file with one connection and, when it has
// no tables yet, runs the seed script in it, as mcpd does on its first call
// (WAL, then the script in an IMMEDIATE transaction, so that whichever of
// the two servers of a pair comes first seeds it and the other waits).
func openSQLite(ctx context.Context, path, seedFile string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=5000&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if seedFile == "" {
		return db, nil
	}
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		return nil, err
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return nil, fmt.Errorf("reading the schema: %w", err)
	}
	if n > 0 {
		return db, nil
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode = WAL"); err != nil {
		return nil, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil || n > 0 {
		return db, err
	}
	if _, err := tx.ExecContext(ctx, string(seed)); err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	return db, tx.Commit()
}

func addSQLiteTool(s *mcp.Server, db *sql.DB, typed bool) {
	tool := &mcp.Tool{
		Name:        "get_item",
		Description: "One item of the catalogue, by id.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(getItemSchema),
	}
	query := func(ctx context.Context, id int64) (*mcp.CallToolResult, error) {
		rows, err := db.QueryContext(ctx, getItemSQL, id)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		items := []item{}
		for rows.Next() {
			var it item
			if err := rows.Scan(&it.ID, &it.Name, &it.Price, &it.Stock, &it.Added); err != nil {
				return nil, err
			}
			items = append(items, it)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		b, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
	if typed {
		mcp.AddTool(s, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in itemArgs) (*mcp.CallToolResult, any, error) {
			res, err := query(ctx, in.ID)
			return res, nil, err
		})
		return
	}
	s.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in itemArgs
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		res, err := query(ctx, in.ID)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		return res, nil
	})
}
