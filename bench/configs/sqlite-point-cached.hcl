# The result cache benchmark (bench/run.sh, "Result cache"): sqlite-point.hcl
# with its tool's results cached in memory, shared by every caller;
# sqlite-point-redis.hcl is the same on Redis.

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
