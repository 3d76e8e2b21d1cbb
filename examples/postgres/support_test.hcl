# Tests of the support-desk tools. They run against the real database that
# DATABASE_URL names, which must hold schema.sql's tables and sample data
# (load it into a scratch database or schema first, as README.md shows):
#   DATABASE_URL=... mcpd test -c examples/postgres
# add_comment writes a comment on ticket 1. See docs/testing.md.

test "list_open_tickets_by_priority" {
  tool = "list_tickets"
  args = { status = "open", sort_by = "priority", limit = 3 }
  assert = [
    "len(fromJSON(text)) == 3",
    "all(fromJSON(text), .status == 'open')",
    "fromJSON(text)[0].id == 1",
  ]
}

test "list_tickets_rejects_an_unknown_sort" {
  tool          = "list_tickets"
  args          = { sort_by = "subject; DROP TABLE tickets" }
  is_error      = true
  text_contains = "sort_by"
}

test "get_ticket_with_tags_and_comments" {
  tool = "get_ticket"
  args = { id = 1 }
  assert = [
    "structured.customer == 'Northwind Traders'",
    "structured.tags == ['sso', 'login']",
    "len(structured.comments) >= 2",
  ]
}

test "get_ticket_unknown" {
  tool          = "get_ticket"
  args          = { id = 9999 }
  is_error      = true
  text_contains = "There is no ticket 9999"
}

test "ticket_stats_per_status" {
  tool   = "ticket_stats"
  assert = "map(fromJSON(text), .status) == ['closed', 'open', 'pending']"
}

test "add_comment_stores_quotes_as_text" {
  tool = "add_comment"
  args = { ticket_id = 1, author = "tests@mcpd.example", body = "'); DROP TABLE comments; --" }
  assert = [
    "structured.ticket_id == 1",
    "structured.id > 0",
  ]
}

test "add_comment_unknown_ticket" {
  tool          = "add_comment"
  args          = { ticket_id = 9999, author = "tests@mcpd.example", body = "hello" }
  is_error      = true
  text_contains = "There is no ticket 9999"
}
