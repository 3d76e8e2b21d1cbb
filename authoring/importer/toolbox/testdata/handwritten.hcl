# The tools of tools-v1.yaml written by hand in mcpd's language, to compare
# their rows with those of the converted ones.

database "hand-sqlite" {
  driver = "sqlite"
  dsn    = env("HOTELS_SQLITE")
}

database "hand-pg" {
  driver = "postgres"
  dsn    = env("MCPD_TEST_POSTGRES_DSN")
}

tool "hand_search_by_name" {
  description = "Search for hotels based on name."
  param "name" {
    type = "string"
  }
  sql {
    database = "hand-pg"
    query    = "SELECT id, name, location FROM mcpd_import_test.hotels WHERE name ILIKE '%' || :name || '%' ORDER BY id"
  }
}

tool "hand_price_range" {
  description = "Hotels whose price is within a range, cheapest first."
  param "min_price" {
    type = "number"
  }
  param "max_price" {
    type    = "number"
    default = 1000
  }
  param "location" {
    type     = "string"
    required = false
  }
  sql {
    database = "hand-pg"
    query    = "SELECT id, name, price::float8 AS price FROM mcpd_import_test.hotels WHERE price BETWEEN :min_price AND :max_price AND (:location::text IS NULL OR location = :location) ORDER BY price, id"
  }
}

tool "hand_by_location" {
  description = "Hotels in a city, from the SQLite copy."
  param "location" {
    type = "string"
  }
  param "limit" {
    type    = "integer"
    default = 10
  }
  sql {
    database = "hand-sqlite"
    query    = "SELECT id, name, location FROM hotels WHERE location = :location AND name <> '?' ORDER BY id LIMIT :limit"
  }
}

tool "hand_sorted" {
  description = "All hotels sorted by a column."
  param "column" {
    type = "string"
    enum = ["name", "price"]
  }
  sql {
    database    = "hand-sqlite"
    identifiers = { column = ["name", "price"] }
    query       = "SELECT id, name FROM hotels ORDER BY {{column}}, id"
  }
}
