# An orders API behind an OAuth 2.0 authorization server, called with the
# caller's own identity. See README.md.
#
# mcpd is an OAuth resource server here (the auth block): each MCP client
# signs its user in at the authorization server and sends the access token
# it gets. The tools then reach the APIs in the three identity modes:
#
#   list_orders     token_exchange: the user's token is exchanged for one
#                   issued to the orders API, naming the user (sub) and
#                   mcpd (act), so that the API's own permissions apply.
#   orders_health   client_credentials: mcpd's own service identity, for
#                   a call that is not on anyone's behalf.
#   my_profile      passthrough: the user's token itself, forwarded only
#                   when its audience includes the profile API.
#
# Every address has a default that names the production services; the test
# (cmd/mcpd/identity_e2e_test.go) points them at a test authorization
# server. ORDERS_CLIENT_SECRET has no default: serving needs it.

auth {
  resource = env("MCPD_RESOURCE", "https://mcp.example.com/mcp")
  oauth {
    issuer     = env("AUTH_ISSUER", "https://auth.example.com")
    jwks_url   = env("AUTH_JWKS_URL", "https://auth.example.com/.well-known/jwks.json")
    algorithms = ["ES256", "RS256"]
  }
}

http_backend "orders" {
  base_url = env("ORDERS_API_URL", "https://orders.example.com/v1")
  timeout  = "10s"
  identity {
    mode          = "token_exchange"
    token_url     = env("AUTH_TOKEN_URL", "https://auth.example.com/oauth2/token")
    client_id     = "mcpd"
    client_secret = env("ORDERS_CLIENT_SECRET")
    audience      = "https://orders.example.com"
    scopes        = ["orders.read"]
  }
}

http_backend "profile" {
  base_url = env("PROFILE_API_URL", "https://profile.example.com")
  identity {
    mode     = "passthrough"
    audience = "https://profile.example.com"
  }
}

tool "list_orders" {
  description = "List the signed-in user's orders, newest first, as the orders API shows them to that user."
  annotations {
    read_only  = true
    open_world = true
  }
  param "status" {
    type        = "string"
    description = "Only orders with this status"
    enum        = ["open", "shipped", "cancelled"]
    default     = "open"
  }
  http {
    backend = "orders"
    path    = "/orders"
    query   = { status = args.status }
  }
}

tool "orders_health" {
  description = "Check that the orders API is up, with mcpd's own service identity rather than the user's."
  annotations {
    read_only  = true
    open_world = true
  }
  http {
    backend = "orders"
    path    = "/health"
    # This tool's identity replaces the backend's: the service account.
    identity {
      mode          = "client_credentials"
      token_url     = env("AUTH_TOKEN_URL", "https://auth.example.com/oauth2/token")
      client_id     = "mcpd"
      client_secret = env("ORDERS_CLIENT_SECRET")
      audience      = "https://orders.example.com"
      scopes        = ["orders.health"]
    }
  }
}

tool "my_profile" {
  description = "Show the signed-in user's profile: name, email and preferences."
  annotations {
    read_only  = true
    open_world = true
  }
  http {
    backend = "profile"
    path    = "/me"
  }
}
