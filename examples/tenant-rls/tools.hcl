# Orders of several tenants in one PostgreSQL table, each caller seeing only
# its own: every call runs as the caller's database role, with the caller's
# tenant in app.tenant, and the table's row-level-security policies
# (schema.sql) do the rest. See README.md beside this file, and
# docs/security.md ("Databases and shell").

auth {
  header = "X-Api-Key"

  api_key "acme" {
    value      = env("ACME_API_KEY")
    attributes = { tenant = "acme", db_role = "orders_member" }
  }
  api_key "globex" {
    value      = env("GLOBEX_API_KEY")
    attributes = { tenant = "globex", db_role = "orders_member" }
  }
  api_key "auditor" {
    value      = env("AUDITOR_API_KEY")
    attributes = { tenant = "audit", db_role = "orders_auditor" }
  }
}

database "orders" {
  driver         = "postgres"
  dsn            = env("DATABASE_URL") # as orders_mcpd, never as the tables' owner
  max_open_conns = 8

  # Every call of every tool on this database: SET LOCAL ROLE to the
  # caller's db_role (one of enum, or the call is refused), and
  # set_config('app.tenant', <the caller's tenant>, true), in the call's
  # own transaction.
  identity {
    role {
      from_caller = "claims.db_role"
      enum        = ["orders_member", "orders_auditor"]
    }
    setting "tenant" {
      from_caller = "claims.tenant"
      pattern     = "^[a-z0-9-]{1,63}$"
    }
  }
}

tool "list_orders" {
  description = "List the orders the caller may see, newest first."
  annotations {
    read_only = true
  }
  param "limit" {
    description = "How many orders to return at most"
    type        = "integer"
    minimum     = 1
    maximum     = 500
    default     = 100
  }
  sql {
    database = "orders"
    query    = "SELECT id, tenant, item, total FROM orders ORDER BY id DESC LIMIT :limit"
  }
}

tool "add_order" {
  description = "Record an order for the caller's own tenant."
  annotations {
    read_only   = false
    destructive = false
  }
  param "item" {
    description = "What was ordered"
    type        = "string"
    min_length  = 1
    max_length  = 200
  }
  param "total" {
    description = "The order's total"
    type        = "number"
    minimum     = 0
  }
  sql {
    database  = "orders"
    read_only = false
    query     = <<-SQL
      INSERT INTO orders (tenant, item, total)
      VALUES (current_setting('app.tenant'), :item, :total)
      RETURNING id, tenant, item, total
    SQL
  }
}

tool "whoami" {
  description = "Show the database role and tenant the caller's calls run as."
  annotations {
    read_only = true
  }
  sql {
    database = "orders"
    query    = "SELECT current_user AS db_role, current_setting('app.tenant', true) AS tenant"
  }
}
