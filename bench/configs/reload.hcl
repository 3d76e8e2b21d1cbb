# The reload benchmark (loadgen -mode reload) rewrites a copy of this file,
# replacing {rev} with a new number each time, and times the
# tools/list_changed notification that follows.

tool "static" {
  description = "Returns a fixed text (revision {rev})."
  result {
    content "text" {
      text = "This is a static response."
    }
  }
}
