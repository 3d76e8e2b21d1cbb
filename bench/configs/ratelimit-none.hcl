# bench/run.sh's shared-state section: one tool "work", without limits.
# The rate is far above the load: every call is admitted, so what is
# measured is the cost of checking the limit.

tool "work" {
  description = "Returns a fixed text."
  param "name" {
    type       = "string"
    max_length = 64
    required   = false
  }
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}
