# The result cache benchmark on Redis (bench/run.sh, "Result cache"):
# sqlite-point-cached.hcl with the cache on the Redis at $MCPD_BENCH_REDIS
# (default redis://127.0.0.1:6379), as replicas would share it.

server {
  name = "bench"
  state {
    redis      = env("MCPD_BENCH_REDIS", "redis://127.0.0.1:6379")
    key_prefix = env("MCPD_BENCH_REDIS_PREFIX", "mcpd-bench")
  }
}

database "bench" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_BENCH_DB", ".mcpd/sqlite-point.db")}"
  seed   = file("sqlite-point.sql")
}

tool "get_item" {
  description = "One item of the catalogue, by id."
  annotations {
    read_only = true
  }
  param "id" {
    type    = "integer"
    minimum = 1
    maximum = 10000
  }
  cache {
    ttl    = "1h"
    shared = true
  }
  sql {
    database = "bench"
    query    = "SELECT id, name, price, stock, added FROM items WHERE id = :id"
  }
}
