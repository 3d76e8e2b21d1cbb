tool "greet" {
  description = "Says hello."
  param "name" {
    type = "string"
  }
  result {
    content "text" {
      text = "Hello, ${args.nope}!"
    }
  }
}
