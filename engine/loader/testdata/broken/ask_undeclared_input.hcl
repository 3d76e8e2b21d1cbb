tool "t" {
  description = "d"
  ask "ok" { confirm = "Sure?" }
  result {
    content "text" {
      text = "${inputs.nope}"
    }
  }
}
