# Tests of the git tools. They run git for real, in the repository the
# tools use (GIT_REPO, or else the mcpd checkout this file is in), and
# check only what holds in any repository with at least one commit. Run with
#   mcpd test -c examples/git
# (see docs/testing.md).

test "git_log_one_commit" {
  tool         = "git_log"
  args         = { n = 1 }
  text_matches = "^[0-9a-f]{7,} \\S"
  assert       = "len(split(trim(text), '\\n')) == 1"
}

test "git_log_rejects_zero" {
  tool          = "git_log"
  args          = { n = 0 }
  is_error      = true
  text_contains = "n"
}

test "git_status_branch_line" {
  tool   = "git_status"
  assert = "structured.lines[0] startsWith '## '"
}

test "git_show_refuses_an_option" {
  tool          = "git_show"
  args          = { sha = "--output=/tmp/x" }
  is_error      = true
  text_contains = "sha"
}

test "git_show_unknown_commit" {
  tool     = "git_show"
  args     = { sha = "0000000" }
  is_error = true
}

test "git_diff_of_a_missing_path" {
  tool          = "git_diff"
  args          = { path = "no/such/path/in/this/repository" }
  text_contains = "No changes."
}

# Dry runs: git is not started; the tests check its command line. A path is
# a literal pathspec from the repository's top, wherever git runs.
test "git_diff_staged_argv" {
  tool        = "git_diff"
  args        = { path = "docs", staged = true }
  expect_argv = ["git", "diff", "--no-color", "--stat", "--patch", "--cached", "--", ":(top,literal)docs"]
}

test "git_diff_path_like_an_option_argv" {
  tool        = "git_diff"
  args        = { path = "--output=/tmp/x" }
  expect_argv = ["git", "diff", "--no-color", "--stat", "--patch", "--", ":(top,literal)--output=/tmp/x"]
}
