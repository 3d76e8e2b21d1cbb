# mcpd as a gateway: MCP servers a team already runs, served behind mcpd
# with its scopes, limits, confirmation, redaction and audit (see
# docs/gateway.md). Validating this file starts nothing: upstreams are
# started and connected only by `mcpd serve`.

server {
  name    = "gateway-example"
  version = "1.0.0"
}

# The reference server, run over stdio by npx (Node 22). Its tools are
# exposed in bulk with a prefix, except those that ask the client for
# something mcpd does not relay; its resources and prompts too.
mcp_server "everything" {
  command = ["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
  expose {
    prefix    = "ev_"
    exclude   = ["*elicitation*", "*sampling*", "get-roots-list", "get-env"]
    when_down = "keep"
    resources = true
    prompts   = true
    descriptions = {
      "echo" = "Repeat a message back, prefixed with \"Echo: \"."
    }
  }
}

# Another mcpd (or any Streamable HTTP MCP server), either protocol era,
# with a bearer token read from the environment when served.
mcp_server "inventory" {
  url              = "http://127.0.0.1:8081/mcp"
  headers          = { Authorization = "Bearer ${env("INVENTORY_TOKEN", "")}" }
  protocol_version = "2025-11-25"
  connect_timeout  = "5s"
}

# One upstream tool exposed on its own: mcpd's schema is narrower than the
# upstream's (two cities only), and the tool's timeout bounds the call.
tool "weather" {
  description = "Current weather in one of the cities we have offices in."
  param "location" {
    type        = "string"
    description = "The office's city."
    enum        = ["Chicago", "New York"]
  }
  annotations {
    read_only = true
  }
  timeout = "10s"
  mcp {
    server = "everything"
    tool   = "get-structured-content"
  }
}

# An upstream tool with a fixed argument the model never sees, behind
# mcpd's own confirmation.
tool "restock" {
  description = "Reorder a product for the main warehouse."
  param "sku" {
    type        = "string"
    description = "The product's SKU, e.g. TSHIRT-M-BLUE."
    pattern     = "^[A-Z0-9-]{3,20}$"
  }
  param "quantity" {
    type        = "integer"
    description = "How many to reorder."
    minimum     = 1
    maximum     = 500
  }
  annotations {
    destructive = true
  }
  confirm = "Reorder ${args.quantity} of ${args.sku}?"
  mcp {
    server    = "inventory"
    tool      = "reorder"
    arguments = { warehouse = "main" }
  }
}
