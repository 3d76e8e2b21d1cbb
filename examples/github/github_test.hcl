# Offline tests of the GitHub tools: every test mocks the github backend,
# so they need neither the network nor a token. Run with
#   mcpd test -c examples/github
# (see docs/testing.md).

test "get_user" {
  tool = "get_user"
  args = { login = "octocat" }
  mock "github" {
    method = "GET"
    path   = "/users/octocat"
    json = {
      login        = "octocat"
      name         = "The Octocat"
      type         = "User"
      bio          = null
      location     = "San Francisco"
      followers    = 21000
      public_repos = 8
      html_url     = "https://github.com/octocat"
    }
  }
  expect_request {
    method = "GET"
    path   = "/users/octocat"
    headers = {
      Accept               = "application/vnd.github+json"
      X-GitHub-Api-Version = "2022-11-28"
      User-Agent           = "mcpd-github-example"
    }
  }
  assert = [
    "structured.name == 'The Octocat'",
    "structured.public_repos == 8",
    "structured.url == 'https://github.com/octocat'",
  ]
}

test "get_user_rejects_a_bad_login" {
  tool          = "get_user"
  args          = { login = "not a login" }
  is_error      = true
  text_contains = "login"
}

test "get_user_not_found" {
  tool = "get_user"
  args = { login = "nobody-here" }
  mock "github" {
    path   = "/users/nobody-here"
    status = 404
    json   = { message = "Not Found" }
  }
  is_error      = true
  text_contains = "404"
}

test "list_repos_sends_defaults" {
  tool = "list_repos"
  args = { login = "octocat", per_page = 2 }
  mock "github" {
    path      = "/users/octocat/repos"
    body_file = "testdata/repos.json"
    headers   = { Content-Type = "application/json" }
  }
  expect_request {
    path  = "/users/octocat/repos"
    query = { type = "owner", sort = "pushed", per_page = "2", page = "1" }
  }
  assert = [
    "len(structured.repos) == 2",
    "structured.repos[1].name == 'octocat/Spoon-Knife'",
    "structured.repos[1].stars == 12800",
  ]
}

test "search_issues_leaves_out_sort" {
  tool = "search_issues"
  args = { q = "repo:golang/go is:open http2", per_page = 1 }
  mock "github" {
    path = "/search/issues"
    json = {
      total_count        = 1
      incomplete_results = false
      items = [{
        number       = 42
        title        = "net/http: http2 stalls"
        state        = "open"
        pull_request = null
        user         = { login = "gopher" }
        comments     = 3
        html_url     = "https://github.com/golang/go/issues/42"
      }]
    }
  }
  expect_request {
    query = { q = "repo:golang/go is:open http2", order = "desc", per_page = "1" }
  }
  assert = [
    "structured.total == 1",
    "structured.issues[0].author == 'gopher'",
    "structured.issues[0].is_pull_request == false",
  ]
}

test "create_issue_posts_json" {
  tool = "create_issue"
  args = { owner = "octocat", repo = "Hello-World", title = "Found a bug", labels = ["bug"] }
  mock "github" {
    method = "POST"
    path   = "/repos/octocat/Hello-World/issues"
    status = 201
    json   = { number = 7, html_url = "https://github.com/octocat/Hello-World/issues/7", state = "open" }
  }
  expect_request {
    method        = "POST"
    path          = "/repos/octocat/Hello-World/issues"
    headers       = { Content-Type = "application/json" }
    body_contains = "\"title\":\"Found a bug\""
  }
  text_contains = "Opened issue #7"
  assert        = "structured.number == 7"
}

test "create_issue_unexpected_status" {
  tool = "create_issue"
  args = { owner = "octocat", repo = "Hello-World", title = "Found a bug" }
  mock "github" {
    method = "POST"
    status = 200
    json   = { number = 7 }
  }
  is_error = true
}
