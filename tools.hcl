# mcpd's default config: what `mcpd serve` runs with no flags, from the
# repository's root. It needs no setup and no network to start: the SQL
# tools use an embedded SQLite bookshop, created and seeded on first use in
# .mcpd/demo.db from demo/seed.sql. The HTTP tool needs the network when it
# is called, and says so when it cannot reach it.
#
# Edit this file while mcpd runs: it reloads, and connected clients are told.
# The language is documented in docs/config.md.

server {
  name         = "mcpd-demo"
  instructions = "A bookshop database (list_books, search_books, get_book, top_authors, sales_summary, restock), a word counter run as a local program, and a GitHub repository lookup."
}

database "demo" {
  driver = "sqlite"
  # In the container image, MCPD_DATA_DIR=/var/lib/mcpd (a volume).
  dsn  = "file:${env("MCPD_DATA_DIR", ".mcpd")}/demo.db"
  seed = file("demo/seed.sql")
}

tool "list_books" {
  description = "List the bookshop's books, optionally only one genre, sorted by title, year or price."
  annotations {
    read_only = true
  }
  param "genre" {
    type        = "string"
    description = "Only books of this genre"
    enum        = ["fiction", "science-fiction", "fantasy", "mystery", "poetry", "non-fiction"]
    required    = false
  }
  param "sort_by" {
    description = "The column to sort by"
    type        = "string"
    enum        = ["title", "year", "price"]
    default     = "title"
  }
  param "limit" {
    description = "How many books to return at most"
    type        = "integer"
    minimum     = 1
    maximum     = 100
    default     = 20
  }
  sql {
    database    = "demo"
    identifiers = { sort_by = ["title", "year", "price"] }
    query       = <<-SQL
      SELECT b.id, b.title, a.name AS author, b.genre, b.year, b.price, b.in_stock
      FROM books b
      JOIN authors a ON a.id = b.author_id
      WHERE :genre IS NULL OR b.genre = :genre
      ORDER BY b.{{sort_by}}, b.id
      LIMIT :limit
    SQL
  }
}

tool "search_books" {
  description = "Books whose title or author contains the given text (case-insensitive)."
  annotations {
    read_only = true
  }
  param "text" {
    description = "Text the title or author name contains"
    type        = "string"
    min_length  = 2
    max_length  = 100
  }
  sql {
    database = "demo"
    max_rows = 50
    query    = <<-SQL
      SELECT b.id, b.title, a.name AS author, b.year
      FROM books b
      JOIN authors a ON a.id = b.author_id
      WHERE b.title LIKE '%' || :text || '%' OR a.name LIKE '%' || :text || '%'
      ORDER BY b.title
    SQL
  }
}

tool "get_book" {
  description = "One book by id: its author, details, stock and copies sold."
  annotations {
    read_only = true
  }
  param "id" {
    description = "The book's id, as list_books returns it"
    type        = "integer"
    minimum     = 1
  }
  sql {
    database = "demo"
    query    = <<-SQL
      SELECT b.id, b.title, a.name AS author, a.country, b.genre, b.year, b.pages, b.price, b.in_stock,
             (SELECT coalesce(sum(s.quantity), 0) FROM sales s WHERE s.book_id = b.id) AS copies_sold
      FROM books b
      JOIN authors a ON a.id = b.author_id
      WHERE b.id = :id
    SQL
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no book with id ' + string(args.id) + '; list_books or search_books give the ids.'"
    structured    = "rows[0]"
  }
}

tool "top_authors" {
  description = "Authors ranked by copies sold (cancelled orders excluded)."
  annotations {
    read_only = true
  }
  param "limit" {
    description = "How many authors to return"
    type        = "integer"
    minimum     = 1
    maximum     = 50
    default     = 5
  }
  sql {
    database = "demo"
    query    = <<-SQL
      SELECT author, count(DISTINCT book_id) AS titles, sum(quantity) AS copies, round(sum(revenue), 2) AS revenue
      FROM sales
      GROUP BY author
      ORDER BY copies DESC, revenue DESC
      LIMIT :limit
    SQL
  }
}

tool "sales_summary" {
  description = "Orders, copies sold and revenue (cancelled orders excluded), grouped by genre, month, city or author."
  annotations {
    read_only = true
  }
  param "group_by" {
    description = "What to total the sales by"
    type        = "string"
    enum        = ["genre", "month", "city", "author"]
    default     = "genre"
  }
  sql {
    database    = "demo"
    identifiers = { group_by = ["genre", "month", "city", "author"] }
    query       = <<-SQL
      SELECT {{group_by}}, count(DISTINCT order_id) AS orders, sum(quantity) AS copies, round(sum(revenue), 2) AS revenue
      FROM sales
      GROUP BY {{group_by}}
      ORDER BY revenue DESC
    SQL
  }
}

tool "restock" {
  description = "Add copies of a book to the stock; returns the new stock."
  # Asks the user before every call (mcpd call: --yes).
  confirm = "Restock ${args.copies} copies of book ${args.id}?"
  annotations {
    read_only   = false
    destructive = false
    idempotent  = false
  }
  param "id" {
    description = "The book's id"
    type        = "integer"
    minimum     = 1
  }
  param "copies" {
    description = "How many copies to add to the stock"
    type        = "integer"
    minimum     = 1
    maximum     = 100
  }
  sql {
    database  = "demo"
    read_only = false
    query     = "UPDATE books SET in_stock = in_stock + :copies WHERE id = :id RETURNING id, title, in_stock"
  }
  result {
    error_when    = "row_count == 0"
    error_message = "'There is no book with id ' + string(args.id) + '.'"
    structured    = "rows[0]"
  }
}

# A local program, run without a shell: the argument reaches `wc` on its
# standard input, never as part of a command line.
tool "word_count" {
  description = "Count the lines, words and characters of a text."
  annotations {
    read_only  = true
    idempotent = true
  }
  param "text" {
    type        = "string"
    description = "The text to count"
    max_length  = 100000
  }
  shell {
    command = ["wc", "-l", "-w", "-m"]
    stdin   = args.text
    # UTF-8, so that -m counts characters rather than bytes and a word of
    # non-ASCII letters is a word.
    env     = { LC_ALL = "C.UTF-8" }
    timeout = "5s"
  }
  result {
    # wc -l counts newlines, so a last line without one would not count:
    # lines are counted from the text itself.
    structured = "let n = filter(split(trim(stdout), ' '), # != ''); let t = args.text; {lines: t == '' ? 0 : len(split(t, '\\n')) - (t endsWith '\\n' ? 1 : 0), words: int(n[1]), characters: int(n[2])}"
  }
}

# An HTTP API: the argument values are escaped into the path, and the JSON
# answer is shaped into what a model needs.
http_backend "github" {
  base_url = "https://api.github.com"
  headers = {
    Accept                 = "application/vnd.github+json"
    "X-GitHub-Api-Version" = "2022-11-28"
  }
  timeout = "10s"
}

tool "github_repo" {
  description = "Look up a public GitHub repository: description, stars, language, license and when it was last pushed."
  annotations {
    read_only  = true
    open_world = true
  }
  param "owner" {
    type        = "string"
    description = "The user or organization, e.g. golang"
    pattern     = "^[A-Za-z0-9-]{1,39}$"
  }
  param "repo" {
    type        = "string"
    description = "The repository name, e.g. go"
    pattern     = "^[A-Za-z0-9._-]{1,100}$"
  }
  http {
    backend = "github"
    method  = "GET"
    path    = "/repos/${args.owner}/${args.repo}"
  }
  result {
    structured = "{name: body.full_name, description: body.description, stars: body.stargazers_count, language: body.language, license: body.license?.spdx_id, pushed_at: body.pushed_at, url: body.html_url}"
  }
}

# A tool with no backend at all: its result is declared.
tool "greet" {
  description = "Greet someone by name."
  param "name" {
    type        = "string"
    description = "Who to greet"
    min_length  = 1
    max_length  = 100
  }
  result {
    content "text" {
      text = "Hello, ${args.name}! This answer came from mcpd's tools.hcl."
    }
  }
}

resource "bookshop-schema" {
  uri         = "demo://bookshop/schema.sql"
  description = "The SQL that creates and seeds the bookshop database"
  mime_type   = "application/sql"
  file        = "demo/seed.sql"
}

prompt "bookshop_report" {
  description = "Ask for a short sales report on the bookshop."
  argument "focus" {
    description = "What to focus on: genre, month, city or author"
    required    = false
    completions = ["genre", "month", "city", "author"]
  }
  message {
    role = "user"
    text = "Write a short sales report for the bookshop${args.focus == null ? "" : ", grouped by ${args.focus}"}. Use sales_summary and top_authors, and name the three best-selling books."
  }
}
