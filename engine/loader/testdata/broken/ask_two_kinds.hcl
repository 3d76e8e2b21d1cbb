tool "t" {
  description = "d"
  ask "ok" {
    confirm = "Sure?"
    elicit  = "Why?"
  }
}
