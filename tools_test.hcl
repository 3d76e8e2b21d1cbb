# Tests of tools.hcl, run with `mcpd test` (see docs/testing.md). They need
# no network: the GitHub tool's backend is mocked.

test "list_books_by_genre" {
  tool = "list_books"
  args = { genre = "poetry", limit = 3 }
  assert = [
    "len(fromJSON(text)) > 0",
    "all(fromJSON(text), .genre == 'poetry')",
  ]
}

test "search_books_finds_an_author" {
  tool          = "search_books"
  args          = { text = "tolkien" }
  text_contains = "Tolkien"
}

test "search_books_rejects_one_letter" {
  tool          = "search_books"
  args          = { text = "a" }
  is_error      = true
  text_contains = "text"
}

test "get_book_unknown_id" {
  tool          = "get_book"
  args          = { id = 99999 }
  is_error      = true
  text_contains = "There is no book with id 99999"
}

test "top_authors_limit" {
  tool   = "top_authors"
  args   = { limit = 2 }
  assert = "len(fromJSON(text)) == 2"
}

test "word_count" {
  tool   = "word_count"
  args   = { text = "one two three\nfour\n" }
  assert = "structured.lines == 2 && structured.words == 4 && structured.characters == 19"
}

test "greet" {
  tool          = "greet"
  args          = { name = "Ada" }
  text_contains = "Hello, Ada!"
}

test "github_repo_mocked" {
  tool = "github_repo"
  args = { owner = "golang", repo = "go" }
  mock "github" {
    method = "GET"
    path   = "/repos/golang/go"
    json = {
      full_name        = "golang/go"
      description      = "The Go programming language"
      stargazers_count = 125000
      language         = "Go"
      license          = { spdx_id = "BSD-3-Clause" }
      pushed_at        = "2026-11-30T12:00:00Z"
      html_url         = "https://github.com/golang/go"
    }
  }
  expect_request {
    method  = "GET"
    path    = "/repos/golang/go"
    headers = { Accept = "application/vnd.github+json" }
  }
  assert = [
    "structured.name == 'golang/go'",
    "structured.stars == 125000",
    "structured.license == 'BSD-3-Clause'",
  ]
}

test "github_repo_not_found" {
  tool = "github_repo"
  args = { owner = "nobody", repo = "nothing" }
  mock "github" {
    status = 404
    json   = { message = "Not Found" }
  }
  is_error = true
}

test "schema_resource" {
  resource = "demo://bookshop/schema.sql"
  assert   = "len(content) == 1 && content[0].mimeType == 'application/sql'"
}

test "bookshop_report_prompt" {
  prompt        = "bookshop_report"
  args          = { focus = "city" }
  text_contains = "grouped by city"
}

# A dry run: word_count is not run; the test checks the process it would
# start and what it would read on stdin.
test "word_count_argv" {
  tool         = "word_count"
  args         = { text = "hello world" }
  expect_argv  = ["wc", "-l", "-w", "-m"]
  expect_stdin = "hello world"
}
