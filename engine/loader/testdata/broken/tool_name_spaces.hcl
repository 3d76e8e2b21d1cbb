tool "say hello" {
  description = "Says hello."
}
