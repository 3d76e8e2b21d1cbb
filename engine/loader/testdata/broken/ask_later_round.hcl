tool "t" {
  description = "d"
  ask "first" {
    elicit = "Hello ${inputs.second.name}"
    field "x" { type = "string" }
  }
  ask "second" {
    round  = 2
    elicit = "Name?"
    field "name" { type = "string" }
  }
}
