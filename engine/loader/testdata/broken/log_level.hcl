tool "t" {
  description = "Logs."
  log {
    level   = "verbose"
    message = "'x'"
  }
}
