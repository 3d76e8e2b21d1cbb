# The SQLite point-query benchmark (bench/run.sh): one read-only tool that
# looks a row up by its primary key in a 10,000-row table. The database file
# is created and seeded on the first call, at $MCPD_BENCH_DB (run.sh puts it
# in its results directory) or else .mcpd/ beside this file.

database "bench" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_BENCH_DB", ".mcpd/sqlite-point.db")}"
  seed   = file("sqlite-point.sql")
  max_idle_conns = 10
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
  sql {
    database = "bench"
    query    = "SELECT id, name, price, stock, added FROM items WHERE id = :id"
  }
}
