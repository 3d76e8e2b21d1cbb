tool "count" {
  description = "Counts."
  param "n" {
    type    = "integer"
    minimum = 1
    default = 0
  }
}
