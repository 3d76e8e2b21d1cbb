tool "greet" {
  description = "Says hello."
  colour      = "red"
}
