# The gateway benchmark's gateway (bench/gateway-pair.sh and
# BenchmarkGatewayFloor in adapters/mcpadapter): its tool static is the static
# tool of an mcpd upstream serving bench/configs/static.hcl over HTTP at
# MCPD_BENCH_UPSTREAM (HTTP both hops). MCPD_BENCH_FAST_PATH=false sends
# its calls through the go-sdk client instead of the gateway's fast path
# (docs/performance.md, "The gateway's fast path").

mcp_server "up" {
  url   = env("MCPD_BENCH_UPSTREAM", "http://127.0.0.1:8081/mcp")
  start = "load"
  # The switch for the benchmark; fast_path is on by default.
  fast_path = env("MCPD_BENCH_FAST_PATH", "true") != "false"
}

tool "static" {
  description = "Returns a fixed text, from the upstream."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  mcp {
    server = "up"
  }
}
