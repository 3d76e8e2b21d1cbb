tool "t" {
  description = "d"
  ask "ok" {
    confirm = "Sure?"
    round   = 0
  }
}
