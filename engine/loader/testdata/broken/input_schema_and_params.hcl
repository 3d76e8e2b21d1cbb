tool "greet" {
  description = "Says hello."
  param "name" {
    type = "string"
  }
  input_schema = jsonencode({ type = "object" })
}
