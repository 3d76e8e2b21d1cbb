# Tests of tools.hcl, run with `mcpd test`: each answers from a mock of
# the github backend, so they need neither the network nor a token.

test "get_repo shapes the repository" {
  tool = "get_repo"
  args = { owner = "golang", repo = "go" }
  mock "github" {
    path = "/repos/golang/go"
    json = {
      full_name        = "golang/go"
      description      = "The Go programming language"
      stargazers_count = 125000
      language         = "Go"
      license          = { spdx_id = "BSD-3-Clause" }
      default_branch   = "master"
      pushed_at        = "2026-01-01T00:00:00Z"
      html_url         = "https://github.com/golang/go"
    }
  }
  expect_request {
    method = "GET"
  }
  assert = "structured.stars == 125000 && structured.license == 'BSD-3-Clause'"
}

test "list_issues leaves pull requests out" {
  tool = "list_issues"
  args = { owner = "golang", repo = "go", limit = 2 }
  mock "github" {
    path = "/repos/golang/go/issues"
    json = [
      { number = 1, title = "An issue", state = "open", user = { login = "ada" }, comments = 3, updated_at = "2026-01-02T00:00:00Z" },
      { number = 2, title = "A pull request", state = "open", user = { login = "bob" }, comments = 0, updated_at = "2026-01-01T00:00:00Z", pull_request = { url = "x" } },
    ]
  }
  expect_request {
    query = { state = "open", per_page = "2" }
  }
  assert = "len(structured.issues) == 1 && structured.issues[0].author == 'ada'"
}

test "search_repositories sends the query" {
  tool = "search_repositories"
  args = { query = "mcp language:go" }
  mock "github" {
    path = "/search/repositories"
    json = {
      total_count = 1
      items       = [{ full_name = "mcpd/mcpd", description = "MCP in HCL", stargazers_count = 10, language = "Go" }]
    }
  }
  expect_request {
    query = { q = "mcp language:go", sort = "stars" }
  }
  assert = "structured.total == 1 && structured.repositories[0].name == 'mcpd/mcpd'"
}
