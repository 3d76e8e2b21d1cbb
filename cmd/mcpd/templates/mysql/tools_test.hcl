# Tests of tools.hcl, run with `mcpd test` against the database in
# MYSQL_DSN. They read only information_schema, so they pass on any
# database.

test "list_tables lists information_schema's tables" {
  tool          = "list_tables"
  args          = { database = "information_schema" }
  text_contains = "COLUMNS"
}

test "describe_table shows a table's columns" {
  tool          = "describe_table"
  args          = { database = "information_schema", table = "TABLES" }
  text_contains = "TABLE_SCHEMA"
}

test "describe_table names a table that does not exist" {
  tool          = "describe_table"
  args          = { table = "no_such_table_here" }
  is_error      = true
  text_contains = "There is no table no_such_table_here"
}
