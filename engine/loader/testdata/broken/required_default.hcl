tool "greet" {
  description = "Says hello."
  param "name" {
    type     = "string"
    required = true
    default  = "world"
  }
}
