# Tests of tools.hcl, run with `mcpd test` against the database in
# DATABASE_URL. They read only PostgreSQL's own catalog, so they pass on
# any database.

test "list_tables lists the catalog's tables" {
  tool          = "list_tables"
  args          = { schema = "pg_catalog" }
  text_contains = "pg_class"
}

test "describe_table shows a table's columns" {
  tool          = "describe_table"
  args          = { schema = "pg_catalog", table = "pg_namespace" }
  text_contains = "nspname"
}

test "describe_table names a table that does not exist" {
  tool          = "describe_table"
  args          = { table = "no_such_table_here" }
  is_error      = true
  text_contains = "There is no table public.no_such_table_here"
}
