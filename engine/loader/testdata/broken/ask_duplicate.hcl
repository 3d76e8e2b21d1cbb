tool "t" {
  description = "d"
  ask "ok" { confirm = "Sure?" }
  ask "ok" { confirm = "Really?" }
}
