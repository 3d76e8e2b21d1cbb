tool "greet" {
  description = "Says hello."
  param "name" {
    type = "string"
  }
  result {
    text = "'Hello, ' + args.nope"
  }
}
