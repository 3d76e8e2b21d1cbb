# mcpd as a gateway in front of a second mcpd that serves the conformance
# suite's fixtures (examples/conformance): what the official suite scores
# against this config is what the gateway forwards faithfully (see
# README.md beside this file, and docs/gateway.md).

server {
  name    = "gateway-conformance"
  version = "1.0.0"
}

# The upstream: `mcpd serve --stdio` of examples/conformance and the state
# directory its hook tools write to, started and supervised by the gateway.
# MCPD_BIN names the mcpd binary (default: `mcpd` on the PATH below);
# MCPD_CONFORMANCE_STATE the state directory (see examples/conformance).
mcp_server "fixtures" {
  command = [env("MCPD_BIN", "mcpd"), "serve", "--stdio", "-c", "../conformance", "-c", env("MCPD_CONFORMANCE_STATE", "/tmp/mcpd-conformance-state")]
  dir     = "."
  env = {
    MCPD_CONFORMANCE_STATE = env("MCPD_CONFORMANCE_STATE", "/tmp/mcpd-conformance-state")
  }
  # The fixtures change their own tool and prompt lists on purpose
  # (test_trigger_tool_change): served as they change, each change logged
  # and audited, rather than quarantined until mcpd.lock is updated.
  on_drift = "allow"
  expose {
    resources = true
    prompts   = true
  }
}
