tool "greet" {
  description = "Says hello."
  input_schema = "[1, 2]"
}
