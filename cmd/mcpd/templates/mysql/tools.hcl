# __PROJECT__: a MySQL or MariaDB database served as MCP tools by mcpd.
#
# The connection string comes from MYSQL_DSN when mcpd loads this file, in
# the Go MySQL driver's form: reader:secret@tcp(db.example.com:3306)/app.
# Connect as a user that may read only what the tools should show: the
# tools are read-only, and the user's grants are what keep them so.

server {
  name         = "__PROJECT__"
  instructions = "A MySQL database. list_tables lists the tables of a database and describe_table shows a table's columns: look there before writing about the data."
}

database "main" {
  driver         = "mysql"
  dsn            = env("MYSQL_DSN")
  max_open_conns = 5
  query_timeout  = "10s"
}

tool "list_tables" {
  description = "List the tables and views of a database (the connection's own when none is given), with their estimated row counts and comments."
  annotations {
    read_only = true
  }
  param "database" {
    type        = "string"
    description = "The database (schema); the connection's own when left out"
    required    = false
    max_length  = 64
  }
  sql {
    database = "main"
    max_rows = 1000
    query    = <<-SQL
      SELECT TABLE_NAME AS name, TABLE_TYPE AS kind, TABLE_ROWS AS estimated_rows, TABLE_COMMENT AS comment
      FROM information_schema.TABLES
      WHERE TABLE_SCHEMA = coalesce(:database, DATABASE())
      ORDER BY TABLE_NAME
    SQL
  }
}

tool "describe_table" {
  description = "The columns of one table or view, in order: name, type, whether it may be null, default, key and comment."
  annotations {
    read_only = true
  }
  param "table" {
    type        = "string"
    description = "The table's name, as list_tables gives it"
    min_length  = 1
    max_length  = 64
  }
  param "database" {
    type        = "string"
    description = "The table's database (schema); the connection's own when left out"
    required    = false
    max_length  = 64
  }
  sql {
    database = "main"
    query    = <<-SQL
      SELECT COLUMN_NAME AS `column`, COLUMN_TYPE AS type, IS_NULLABLE = 'YES' AS nullable,
             COLUMN_DEFAULT AS `default`, COLUMN_KEY AS `key`, COLUMN_COMMENT AS comment
      FROM information_schema.COLUMNS
      WHERE TABLE_SCHEMA = coalesce(:database, DATABASE()) AND TABLE_NAME = :table
      ORDER BY ORDINAL_POSITION
    SQL
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no table ' + args.table + '; list_tables lists them.'"
  }
}

# Your own tools go here: one query each, with typed params bound as
# parameters (never spliced into the SQL). mcpd's docs/adapter-sql.md.
