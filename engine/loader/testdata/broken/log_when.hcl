tool "t" {
  description = "Logs."
  log {
    when    = "during"
    message = "'x'"
  }
}
