tool "get_book" {
  description = "A book by id"
  param "id" {
    type    = "integer"
    minimum = 1
  }
  sql {
    database = "shop"
    query    = "SELECT id, title FROM books WHERE id = :id"
    max_rows = 10 * 10
  }
}

tool "get_user" {
  description = "A user by name"
  param "name" {
    type = "string"
  }
  http {
    backend = "api"
    path    = "/users/${args.name}"
  }
}
