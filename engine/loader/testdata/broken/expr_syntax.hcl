tool "greet" {
  description = "Says hello."
  result {
    text = "1 +"
  }
}
