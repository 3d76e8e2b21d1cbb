tool "t" {
  description = "x"
  param "p" {
    allow_slash = true
  }
}
