tool "greet" {
  description = "Says hello."
  input_schema = jsonencode({ type = "string" })
}
