tool "greet" {
  description = ["Says", "hello."]
}
