# Read-only git tools over one repository, run with the shell adapter.
#
# The repository is the one named by the GIT_REPO environment variable when
# mcpd loads this file, or else the directory of this file (which, inside
# the mcpd checkout, is the mcpd repository itself). See README.md.
#
# Every tool runs git directly, without a shell, in an environment holding
# only what is declared here plus PATH=/usr/local/bin:/usr/bin:/bin:
#   HOME                 git reads ~/.gitconfig (safe.directory, aliases)
#   GIT_TERMINAL_PROMPT  never wait for credentials on a terminal
#   GIT_OPTIONAL_LOCKS   do not take index.lock for read-only commands, so
#                        the tools never get in the way of a concurrent commit
#   GIT_PAGER, PAGER     never page (git does not page without a terminal,
#                        but a user config may say otherwise)

tool "git_log" {
  description = "Recent commits of the repository, newest first: one line per commit with its abbreviated hash and subject."
  annotations {
    read_only = true
  }
  param "n" {
    type        = "integer"
    description = "How many commits"
    default     = 10
    minimum     = 1
    maximum     = 100
  }
  shell {
    command = ["git", "log", "--oneline", "--no-decorate", "--no-color", "-n", args.n]
    dir     = env("GIT_REPO", ".")
    env = {
      HOME                = env("HOME", "/tmp")
      GIT_TERMINAL_PROMPT = "0"
      GIT_OPTIONAL_LOCKS  = "0"
      GIT_PAGER           = "cat"
      PAGER               = "cat"
    }
    timeout = "10s"
  }
}

tool "git_show" {
  description = "One commit: author, date, message, the files it changed and its patch."
  annotations {
    read_only = true
  }
  param "sha" {
    type        = "string"
    description = "The commit's hash, full or abbreviated (at least 7 hex digits)"
    pattern     = "^[0-9a-f]{7,40}$"
  }
  shell {
    # The pattern already rules out options; --end-of-options makes sure
    # that what follows is read as a revision, never as an option, and the
    # final "--" that it is never read as a path.
    command = ["git", "show", "--format=fuller", "--stat", "--patch", "--no-color", "--end-of-options", args.sha, "--"]
    dir     = env("GIT_REPO", ".")
    env = {
      HOME                = env("HOME", "/tmp")
      GIT_TERMINAL_PROMPT = "0"
      GIT_OPTIONAL_LOCKS  = "0"
      GIT_PAGER           = "cat"
      PAGER               = "cat"
    }
    timeout          = "10s"
    max_output_bytes = 262144
  }
}

tool "git_status" {
  description = "The working tree's status in git's stable porcelain format: first the branch line (## branch...upstream [ahead N, behind M]), then one line per changed file (XY path), where X is the index and Y the working tree status."
  annotations {
    read_only = true
  }
  shell {
    command = ["git", "status", "--porcelain=v1", "--branch", "--untracked-files=normal"]
    dir     = env("GIT_REPO", ".")
    env = {
      HOME                = env("HOME", "/tmp")
      GIT_TERMINAL_PROMPT = "0"
      GIT_OPTIONAL_LOCKS  = "0"
      GIT_PAGER           = "cat"
      PAGER               = "cat"
    }
    timeout = "10s"
    # Structured content: {"lines": [...], "truncated": false}.
    output = "lines"
  }
}

tool "git_diff" {
  description = "Uncommitted changes as a unified diff, limited to one path (a file or a directory, relative to the repository root). With staged = true, the changes staged for the next commit instead of those not yet staged."
  annotations {
    read_only = true
  }
  param "path" {
    type        = "string"
    description = "File or directory to diff, relative to the repository root; \".\" for everything"
    default     = "."
  }
  param "staged" {
    type        = "boolean"
    description = "Diff the staged changes (git diff --cached) instead of the unstaged ones"
    default     = false
  }
  shell {
    # A list element that is a list adds zero or more arguments. The "--"
    # makes git read args.path as a path even if it starts with "-". The
    # pathspec magic :(top) makes the path relative to the repository root
    # whatever the directory git runs in (this file's directory when
    # GIT_REPO is unset: a plain "." would diff only examples/git and answer
    # "No changes." while the rest of the tree is modified); literal keeps
    # the model's path a path, not a glob or more magic.
    command = ["git", "diff", "--no-color", "--stat", "--patch", args.staged ? ["--cached"] : [], "--",
    contains([".", "./", ""], args.path) ? ":(top)" : ":(top,literal)${trimprefix(args.path, "./")}"]
    dir = env("GIT_REPO", ".")
    env = {
      HOME                = env("HOME", "/tmp")
      GIT_TERMINAL_PROMPT = "0"
      GIT_OPTIONAL_LOCKS  = "0"
      GIT_PAGER           = "cat"
      PAGER               = "cat"
    }
    timeout          = "10s"
    max_output_bytes = 262144
  }
  # The result block sees the adapter's variables (stdout, stderr,
  # exit_code, lines, stdout_truncated, stderr_truncated); an empty diff
  # would otherwise be an empty result.
  result {
    text = "stdout == '' ? 'No changes.' : stdout + (stdout_truncated ? '\\n[diff cut at 256 KiB: ask for a narrower path]' : '')"
  }
}
