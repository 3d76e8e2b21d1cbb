# A support desk in PostgreSQL, served as MCP tools by the SQL adapter.
# See README.md beside this file, and docs/adapter-sql.md.

database "support" {
  driver         = "postgres"
  dsn            = env("DATABASE_URL")
  max_open_conns = 5
  query_timeout  = "10s"
}

tool "list_tickets" {
  description = "List support tickets, optionally only those of one status: oldest or most urgent first."
  annotations {
    read_only = true
  }
  param "status" {
    description = "Only tickets in this status"
    type        = "string"
    enum        = ["open", "pending", "closed"]
    required    = false
  }
  param "sort_by" {
    type        = "string"
    description = "opened_at: oldest first; priority: most urgent (1) first"
    enum        = ["opened_at", "priority"]
    default     = "opened_at"
  }
  param "limit" {
    description = "How many tickets to return at most"
    type        = "integer"
    minimum     = 1
    maximum     = 200
    default     = 20
  }
  sql {
    database    = "support"
    identifiers = { sort_by = ["opened_at", "priority"] }
    query       = <<-SQL
      SELECT t.id, t.subject, t.status, t.priority, c.name AS customer, c.plan, t.opened_at
      FROM tickets t
      JOIN customers c ON c.id = t.customer_id
      WHERE :status::text IS NULL OR t.status = :status
      ORDER BY t.{{sort_by}}, t.id
      LIMIT :limit
    SQL
  }
}

tool "get_ticket" {
  description = "One ticket by id, with its customer and its comments in order."
  annotations {
    read_only = true
  }
  param "id" {
    description = "The ticket's id, as list_tickets returns it"
    type        = "integer"
    minimum     = 1
  }
  sql {
    database = "support"
    query    = <<-SQL
      SELECT t.id, t.subject, t.status, t.priority, to_json(t.tags) AS tags, t.opened_at, t.closed_at,
             c.name AS customer, c.email, c.plan,
             coalesce((SELECT json_agg(json_build_object('author', m.author, 'body', m.body, 'at', m.created_at)
                                       ORDER BY m.created_at, m.id)
                       FROM comments m
                       WHERE m.ticket_id = t.id), '[]'::json) AS comments
      FROM tickets t
      JOIN customers c ON c.id = t.customer_id
      WHERE t.id = :id
    SQL
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no ticket ' + string(args.id) + '; list_tickets gives the ids.'"
    structured    = "rows[0]"
  }
}

# The same for every caller and fine a minute old: cached, so that a model
# asking again does not run the aggregate again (docs/config.md, "cache").
tool "ticket_stats" {
  description = "Tickets per status: how many, how many urgent, and their average age in hours."
  annotations {
    read_only = true
  }
  cache {
    ttl    = "1m"
    shared = true
  }
  sql {
    database = "support"
    query    = <<-SQL
      SELECT status,
             count(*) AS tickets,
             count(*) FILTER (WHERE priority = 1) AS urgent,
             round(avg(extract(epoch FROM coalesce(closed_at, now()) - opened_at) / 3600)::numeric, 1)::float8 AS avg_age_hours
      FROM tickets
      GROUP BY status
      ORDER BY status
    SQL
  }
}

# The one tool that writes: it says so twice, to MCP clients (annotations)
# and to the adapter (read_only = false). Without the latter the database
# would refuse the INSERT.
tool "add_comment" {
  description = "Add a comment to a ticket. Returns the new comment's id and time."
  annotations {
    read_only   = false
    destructive = false
    idempotent  = false
  }
  param "ticket_id" {
    description = "The id of the ticket to comment on"
    type        = "integer"
    minimum     = 1
  }
  param "author" {
    type        = "string"
    description = "Email address of whoever writes the comment"
    min_length  = 3
    max_length  = 200
  }
  param "body" {
    description = "The comment's text"
    type        = "string"
    min_length  = 1
    max_length  = 5000
  }
  sql {
    database  = "support"
    read_only = false
    query     = <<-SQL
      INSERT INTO comments (ticket_id, author, body)
      SELECT t.id, :author, :body
      FROM tickets t
      WHERE t.id = :ticket_id
      RETURNING id, ticket_id, created_at
    SQL
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no ticket ' + string(args.ticket_id) + '.'"
    structured    = "rows[0]"
  }
}
