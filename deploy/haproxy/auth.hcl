# The auth block for the replicas behind deploy/haproxy/haproxy.cfg, which
# sends traffic only to replicas that authenticate callers. Serve it with
# your config:
#
#   MCPD_API_KEY_FILE=/run/secrets/mcpd-api-key \
#     mcpd serve --http 127.0.0.1:8081 -c /etc/mcpd -c deploy/haproxy/auth.hcl \
#     --allowed-host mcp.example.com --shutdown-delay 3s
#
# Clients send the key as `Authorization: Bearer <key>`. The file holds the
# key alone (a trailing newline is ignored); make one with
#   head -c 32 /dev/urandom | base64 > /run/secrets/mcpd-api-key
# and give every replica the same file. Rotate it by replacing the file
# and sending SIGHUP to every replica: mcpd reloads and the new key counts
# from the next request. (mcpd watches only the files a config names
# literally, and this path comes from the environment.) For more than
# one caller, one api_key block each (the name is the principal in the audit
# log), or OAuth: see docs/security.md. A config has at most one auth block:
# merge this one into yours if it has one.
auth {
  api_key "clients" {
    value = trimspace(file(env("MCPD_API_KEY_FILE", "/run/secrets/mcpd-api-key")))
  }
}
