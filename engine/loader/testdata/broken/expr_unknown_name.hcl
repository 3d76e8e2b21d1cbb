tool "greet" {
  description = "Says hello."
  result {
    text = "body.name"
  }
}
