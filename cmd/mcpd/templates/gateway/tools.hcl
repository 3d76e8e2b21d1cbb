# __PROJECT__: mcpd as a gateway in front of an MCP server you already
# run. Its tools are served through mcpd, with mcpd's argument checks,
# confirmations, scopes, limits and audit log in front of them.
#
# The upstream here is the reference server, started over stdio by npx
# (Node.js 18 or later). Its first start downloads the package and can
# take 10-20 s; mcpd logs that it is starting and serves its tools when
# it answers. Replace the command with your server's, or use
#   url = "https://mcp.example.com/mcp"
# for one that serves Streamable HTTP. Validating this file starts nothing.

server {
  name         = "__PROJECT__"
  instructions = "Tools of an MCP server behind mcpd, prefixed up_."
}

mcp_server "upstream" {
  command = ["npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]
  expose {
    prefix    = "up_"
    exclude   = ["*elicitation*", "*sampling*", "get-roots-list", "get-env"]
    when_down = "keep"
  }
}

# One upstream tool under a name and schema of your own: mcpd checks the
# narrower schema before the upstream sees a call.
tool "echo" {
  description = "Repeat a short message back."
  annotations {
    read_only = true
  }
  param "message" {
    type        = "string"
    description = "What to repeat"
    min_length  = 1
    max_length  = 200
  }
  timeout = "30s"
  mcp {
    server = "upstream"
    tool   = "echo"
  }
}
