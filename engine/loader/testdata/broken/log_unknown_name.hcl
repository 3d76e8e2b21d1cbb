tool "t" {
  description = "Logs."
  param "n" {
    type = "integer"
  }
  log {
    when    = "before"
    message = "'n=' + string(args.n) + string(status)"
  }
}
