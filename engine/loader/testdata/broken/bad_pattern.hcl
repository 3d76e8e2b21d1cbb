tool "greet" {
  description = "Says hello."
  param "name" {
    pattern = "^[a-z+$"
  }
}
