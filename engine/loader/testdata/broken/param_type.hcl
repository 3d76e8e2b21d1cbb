tool "greet" {
  description = "Says hello."
  param "name" {
    type = "text"
  }
}
