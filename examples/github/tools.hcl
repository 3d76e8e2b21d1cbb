# GitHub REST API tools, run with the HTTP adapter. See README.md.
#
# The token comes from the GITHUB_TOKEN environment variable when mcpd loads
# this file. Without it, the Authorization header is left out (a null value
# in a header map sends nothing) and the tools use GitHub's anonymous rate
# limit, except create_issue, which needs a token. GITHUB_API_URL points the
# tools at GitHub Enterprise Server ("https://github.example.com/api/v3") or
# at a test server.

http_backend "github" {
  base_url = env("GITHUB_API_URL", "https://api.github.com")
  headers = {
    Accept               = "application/vnd.github+json"
    X-GitHub-Api-Version = "2022-11-28"
    User-Agent           = "mcpd-github-example"
    Authorization        = env("GITHUB_TOKEN", "") != "" ? "Bearer ${env("GITHUB_TOKEN", "")}" : null
  }
  timeout = "15s"
  retry {
    attempts = 3
    backoff  = "500ms"
    on       = [502, 503, 504, "timeout", "connection"]
  }
}

tool "get_user" {
  description = "Look up a GitHub user or organization by login: name, bio, location, follower and repository counts."
  annotations {
    read_only  = true
    open_world = true
  }
  param "login" {
    type        = "string"
    description = "GitHub login, such as octocat"
    pattern     = "^[A-Za-z0-9-]{1,39}$"
  }
  http {
    backend = "github"
    method  = "GET"
    path    = "/users/${args.login}"
  }
  result {
    structured = "{login: body.login, name: body.name, type: body.type, bio: body.bio, location: body.location, followers: body.followers, public_repos: body.public_repos, url: body.html_url}"
  }
}

tool "list_repos" {
  description = "List the public repositories of a user, most recently pushed first, with their description, language and star count."
  annotations {
    read_only  = true
    open_world = true
  }
  param "login" {
    type        = "string"
    description = "GitHub login of the owner"
    pattern     = "^[A-Za-z0-9-]{1,39}$"
  }
  param "type" {
    type        = "string"
    description = "Which repositories: those the user owns, is a member of, or both"
    enum        = ["all", "owner", "member"]
    default     = "owner"
  }
  param "sort" {
    type        = "string"
    description = "Sort order"
    enum        = ["created", "updated", "pushed", "full_name"]
    default     = "pushed"
  }
  param "per_page" {
    type        = "integer"
    description = "Repositories per page"
    minimum     = 1
    maximum     = 100
    default     = 30
  }
  param "page" {
    type        = "integer"
    description = "Page number, from 1"
    minimum     = 1
    default     = 1
  }
  http {
    backend = "github"
    path    = "/users/${args.login}/repos"
    query = {
      type     = args.type
      sort     = args.sort
      per_page = args.per_page
      page     = args.page
    }
  }
  result {
    structured = "{repos: map(body, { {name: .full_name, description: .description, language: .language, stars: .stargazers_count, fork: .fork, pushed_at: .pushed_at, url: .html_url} })}"
  }
}

tool "search_issues" {
  description = "Search issues and pull requests across GitHub with GitHub's search syntax, e.g. 'repo:golang/go is:open label:NeedsFix http2'."
  annotations {
    read_only  = true
    open_world = true
  }
  param "q" {
    type        = "string"
    description = "Search query in GitHub's issue search syntax"
  }
  param "sort" {
    type        = "string"
    description = "Sort field; best match when not given"
    enum        = ["comments", "reactions", "created", "updated"]
    required    = false
  }
  param "order" {
    type        = "string"
    description = "Sort direction"
    enum        = ["asc", "desc"]
    default     = "desc"
  }
  param "per_page" {
    type        = "integer"
    description = "Results per page"
    minimum     = 1
    maximum     = 100
    default     = 20
  }
  http {
    backend = "github"
    path    = "/search/issues"
    # sort is left out of the request when it is not given.
    query = {
      q        = args.q
      sort     = args.sort
      order    = args.order
      per_page = args.per_page
    }
  }
  result {
    structured = "{total: body.total_count, incomplete: body.incomplete_results, issues: map(body.items, { {number: .number, title: .title, state: .state, is_pull_request: .pull_request != nil, author: .user.login, comments: .comments, url: .html_url} })}"
  }
}

tool "create_issue" {
  description = "Open an issue in a repository. Needs GITHUB_TOKEN with permission to create issues there."
  annotations {
    read_only   = false
    destructive = false
    idempotent  = false
    open_world  = true
  }
  param "owner" {
    type        = "string"
    description = "Owner of the repository"
    pattern     = "^[A-Za-z0-9-]{1,39}$"
  }
  param "repo" {
    type        = "string"
    description = "Name of the repository"
    pattern     = "^[A-Za-z0-9._-]{1,100}$"
  }
  param "title" {
    type        = "string"
    description = "Issue title"
  }
  param "body" {
    type        = "string"
    description = "Issue text, in Markdown"
    required    = false
  }
  param "labels" {
    type        = "array"
    description = "Labels to apply"
    items       = { type = "string" }
    required    = false
  }
  http {
    backend = "github"
    method  = "POST"
    path    = "/repos/${args.owner}/${args.repo}/issues"
    # Sent as JSON; body and labels are left out when not given.
    body = {
      title  = args.title
      body   = args.body
      labels = args.labels
    }
    expect_status = [201]
  }
  result {
    structured = "{number: body.number, url: body.html_url, state: body.state}"
    text       = "\"Opened issue #\" + string(body.number) + \": \" + body.html_url"
  }
}
