# Tests of the help desk's tools, run with
#   mcpd test -c examples/toolsets
# (see docs/testing.md). What each toolset serves is tested by
# cmd/mcpd/toolset_e2e_test.go, over stdio and HTTP.

test "get_ticket" {
  tool          = "get_ticket"
  args          = { id = 7 }
  text_contains = "ticket #7"
}

test "set_priority_rejects_unknown_level" {
  tool          = "set_priority"
  args          = { id = 7, priority = "whenever" }
  is_error      = true
  text_contains = "priority"
}

test "search_tickets" {
  tool          = "search_tickets"
  args          = { text = "printer" }
  text_contains = "tickets matching printer"
}
