# __PROJECT__: a PostgreSQL database served as MCP tools by mcpd.
#
# The connection string comes from DATABASE_URL when mcpd loads this file,
# e.g. postgres://reader:secret@db.example.com:5432/app?sslmode=require.
# Connect as a role that may read only what the tools should show: the
# tools are read-only, and the role is what keeps them so.

server {
  name         = "__PROJECT__"
  instructions = "A PostgreSQL database. list_tables lists the tables of a schema and describe_table shows a table's columns: look there before writing about the data."
}

database "main" {
  driver         = "postgres"
  dsn            = env("DATABASE_URL")
  max_open_conns = 5
  query_timeout  = "10s"
}

tool "list_tables" {
  description = "List the tables and views of one schema, with their estimated row counts and comments."
  annotations {
    read_only = true
  }
  param "schema" {
    type        = "string"
    description = "The schema, e.g. public"
    default     = "public"
    max_length  = 63
  }
  sql {
    database = "main"
    max_rows = 1000
    query    = <<-SQL
      SELECT c.relname AS name,
             CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table' ELSE 'table' END AS kind,
             greatest(c.reltuples, 0)::bigint AS estimated_rows,
             obj_description(c.oid, 'pg_class') AS comment
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = :schema AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      ORDER BY c.relname
    SQL
  }
}

tool "describe_table" {
  description = "The columns of one table or view, in order: name, type, whether it may be null, default and comment."
  annotations {
    read_only = true
  }
  param "table" {
    type        = "string"
    description = "The table's name, as list_tables gives it"
    min_length  = 1
    max_length  = 63
  }
  param "schema" {
    type        = "string"
    description = "The table's schema"
    default     = "public"
    max_length  = 63
  }
  sql {
    database = "main"
    query    = <<-SQL
      SELECT a.attname AS column,
             format_type(a.atttypid, a.atttypmod) AS type,
             NOT a.attnotnull AS nullable,
             pg_get_expr(d.adbin, d.adrelid) AS default,
             col_description(a.attrelid, a.attnum) AS comment
      FROM pg_attribute a
      JOIN pg_class c ON c.oid = a.attrelid
      JOIN pg_namespace n ON n.oid = c.relnamespace
      LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = :schema AND c.relname = :table AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum
    SQL
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no table ' + args.schema + '.' + args.table + '; list_tables lists them.'"
  }
}

# Your own tools go here: one query each, with typed params bound as
# parameters (never spliced into the SQL). mcpd's docs/adapter-sql.md.
