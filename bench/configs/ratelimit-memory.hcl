# bench/run.sh's shared-state section: one tool "work", rate limited in memory (no state block).
# The rate is far above the load: every call is admitted, so what is
# measured is the cost of checking the limit.

tool "work" {
  description = "Returns a fixed text."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  rate_limit {
    per_caller = "1000000/s"
    per_tool   = "1000000/s"
  }
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}
