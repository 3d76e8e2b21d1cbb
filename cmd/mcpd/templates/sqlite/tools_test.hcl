# Tests of tools.hcl, run with `mcpd test` (offline: the database is
# created from seed.sql).

test "list_tables lists the seeded table" {
  tool          = "list_tables"
  text_contains = "items"
}

test "describe_table shows the columns" {
  tool          = "describe_table"
  args          = { table = "items" }
  text_contains = "in_stock"
}

test "describe_table names a table that does not exist" {
  tool          = "describe_table"
  args          = { table = "no_such_table" }
  is_error      = true
  text_contains = "There is no table no_such_table"
}

test "search_items finds an item" {
  tool          = "search_items"
  args          = { text = "lamp" }
  text_contains = "Desk lamp"
}
