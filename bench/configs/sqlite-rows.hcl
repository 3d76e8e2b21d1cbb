# Twenty rows of the SQLite point-query table (bench/run.sh): the same
# database as sqlite-point.hcl (and the same file, $MCPD_BENCH_DB), one
# read-only tool that returns the 20 items after an id.

database "bench" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_BENCH_DB", ".mcpd/sqlite-point.db")}"
  seed   = file("sqlite-point.sql")
}

tool "list_items" {
  description = "Twenty items of the catalogue, from an id on."
  annotations {
    read_only = true
  }
  param "after" {
    description = "The id after which the twenty items start (0: from the first)."
    type        = "integer"
    minimum     = 0
    maximum     = 9980
  }
  sql {
    database = "bench"
    query    = "SELECT id, name, price, stock, added FROM items WHERE id > :after ORDER BY id LIMIT 20"
  }
}
