# __PROJECT__: GitHub's REST API served as MCP tools by mcpd.
#
# GITHUB_TOKEN, when set where mcpd runs, is sent as a bearer token (a
# fine-grained token with read access to the repositories you need);
# without it the tools use GitHub's anonymous rate limit (60 requests an
# hour). GITHUB_API_URL points them at GitHub Enterprise Server
# (https://github.example.com/api/v3).

server {
  name         = "__PROJECT__"
  instructions = "GitHub: get_repo describes a repository, list_issues lists its issues and search_repositories finds repositories."
}

http_backend "github" {
  base_url = env("GITHUB_API_URL", "https://api.github.com")
  headers = {
    Accept               = "application/vnd.github+json"
    X-GitHub-Api-Version = "2022-11-28"
    Authorization        = env("GITHUB_TOKEN", "") != "" ? "Bearer ${env("GITHUB_TOKEN", "")}" : null
  }
  timeout = "15s"
  retry {
    attempts = 3
    backoff  = "500ms"
    on       = [502, 503, 504, "timeout", "connection"]
  }
}

tool "get_repo" {
  description = "Describe a GitHub repository: description, stars, main language, license, default branch and when it was last pushed."
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
    description = "The repository's name, e.g. go"
    pattern     = "^[A-Za-z0-9._-]{1,100}$"
  }
  http {
    backend = "github"
    method  = "GET"
    path    = "/repos/${args.owner}/${args.repo}"
  }
  result {
    structured = "{name: body.full_name, description: body.description, stars: body.stargazers_count, language: body.language, license: body.license?.spdx_id, default_branch: body.default_branch, pushed_at: body.pushed_at, url: body.html_url}"
  }
}

tool "list_issues" {
  description = "List a repository's issues (pull requests left out), most recently updated first."
  annotations {
    read_only  = true
    open_world = true
  }
  param "owner" {
    type        = "string"
    description = "The user or organization"
    pattern     = "^[A-Za-z0-9-]{1,39}$"
  }
  param "repo" {
    type        = "string"
    description = "The repository's name"
    pattern     = "^[A-Za-z0-9._-]{1,100}$"
  }
  param "state" {
    type        = "string"
    description = "Which issues"
    enum        = ["open", "closed", "all"]
    default     = "open"
  }
  param "limit" {
    type        = "integer"
    description = "How many issues at most"
    minimum     = 1
    maximum     = 100
    default     = 20
  }
  http {
    backend = "github"
    method  = "GET"
    path    = "/repos/${args.owner}/${args.repo}/issues"
    query = {
      state     = args.state
      per_page  = args.limit
      sort      = "updated"
      direction = "desc"
    }
  }
  result {
    structured = "{issues: map(filter(body, .pull_request == nil), { {number: .number, title: .title, state: .state, author: .user.login, comments: .comments, updated_at: .updated_at} })}"
  }
}

tool "search_repositories" {
  description = "Search GitHub's repositories with GitHub's search syntax (e.g. 'mcp language:go stars:>100'), most stars first."
  annotations {
    read_only  = true
    open_world = true
  }
  param "query" {
    type        = "string"
    description = "The search, in GitHub's repository search syntax"
    min_length  = 1
    max_length  = 256
  }
  param "limit" {
    type        = "integer"
    description = "How many repositories at most"
    minimum     = 1
    maximum     = 50
    default     = 10
  }
  http {
    backend = "github"
    method  = "GET"
    path    = "/search/repositories"
    query = {
      q        = args.query
      sort     = "stars"
      per_page = args.limit
    }
  }
  result {
    structured = "{total: body.total_count, repositories: map(body.items, { {name: .full_name, description: .description, stars: .stargazers_count, language: .language} })}"
  }
}
