tool "fail" {
  description = "Fails."
  result {
    error_message = "'always'"
  }
}
