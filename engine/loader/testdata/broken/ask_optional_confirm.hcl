tool "t" {
  description = "d"
  ask "ok" {
    confirm  = "Sure?"
    optional = true
  }
}
