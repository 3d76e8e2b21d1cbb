# bench/run.sh's shared-state section: one tool "work", rate limited in Redis with
# every call decided there (local_reserve = 0: no local reservations).
# The rate is far above the load: every call is admitted, so what is
# measured is the cost of checking the limit.

server {
  name = "bench"
  state {
    redis         = env("MCPD_BENCH_REDIS_URL", "redis://127.0.0.1:6379")
    key_prefix    = "mcpd-bench-exact"
    local_reserve = 0
  }
}

tool "work" {
  description = "Returns a fixed text."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  rate_limit {
    per_caller = "1000000/s"
    per_tool   = "1000000/s"
  }
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}
