# __PROJECT__: a SQLite database served as MCP tools by mcpd.
#
# The database file is created and filled from seed.sql the first time a
# tool uses it, in the data directory: $MCPD_DATA_DIR when it is set (the
# mcpd container image sets /var/lib/mcpd, a writable volume), else .mcpd/
# beside this file. To serve a database you have, point dsn at its file
# (a relative path is relative to this file) and remove seed.

server {
  name         = "__PROJECT__"
  instructions = "A SQLite database of items. list_tables and describe_table show its tables; search_items finds items by name."
}

database "main" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_DATA_DIR", ".mcpd")}/__PROJECT__.db"
  seed   = file("seed.sql")
}

tool "list_tables" {
  description = "List the database's tables and views."
  annotations {
    read_only = true
  }
  sql {
    database = "main"
    max_rows = 1000
    query    = "SELECT name, type AS kind FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
  }
}

tool "describe_table" {
  description = "The columns of one table or view, in order: name, type, whether it may be null, default, and whether it is part of the primary key."
  annotations {
    read_only = true
  }
  param "table" {
    type        = "string"
    description = "The table's name, as list_tables gives it"
    min_length  = 1
    max_length  = 128
  }
  sql {
    database = "main"
    query    = <<-SQL
      SELECT name AS "column", type, "notnull" = 0 AS nullable, dflt_value AS "default", pk > 0 AS primary_key
      FROM pragma_table_info(:table)
      ORDER BY cid
    SQL
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no table ' + args.table + '; list_tables lists them.'"
  }
}

tool "search_items" {
  description = "Items whose name contains the given text (case-insensitive), cheapest first."
  annotations {
    read_only = true
  }
  param "text" {
    type        = "string"
    description = "Text the item's name contains"
    min_length  = 1
    max_length  = 100
  }
  sql {
    database = "main"
    max_rows = 50
    query    = <<-SQL
      SELECT id, name, price, in_stock
      FROM items
      WHERE name LIKE '%' || :text || '%'
      ORDER BY price, id
    SQL
  }
}
